"""The text both front ends show, the command line (``cli/``) and the app (``tui/``), so that each says the same
thing the same way: figures that never break from their units (:mod:`.figure_wrap`), kernel labels and families
(:mod:`.kernel_labels`), names cut to a width that stay distinct (:mod:`.name_fitting`), and the ncu verdict's
renderables and the launch-spread table (:mod:`.ncu_verdict`).

Rich is allowed here, Textual never (an import-linter contract in ``pyproject.toml``): the command line draws these
without the app, on machines where Textual may be missing. Nothing here prints; the front ends do. Below ``cli/``
and ``tui/``, above the analyses and ``report/`` (the JSON documents, which take no Rich). This file imports
nothing, so that importing one module of the package imports only what that module needs."""

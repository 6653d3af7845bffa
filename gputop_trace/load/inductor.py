"""``--inductor-dir``: attach torch.compile's debug output (the kernels of its ``output_code.py`` files) to a
loaded trace, so the kernel table, the details pane and the JSON can say which graph nodes and source lines each
generated kernel stands for."""

from __future__ import annotations

from gputop_trace.model.inductor import with_inductor_sources
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.inductor_debug import read_inductor_dir


def attach_inductor_dir(trace: Trace, folder: str | None) -> Trace:
    """``trace`` carrying the kernels of the debug output in ``folder`` (``trace`` itself when None). Raises
    :class:`~gputop_trace.errors.TraceError` with a clear message when the folder holds no ``output_code.py``."""
    if not folder:
        return trace
    return with_inductor_sources(trace, read_inductor_dir(folder))

"""What torch.compile's debug output (``TORCH_COMPILE_DEBUG=1`` / ``TORCH_LOGS=output_code``) says about each
generated kernel (:class:`InductorSource`), and how a trace carries it: a JSON-able table in
``TraceMeta.properties`` (:func:`with_inductor_sources`, :func:`inductor_sources`), attached after loading
(``--inductor-dir``), so every consumer of the trace reads the same table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from gputop_trace.model.trace import Trace

#: ``TraceMeta.properties`` key of the table: kernel name → the list of its :class:`InductorSource` records
INDUCTOR_SOURCES = "inductor_sources"


@dataclass(frozen=True)
class InductorSource:
    """One kernel of one generated module (``output_code.py``).

    ``kernel`` its name; ``graph`` the module's AOT id (``0_inference``) or folder; ``path`` the output_code.py
    file and ``line`` the 1-based line where the kernel is defined (or first launched); ``kernel_hash`` the stem
    of its ``# kernel path:`` file (``""`` unknown); ``source_nodes`` the pre-grad nodes (``input_2``) and
    ``aten_ops`` the ATen operators (``aten.gelu``) of its comments; ``post_grad_nodes`` the post-grad graph
    nodes fused into it (``mul_2``, ``var_mean``); ``source_lines`` the user's lines those nodes come from
    (``model.py:201 in forward: x = self.a2(self.a(x))``)."""

    kernel: str
    graph: str
    path: str
    line: int
    kernel_hash: str = ""
    source_nodes: tuple[str, ...] = ()
    aten_ops: tuple[str, ...] = ()
    post_grad_nodes: tuple[str, ...] = ()
    source_lines: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON values (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @staticmethod
    def from_json(d: dict[str, Any]) -> InductorSource:
        """The record :meth:`to_json` wrote."""
        fields = {f.name: f for f in dataclasses.fields(InductorSource)}
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if k in fields:
                kw[k] = tuple(str(x) for x in v) if isinstance(v, list) else v
        return InductorSource(**kw)


def with_inductor_sources(trace: Trace, sources: list[InductorSource]) -> Trace:
    """A copy of ``trace`` carrying ``sources`` (by kernel name) in its metadata; the columns are shared."""
    table: dict[str, list[dict[str, Any]]] = {}
    for s in sources:
        table.setdefault(s.kernel, []).append(s.to_json())
    return trace.with_meta(properties={**trace.meta.properties, INDUCTOR_SOURCES: table})


def inductor_sources(trace: Trace) -> dict[str, list[InductorSource]]:
    """Kernel name → its :class:`InductorSource` records (several when recompiled graphs define the same name);
    empty unless the trace was given an Inductor debug folder."""
    table = trace.meta.properties.get(INDUCTOR_SOURCES)
    if not isinstance(table, dict):
        return {}
    return {str(k): [InductorSource.from_json(d) for d in v if isinstance(d, dict)] for k, v in table.items()}

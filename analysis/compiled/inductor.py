"""What a trace knows about one torch.compile (Inductor) kernel (:class:`InductorInfo`): its name decoded, the
launcher op's ``kernel_file`` / ``kernel_hash`` / ``kernel_backend`` args (Kineto), and the post-grad nodes and
source lines of the ``--inductor-dir`` debug output; and the labels the kernel table groups by."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gputop_trace.model.inductor import InductorSource, inductor_sources
from gputop_trace.model.kernel_names import InductorKernel, inductor_kernel, normalized_kernel_name
from gputop_trace.model.trace import Trace, inductor_launch_args

#: group labels of kernels the Inductor output says nothing about
NOT_INDUCTOR = "(not an Inductor kernel)"
NOT_IN_OUTPUT = "(not in the Inductor output)"


@dataclass(frozen=True)
class InductorInfo:
    """One kernel name's torch.compile facts: ``decoded`` its name (None for a kernel Inductor did not name, such
    as a cuBLAS GEMM it called), ``launch_args`` the distinct launcher-op args (``kernel_file``, ``kernel_hash``,
    ``kernel_backend``), ``sources`` its records in the ``--inductor-dir`` output (one per generated module)."""

    decoded: InductorKernel | None
    launch_args: tuple[dict[str, str], ...] = ()
    sources: tuple[InductorSource, ...] = ()

    @property
    def post_grad_nodes(self) -> tuple[str, ...]:
        """The post-grad nodes of every record, first-seen order, each once."""
        return _union(s.post_grad_nodes for s in self.sources)

    @property
    def source_lines(self) -> tuple[str, ...]:
        """The user's source lines of every record, each once."""
        return _union(s.source_lines for s in self.sources)

    def to_json(self) -> dict[str, Any]:
        """The JSON-contract ``inductor`` object of a kernel row."""
        d = self.decoded
        return {
            "kind": d.kind if d else None,
            "fused_ops": list(d.ops) if d else [],
            "index": d.index if d else None,
            "launch_args": [dict(a) for a in self.launch_args],
            "graphs": [s.graph for s in self.sources],
            "source_nodes": list(_union(s.source_nodes for s in self.sources)),
            "post_grad_nodes": list(self.post_grad_nodes),
            "source_lines": list(self.source_lines),
            "output_code": [f"{s.path}:{s.line}" for s in self.sources],
        }


def _union(parts: Any) -> tuple[str, ...]:
    out: list[str] = []
    for p in parts:
        for x in p:
            if x not in out:
                out.append(x)
    return tuple(out)


class InductorLookup:
    """:class:`InductorInfo` by kernel name for one trace (the trace's tables are read once)."""

    def __init__(self, trace: Trace) -> None:
        self._args = inductor_launch_args(trace)
        self._sources = inductor_sources(trace)
        self.has_sources = bool(self._sources)
        self._cache: dict[str, InductorInfo | None] = {}

    def info(self, name: str) -> InductorInfo | None:
        """The facts about kernel ``name``; None when nothing in the trace speaks of it."""
        if name not in self._cache:
            self._cache[name] = self._info(name)
        return self._cache[name]

    def _info(self, name: str) -> InductorInfo | None:
        decoded = _decode(name)
        core = normalized_kernel_name(name)
        args = tuple(self._args.get(name, ()) or self._args.get(core, ()))
        sources = tuple(self._sources.get(name, ()) or self._sources.get(core, ()))
        if decoded is None and not args and not sources:
            return None
        return InductorInfo(decoded=decoded, launch_args=args, sources=sources)

    def node_label(self, name: str) -> str:
        """The kernel's post-grad nodes as one group label (``var_mean, mul_2, …``)."""
        info = self.info(name)
        if info is None or (info.decoded is None and not info.sources):
            return NOT_INDUCTOR
        nodes = info.post_grad_nodes
        return ", ".join(nodes) if nodes else NOT_IN_OUTPUT

    def source_label(self, name: str) -> str:
        """The kernel's source lines as one group label (``model.py:201 in forward: …``)."""
        info = self.info(name)
        if info is None or (info.decoded is None and not info.sources):
            return NOT_INDUCTOR
        lines = info.source_lines
        return "; ".join(lines) if lines else NOT_IN_OUTPUT


@lru_cache(maxsize=4096)
def _decode(name: str) -> InductorKernel | None:
    return inductor_kernel(name)

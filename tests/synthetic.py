"""Small hand-built traces for exact edge cases of the analyses (times in ns, relative 0 = file time 0)."""

from __future__ import annotations

from typing import Any

from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import CopyKind, FlowKind, Kind, LaneKind, MemKind
from gputop_trace.model.tables import Lane, TraceMeta
from gputop_trace.model.trace import Trace


class Synth:
    """Builds a :class:`Trace` event by event. Lanes are created on first use."""

    def __init__(self, fmt: str = "test") -> None:
        self.b = TraceBuilder(fmt)
        self._kernels: list[dict[str, Any]] = []
        self._copies: list[dict[str, Any]] = []
        self._flows: list[tuple[int, int]] = []
        self._corr = 0

    # lanes ----------------------------------------------------------------------------------------------
    def thread(self, tid: int = 1, pid: int = 1, rank: int = 0) -> int:
        """A CPU-thread lane."""
        return self.b.lane(
            ("cpu", rank, pid, tid),
            Lane(kind=LaneKind.CPU_THREAD, name=f"thread {tid}", rank=rank, pid=pid, tid=tid),
        )

    def stream(self, stream: int = 7, device: int = 0, pid: int = 1, rank: int = 0) -> int:
        """A GPU-stream lane."""
        return self.b.lane(
            ("gpu", rank, device, pid, stream),
            Lane(kind=LaneKind.GPU_STREAM, name=f"stream {stream}", rank=rank, pid=pid, device=device, stream=stream),
        )

    def lane(self, key: Any, lane: Lane) -> int:
        """Any other lane."""
        return self.b.lane(key, lane)

    # events ---------------------------------------------------------------------------------------------
    def ev(self, lane: int, kind: Kind, name: str, start: int, dur: int) -> int:
        """One event; returns its provisional index."""
        idx = self.b.add_events(
            start_ns=[start], dur_ns=[dur], kind=[int(kind)], lane=[lane], name=[self.b.names.intern(name)]
        )
        return int(idx[0])

    def launch(self, thread: int, start: int, dur: int, name: str = "cudaLaunchKernel") -> int:
        """A CUDA API call on a thread."""
        return self.ev(thread, Kind.API, name, start, dur)

    def kernel(
        self,
        stream: int,
        start: int,
        dur: int,
        name: str = "kernel",
        *,
        launch: int | None = None,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 0,
    ) -> int:
        """A kernel, optionally linked to the API call ``launch`` (an index from :meth:`launch`)."""
        k = self.ev(stream, Kind.KERNEL, name, start, dur)
        self._kernels.append({"event": k, "grid": grid, "block": block, "registers": registers})
        if launch is not None:
            self._flows.append((launch, k))
        return k

    def copy(
        self,
        stream: int,
        start: int,
        dur: int,
        *,
        direction: CopyKind = CopyKind.HTOD,
        src: MemKind = MemKind.PINNED,
        dst: MemKind = MemKind.DEVICE,
        nbytes: int = 1 << 20,
        launch: int | None = None,
        memset: bool = False,
        uvm: bool = False,
        is_async: int = -1,
        name: str | None = None,
    ) -> int:
        """A memcpy (or memset / UVM migration) with its side-table row."""
        kind = Kind.MEMSET if memset else (Kind.UVM if uvm else Kind.MEMCPY)
        label = name or ("Memset" if memset else f"Memcpy {CopyKind(direction).name}")
        c = self.ev(stream, kind, label, start, dur)
        self._copies.append(
            {
                "event": c,
                "bytes": nbytes,
                "direction": 0 if memset else int(direction),
                "src_kind": 0 if memset else int(src),
                "dst_kind": int(dst),
                "is_async": is_async,
            }
        )
        if launch is not None:
            self._flows.append((launch, c))
        return c

    def build(self) -> Trace:
        """Freeze into a trace whose relative 0 is time 0."""
        if self._kernels:
            self.b.add_kernels(
                event=[k["event"] for k in self._kernels],
                grid=[k["grid"] for k in self._kernels],
                block=[k["block"] for k in self._kernels],
                registers=[k["registers"] for k in self._kernels],
            )
        if self._copies:
            self.b.add_copies(**{key: [c[key] for c in self._copies] for key in self._copies[0]})
        if self._flows:
            self.b.add_flows([f[0] for f in self._flows], [f[1] for f in self._flows], FlowKind.LAUNCH)
        return self.b.build(TraceMeta(format="test"), t0_ns=0)

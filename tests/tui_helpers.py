"""Shared pieces of the app tests: a small synthetic trace whose cells can be worked out by hand, and helpers
that start the app headless and wait until it has loaded (and analysed) a trace."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import numpy as np

from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import CopyKind, FlowKind, Kind, LaneKind, MemKind
from gputop_trace.model.tables import GpuInfo, Lane, TraceMeta
from gputop_trace.model.trace import Trace
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.widgets.timeline import Timeline

T = TypeVar("T")
P = ParamSpec("P")

MARKUP_NAME = "[bold red]x[/]"


def synthetic_trace(*, kernel0: str = "sgemm_big") -> Trace:
    """One GPU stream and one CPU thread over [0, 1000) ns.

    stream 7:  kernel0 [0, 300) · vectorized_elementwise_kernel [300, 400) · ten 5 ns ``tiny`` kernels every
               10 ns from 600 · a 4 KiB pageable HtoD copy [800, 900)
    thread 1:  range step [0, 1000) › aten::mm [0, 290) › cudaLaunchKernel [0, 3) (launches kernel0);
               cudaLaunchKernel [295, 298) (launches the elementwise kernel); cudaMemcpyAsync [700, 710) (the copy)
    """
    b = TraceBuilder("kineto")
    gpu = b.lane(
        "gpu", Lane(kind=LaneKind.GPU_STREAM, name="stream 7", device=0, stream=7, process_name="GPU 0", sort_key=(1,))
    )
    cpu = b.lane(
        "cpu",
        Lane(
            kind=LaneKind.CPU_THREAD,
            name="thread 1 (python)",
            pid=1,
            tid=1,
            process_name="python",
            sort_key=(0,),
        ),
    )
    n = b.names.intern
    k = b.add_events(
        start_ns=[0, 300, *range(600, 700, 10)],
        dur_ns=[300, 100, *([5] * 10)],
        kind=Kind.KERNEL,
        lane=gpu,
        name=[n(kernel0), n("vectorized_elementwise_kernel"), *([n("tiny")] * 10)],
        corr=[1, 2, *range(10, 20)],
    )
    copy = b.add_events(start_ns=[800], dur_ns=[100], kind=Kind.MEMCPY, lane=gpu, name=n("Memcpy HtoD"), corr=[3])
    cpu_ev = b.add_events(
        start_ns=[0, 0, 0, 295, 700],
        dur_ns=[1000, 290, 3, 3, 10],
        kind=[Kind.RANGE, Kind.CPU_OP, Kind.API, Kind.API, Kind.API],
        lane=cpu,
        name=[n("step"), n("aten::mm"), n("cudaLaunchKernel"), n("cudaLaunchKernel"), n("cudaMemcpyAsync")],
        corr=[-1, -1, 1, 2, 3],
    )
    b.add_kernels(
        event=k[:2],
        grid=[[132, 1, 1], [64, 1, 1]],
        block=[[256, 1, 1], [128, 1, 1]],
        registers=[128, 32],
        shared_static=[49152, 0],
    )
    b.add_copies(
        event=copy,
        bytes=[4096],
        direction=[int(CopyKind.HTOD)],
        src_kind=[int(MemKind.PAGEABLE)],
        dst_kind=[int(MemKind.DEVICE)],
        is_async=[1],
    )
    b.add_flows(np.array([cpu_ev[2], cpu_ev[3], cpu_ev[4]]), np.array([k[0], k[1], copy[0]]), FlowKind.LAUNCH)
    meta = TraceMeta(format="kineto", source=("synthetic.json",), producer="test", gpus=(GpuInfo(0, "NVIDIA H200"),))
    return b.build(meta, t0_ns=0)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run an async test body (no async pytest plugin needed)."""
    return asyncio.run(coro)


def app_test(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """An app test written as ``async def`` (it starts the app with ``run_test`` and drives it with the pilot),
    run in an event loop of its own: the set-up every Pilot test shares, without an async pytest plugin. Fixtures
    and ``parametrize`` see the test's own arguments."""

    @functools.wraps(test)
    def run_in_loop(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run_in_loop


async def wait_until(pilot: Any, cond: Callable[[], bool], *, timeout: float = 20.0) -> None:
    """Let the app run until ``cond()`` holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


async def wait_loaded(app: GputopApp, pilot: Any, *, analyses: bool = True) -> MainScreen:
    """Wait until the main screen is up (and the analyses are done when ``analyses``)."""
    await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.is_mounted)
    if analyses and app.run_analyses_after_load:
        await wait_until(pilot, lambda: app.analyses_done)
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def timeline(app: GputopApp) -> Timeline:
    return app.screen.query_one(Timeline)


def plot_of(tl: Timeline, line: int) -> str:
    """The plot-area characters of a timeline line as ``render_line`` draws them."""
    y = line - tl.top + 1
    assert 1 <= y < tl.size.height, f"line {line} is not on screen"
    text = tl.render_line(y).text
    return text[tl.label_width :]


def line_of_lane(tl: Timeline, lane: int, depth: int = 0) -> int:
    for i, ln in enumerate(tl.lines):
        if ln.lane == lane and ln.depth == depth and ln.kind == 2:
            return i
    raise AssertionError(f"lane {lane} row {depth} is not shown")


def lane_named(trace: Trace, name: str) -> int:
    for i, ln in enumerate(trace.lanes):
        if ln.name == name:
            return i
    raise AssertionError(name)


async def press(pilot: Any, *keys: str) -> None:
    for k in keys:
        await pilot.press(k)
    await pilot.pause()


async def wait_text(pilot: Any, app: Any, *needles: str, timeout: float = 20.0) -> str:
    """Wait until every one of ``needles`` is on screen (a new screen is drawn a frame after it is pushed)."""
    await wait_until(pilot, lambda: all(n in screen_text(app) for n in needles), timeout=timeout)
    return screen_text(app)


def screen_text(app: GputopApp) -> str:
    """Everything on screen, as plain text lines."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in s) for s in strips)


AsyncBody = Callable[[GputopApp, Any], Awaitable[None]]

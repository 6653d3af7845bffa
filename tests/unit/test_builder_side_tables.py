"""The builder's side tables (kernels, copies) come out in event order, each row with its own values, whatever order
and however many parts their rows were added in; an event with two rows is refused as before; and the build on
worker threads (large traces; from 1 M events where four cores or more are usable) gives the model of the one-thread
build."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import pytest

from gputop_trace.load.loader import load_file
from gputop_trace.model import builder
from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.tables import Lane, TraceMeta
from tests.conftest import CORPUS, require_corpus
from tests.trace_compare import trace_differences


def _builder(n: int, rng: np.random.Generator) -> TraceBuilder:
    b = TraceBuilder("test")
    lanes = [b.lane(("gpu", i), Lane(kind=LaneKind.GPU_STREAM, name=f"s{i}")) for i in range(3)]
    b.add_events(
        start_ns=rng.integers(0, 10**6, n),
        dur_ns=rng.integers(0, 1000, n),
        kind=np.full(n, int(Kind.KERNEL)),
        lane=np.array(lanes)[rng.integers(0, 3, n)],
        name=np.full(n, b.names.intern("k")),
    )
    return b


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_kernel_rows_follow_their_events_in_event_order(parts: int) -> None:
    rng = np.random.default_rng(parts)
    n = 5000
    b = _builder(n, rng)
    events = rng.permutation(n)[: n // 2]  # half the events are kernels, added in a shuffled order
    grid: npt.NDArray[np.int32] = np.asarray(rng.integers(1, 1000, size=(events.shape[0], 3)), dtype=np.int32)
    regs: npt.NDArray[np.int32] = np.asarray(rng.integers(1, 255, size=events.shape[0]), dtype=np.int32)
    for chunk in np.array_split(np.arange(events.shape[0]), parts):
        b.add_kernels(event=events[chunk], grid=grid[chunk], registers=regs[chunk])
    t = b.build(TraceMeta(format="test"))
    k = t.kernels
    assert k.event.tolist() == sorted(k.event.tolist()) and len(set(k.event.tolist())) == events.shape[0]
    # every row keeps its own values: find each kernel's original row through its start and duration
    order = np.lexsort((-b._events[0].cols["dur_ns"], b._events[0].cols["start_ns"], b._events[0].cols["lane"]))
    new_of_old = np.empty(n, dtype=np.int64)
    new_of_old[order] = np.arange(n)
    want = sorted(zip(new_of_old[events].tolist(), grid.tolist(), regs.tolist(), strict=True))
    got = list(zip(k.event.tolist(), k.grid.tolist(), k.registers.tolist(), strict=True))
    assert got == want
    assert k.raw_name.tolist() == [-1] * events.shape[0]  # defaults of columns no part gave


def test_an_event_with_two_kernel_rows_is_refused() -> None:
    rng = np.random.default_rng(3)
    b = _builder(100, rng)
    b.add_kernels(event=np.array([5, 7, 9]))
    b.add_kernels(event=np.array([7, 11, 5]))
    with pytest.raises(ValueError, match="KernelTable: 2 events have two rows"):
        b.build(TraceMeta(format="test"))


@pytest.mark.corpus
@pytest.mark.parametrize(
    "rel",
    ["kineto/h200_gpt_train_small.json.gz", "jax/h200_jax_mlp.perfetto_trace.json.gz",
     "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite", "nsys/kmcho2019__Rodinia_3.1_Gaussian__report3.sqlite"],
)  # fmt: skip
def test_the_build_on_worker_threads_gives_the_model_of_one_thread(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # large traces (4 M events or more) build on worker threads; these small ones are made to, and compared with the
    # one-thread build
    path = CORPUS / rel
    require_corpus()
    monkeypatch.setattr(builder, "PARALLEL_BUILD_EVENTS", 1 << 62)
    monkeypatch.setattr(builder, "PARALLEL_BUILD_EVENTS_MANY_CORES", 1 << 62)
    one = load_file(str(path), use_cache=False)
    monkeypatch.setattr(builder, "PARALLEL_BUILD_EVENTS", 0)
    monkeypatch.setattr(builder, "PARALLEL_BUILD_EVENTS_MANY_CORES", 0)
    monkeypatch.setattr(builder, "_usable_cores", lambda: 4)
    threads: set[str] = set()
    take = np.take

    def spy(*a: object, **k: object) -> object:
        threads.add(threading.current_thread().name)
        return take(*a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(np, "take", spy)  # the builder calls np.take on its workers
    many = load_file(str(path), use_cache=False)
    monkeypatch.setattr(np, "take", take)
    assert not trace_differences(many, one), trace_differences(many, one)[:8]
    assert threads and all(t.startswith("build") for t in threads)  # the gathers really ran on the workers


@pytest.mark.parametrize(("cores", "threaded"), [(2, False), (3, False), (4, True), (16, True)])
def test_a_build_of_a_few_million_events_takes_workers_only_with_four_cores_or_more(
    cores: int, threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (the 1 GB Kineto benchmark input has 2.2 M events: on many cores its build must not stay on the loading thread)
    n = builder.PARALLEL_BUILD_EVENTS_MANY_CORES + 1
    assert n < builder.PARALLEL_BUILD_EVENTS
    monkeypatch.setattr(builder, "_usable_cores", lambda: cores)
    pools: list[int | None] = []

    def spy(workers: int) -> ThreadPoolExecutor:
        pools.append(workers)
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="build")

    monkeypatch.setattr(builder, "_thread_pool", spy)
    t = _builder(n, np.random.default_rng(3)).build(TraceMeta(format="test"))
    assert len(t) == n
    assert pools == ([min(cores - 1, builder.MAX_BUILD_WORKERS)] if threaded else [])

"""``gputop_trace.annotate``: one name as an NVTX range and a torch.profiler record_function."""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import pytest

import gputop_trace
from gputop_trace import annotate
from gputop_trace.annotate import _NVTX


class _Recorder:
    """Stands in for the nvtx package and torch: records pushes, pops and record_function enters/exits."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.depth: dict[int, int] = {}

    # nvtx package API
    def push_range(self, message: str | None = None, color: Any = None, domain: Any = None, **_: Any) -> None:
        tid = threading.get_ident()
        self.depth[tid] = self.depth.get(tid, 0) + 1
        self.events.append(("push", f"{domain or ''}:{message}"))

    def pop_range(self, domain: Any = None) -> None:
        tid = threading.get_ident()
        self.depth[tid] -= 1
        self.events.append(("pop", str(domain or "")))

    # torch.profiler.record_function
    def record_function(self, name: str) -> Any:
        rec = self

        class _RF:
            def __enter__(self) -> None:
                rec.events.append(("rf+", name))

            def __exit__(self, *exc: Any) -> None:
                rec.events.append(("rf-", name))

        return _RF()


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> _Recorder:
    r = _Recorder()
    monkeypatch.setitem(_NVTX, "module", r)
    torch: Any = types.ModuleType("torch")  # a fake of the (untyped) torch module
    torch.profiler = types.SimpleNamespace(record_function=r.record_function)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return r


def test_public_name() -> None:
    """``from gputop_trace import annotate`` and ``gputop_trace.annotate(...)`` are the function."""
    assert callable(gputop_trace.annotate) and gputop_trace.annotate is annotate
    assert "annotate" in gputop_trace.__all__
    assert sys.modules["gputop_trace.annotate"].annotate is annotate


def test_context_manager_emits_both_in_nested_order(rec: _Recorder) -> None:
    with annotate("step_3"), annotate("forward"):
        pass
    assert rec.events == [
        ("push", ":step_3"),
        ("rf+", "step_3"),
        ("push", ":forward"),
        ("rf+", "forward"),
        ("rf-", "forward"),
        ("pop", ""),
        ("rf-", "step_3"),
        ("pop", ""),
    ]


def test_decorators_with_and_without_a_name(rec: _Recorder) -> None:
    @annotate("fwd")
    def fwd(x: int) -> int:
        return x + 1

    @annotate
    def train_step() -> str:
        return "ok"

    assert fwd(1) == 2 and train_step() == "ok"
    assert fwd.__name__ == "fwd"
    names = [n for kind, n in rec.events if kind == "rf+"]
    assert names == ["fwd", "test_decorators_with_and_without_a_name.<locals>.train_step"]


def test_exception_closes_the_range_and_propagates(rec: _Recorder) -> None:
    with pytest.raises(ZeroDivisionError), annotate("boom"):
        _ = 1 / 0
    assert rec.events[-2:] == [("rf-", "boom"), ("pop", "")]
    assert rec.depth[threading.get_ident()] == 0


def test_recursion_and_threads_keep_their_own_stacks(rec: _Recorder) -> None:
    @annotate("rec")
    def down(n: int) -> int:
        return 0 if n == 0 else 1 + down(n - 1)

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(down(20))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [20] * 4
    assert all(d == 0 for d in rec.depth.values())
    assert sum(1 for k, _ in rec.events if k == "push") == sum(1 for k, _ in rec.events if k == "pop") == 84


def test_domain_goes_to_nvtx(rec: _Recorder) -> None:
    with annotate("r", domain="mydomain"):
        pass
    assert rec.events[0] == ("push", "mydomain:r") and rec.events[-1] == ("pop", "mydomain")


def test_without_torch_only_nvtx(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _Recorder()
    monkeypatch.setitem(_NVTX, "module", r)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with annotate("x"):
        pass
    assert r.events == [("push", ":x"), ("pop", "")]


def test_without_the_nvtx_package_torch_nvtx_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    torch: Any = types.ModuleType("torch")  # a fake of the (untyped) torch module
    torch.cuda = types.SimpleNamespace(
        nvtx=types.SimpleNamespace(
            range_push=lambda n: calls.append("push " + n), range_pop=lambda: calls.append("pop")
        )
    )
    torch.profiler = types.SimpleNamespace(record_function=_Recorder().record_function)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(_NVTX, "module", None)
    with annotate("step"):
        pass
    assert calls == ["push step", "pop"]


def test_real_nvtx_package_without_a_profiler_is_harmless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(_NVTX, "module", raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with annotate("real"):
        value = 41 + 1
    assert value == 42


def test_empty_name_is_refused() -> None:
    with pytest.raises(ValueError):
        annotate("")

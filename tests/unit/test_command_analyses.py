"""Each command computes only the analyses it shows (issue 29): `kernels --json` runs no gap detector, `gaps` no
transfer analysis, and only `summary` runs the findings (which need gaps, transfers and launches)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.paths import SAMPLES

SAMPLE = str(SAMPLES / "h200_train_step.json.gz")

#: (module, function): the analyses worth watching; each is a whole pass over the trace
WATCHED = (
    ("gputop_trace.analysis.gaps.detect", "find_gaps"),
    ("gputop_trace.analysis.transfers", "transfer_overlap"),
    ("gputop_trace.analysis.findings.assemble", "find_findings"),
    ("gputop_trace.analysis.ranges", "range_summary"),
    ("gputop_trace.analysis.launches", "launch_behaviour"),
    ("gputop_trace.analysis.kernels", "kernel_table"),
)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the calls of the watched analyses, wherever a module holds them (a module that did ``from gaps
    import find_gaps`` at its import keeps its own reference: that one is replaced too)."""
    import importlib

    seen: Counter[str] = Counter()
    for mod_name, fn_name in WATCHED:
        module = importlib.import_module(mod_name)
        original = getattr(module, fn_name)

        def spy(*a: Any, _f: Callable[..., Any] = original, _n: str = fn_name, **k: Any) -> Any:
            seen[_n] += 1
            return _f(*a, **k)

        for holder in list(sys.modules.values()):
            ours = getattr(holder, "__name__", "").startswith("gputop_trace")
            if ours and getattr(holder, fn_name, None) is original:
                monkeypatch.setattr(holder, fn_name, spy)
    return seen


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("kernels", {"kernel_table"}),
        ("gaps", {"find_gaps"}),
        ("transfers", {"transfer_overlap"}),
        ("ranges", {"range_summary"}),
    ],
)
def test_a_command_runs_only_its_own_analysis(
    capsys: pytest.CaptureFixture[str], calls: Counter[str], command: str, expected: set[str]
) -> None:
    code, out, _ = run_cli(capsys, command, "--json", "--no-cache", SAMPLE)
    assert code == 0 and out.startswith("{")
    assert set(calls) == expected
    assert all(n == 1 for n in calls.values())  # each pass once


def test_summary_runs_each_analysis_once(capsys: pytest.CaptureFixture[str], calls: Counter[str]) -> None:
    code, out, _ = run_cli(capsys, "summary", "--json", "--no-cache", SAMPLE)
    assert code == 0 and out.startswith("{")
    # the findings reuse the gaps and transfers the summary computed: no second pass of either
    assert calls == Counter({n: 1 for _, n in WATCHED})

"""A background load (what ``view`` starts before it imports the app) shortens the interpreter's switch interval
while it runs, so that its thread gets the GIL back soon after each numpy call or compiled scan that let it go, and
puts the interval back when the last load ends, whether it succeeded, failed or was cancelled."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.load import background, loader
from gputop_trace.load.background import LOAD_SWITCH_INTERVAL, BackgroundLoad
from gputop_trace.load.samples import default_sample
from gputop_trace.model.trace import Trace


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Loads wait for this event before they read (they read the bundled sample once it is set)."""
    release = threading.Event()
    real = loader.load_paths

    def gated(paths: list[str], **options: Any) -> Trace:
        release.wait(20)
        progress = options.get("progress")
        if progress is not None:
            progress(0, 1, 0)  # raises LoadCancelled once cancelled
        return real(paths, **options)

    monkeypatch.setattr(loader, "load_paths", gated)
    before = sys.getswitchinterval()
    yield release
    release.set()
    sys.setswitchinterval(before)


def test_the_interval_is_short_while_a_load_runs_and_restored_after(gate: threading.Event) -> None:
    before = sys.getswitchinterval()
    assert before > LOAD_SWITCH_INTERVAL  # Python's default, 5 ms
    load: BackgroundLoad[None] = BackgroundLoad([default_sample()], use_cache=False)
    assert sys.getswitchinterval() == pytest.approx(LOAD_SWITCH_INTERVAL)
    gate.set()
    assert load.wait(30)
    assert len(load.result()) > 0
    assert sys.getswitchinterval() == pytest.approx(before)


def test_overlapping_loads_restore_the_interval_once_the_last_one_ends(gate: threading.Event) -> None:
    before = sys.getswitchinterval()
    first: BackgroundLoad[None] = BackgroundLoad([default_sample()], use_cache=False)
    second: BackgroundLoad[None] = BackgroundLoad([default_sample()], use_cache=False, include_python=False)
    first.cancel()
    gate.set()
    assert first.wait(30)
    with pytest.raises(LoadCancelled):
        first.result()
    assert second.wait(30)
    assert sys.getswitchinterval() == pytest.approx(before)
    assert background._switch.running == 0


def test_a_failed_load_restores_the_interval(tmp_path: Any) -> None:
    before = sys.getswitchinterval()
    bad = tmp_path / "empty.json"
    bad.write_bytes(b"")
    load: BackgroundLoad[None] = BackgroundLoad([str(bad)], use_cache=False)
    assert load.wait(30)
    with pytest.raises(TraceError):
        load.result()
    assert sys.getswitchinterval() == pytest.approx(before)

"""Nothing lost: the user's trace is never changed, nothing is written next to it unless the user asks and is
told where, the columnar cache never stands in for the source, and a trace recovered from a cut-off file says
exactly what was not read — on the command line and in the app."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.load.loader import load_paths
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import PromptScreen
from tests.cli_run import run_cli
from tests.fixtures.hostile import write_kineto, write_nsys, write_ranks
from tests.tui_helpers import press, run, screen_text, wait_loaded, wait_until


def _snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: size, modification time and content hash."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture
def traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of traces (Kineto, gzip, nsys, a folder of ranks) with the caches elsewhere (under a private
    XDG_CACHE_HOME and HOME) and every trace big enough to be cached; the working folder is the traces' own, so
    that a write to a relative path would land next to them."""
    folder = tmp_path / "traces"
    folder.mkdir()
    write_kineto(folder / "hostile.json")
    (folder / "hostile.json.gz").write_bytes(gzip.compress((folder / "hostile.json").read_bytes()))
    write_nsys(folder / "hostile.sqlite")
    write_ranks(folder / "ranks")
    for var in ("GPUTOP_TRACE_CACHE_DIR", "GPUTOP_CACHE_DIR", "GPUTOP_TRACE_NO_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_MIN", "0")  # cache even these small traces
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(folder)
    return folder


COMMANDS = [
    (command, *form)
    for command in ("summary", "kernels", "gaps", "transfers", "ranges", "ranks")
    for form in ((), ("--json",), ("--csv",))
    if not (command == "summary" and form == ("--csv",))
]


@pytest.mark.parametrize("read_only", [False, True], ids=["writable-folder", "read-only-folder"])
def test_no_command_writes_next_to_the_trace(traces: Path, capsys: pytest.CaptureFixture[str], read_only: bool) -> None:
    before = _snapshot(traces)
    if read_only:
        for p in [traces, *traces.rglob("*")]:
            p.chmod(stat.S_IRUSR | stat.S_IXUSR if p.is_dir() else stat.S_IRUSR)
    try:
        for target in ("hostile.json", "hostile.json.gz", "hostile.sqlite", "ranks"):
            for argv in COMMANDS:
                code, _, err = run_cli(capsys, *argv, target)
                assert code == 0, (argv, target, err)
    finally:
        for p in [traces, *traces.rglob("*")]:
            p.chmod(stat.S_IRWXU if p.is_dir() else stat.S_IRUSR | stat.S_IWUSR)
    assert _snapshot(traces) == before  # not one byte, file or timestamp changed or added
    cached = list((traces.parent / "xdg" / "gputop-trace").iterdir())
    assert len(cached) >= 4  # the caching happened, in the user cache folder


def test_the_app_writes_next_to_the_trace_only_when_told_to_and_says_where(traces: Path) -> None:
    before = _snapshot(traces)

    async def body() -> None:
        app = GputopApp(["hostile.json"])
        async with app.run_test(size=(120, 36), notifications=True) as pilot:
            await wait_loaded(app, pilot)
            for key in ("1", "2", "3", "4", "6", "escape", "w", "enter", "x"):
                await press(pilot, key)
            await pilot.pause(0.2)
            assert _snapshot(traces) == before  # browsing writes nothing
            # the user exports into the working folder, which is the trace's: the file is written and named
            await press(pilot, "e")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
            await press(pilot, "enter")
            written = traces / "gputop-findings.md"
            await wait_until(pilot, lambda: written.exists() and "Wrote markdown findings" in screen_text(app))
            assert any(str(written) in n.message for n in app._notifications)
            await press(pilot, "q")

    run(body())
    after = _snapshot(traces)
    assert set(after) - set(before) == {"gputop-findings.md"}
    assert {k: v for k, v in after.items() if k in before} == before


def _kineto(events: int, name: str) -> bytes:
    evs = [{"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 10 * i, "dur": 5,
            "args": {"device": 0, "stream": 7}} for i in range(events)]  # fmt: skip
    return json.dumps({"traceEvents": evs}).encode()


def test_the_cache_never_stands_in_for_the_source(traces: Path) -> None:
    path = traces / "edited.json"
    path.write_bytes(_kineto(50, "before"))
    first = load_paths([str(path)])
    assert {first.names[i] for i in first.name.tolist()} == {"before"}
    stamp = path.stat()
    again = load_paths([str(path)])  # from the cache now
    assert len(again) == 50 and path.stat().st_mtime_ns == stamp.st_mtime_ns
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(_kineto(50, "before")).digest()
    # edited in place (a new size and time): the new content, not the cached one
    path.write_bytes(_kineto(60, "after!"))
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    edited = load_paths([str(path)])
    assert len(edited) == 60 and {edited.names[i] for i in edited.name.tolist()} == {"after!"}
    # the same size, only the time changed (a file copied over it): read again, never the old entry
    path.write_bytes(_kineto(60, "third!"))
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 2_000_000_000))
    third = load_paths([str(path)])
    assert len(third) == 60 and {third.names[i] for i in third.name.tolist()} == {"third!"}
    # gone: a clear error, even though the cache still holds an entry for it
    path.unlink()
    with pytest.raises(TraceError, match="No such file"):
        load_paths([str(path)])


def test_a_recovered_trace_says_what_was_not_read_everywhere(traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = _kineto(40, "k")
    cut = whole.index(b'"ts": 300') - 3  # inside event 30: 30 events survive
    last_end = whole.rindex(b"}", 0, cut) + 1
    path = traces / "cut.json"
    path.write_bytes(whole[:cut])
    lost = cut - last_end
    code, out, _ = run_cli(capsys, "summary", "--json", str(path))
    doc = json.loads(out)
    assert code == 0 and doc["source"]["truncated_bytes"] == lost and doc["events"]["kernel"] == 30
    (warning,) = doc["warnings"]
    assert f"the last {lost:,} bytes" in warning
    code, out, _ = run_cli(capsys, "summary", str(path))
    assert f"the last {lost:,} bytes" in " ".join(out.split())

    async def body() -> None:
        app = GputopApp([str(path)])
        async with app.run_test(size=(120, 36)) as pilot:  # no toast over the status bar
            await wait_loaded(app, pilot)
            assert "⚠ 1 warning" in screen_text(app)
            await press(pilot, "6")
            # the Findings panel fills once the analyses (started after the first screen) are done; the warning
            # row comes after the findings (here the profile note on short kernels): its detail shows once selected
            await wait_until(pilot, lambda: "Trace is truncated" in screen_text(app))
            for _ in range(5):
                if f"the last {lost:,} bytes" in " ".join(screen_text(app).split()):
                    break
                await press(pilot, "j")
            assert f"the last {lost:,} bytes" in " ".join(screen_text(app).split())

    run(body())

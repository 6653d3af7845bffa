"""Benchmark of the app (``gputop-trace view``): frame time of the timeline for pan and zoom steps at 160×48 on
1 M and 10 M events, and time to the first full screen on the bundled sample.

    python benchmarks/bench_tui.py [--events 1000000 10000000] [--steps 60] [--source PATH] [--record]

Frame time = the key's action (pan or zoom around the cursor) plus drawing every line of the timeline through
``render_line`` (what Textual asks for after the key), measured in a running app (``App.run_test``). The
large traces are a real corpus trace repeated along time in the model (``benchmarks/tile_model.py``).
"First full screen" runs the installed ``gputop-trace view`` on the sample in a pseudo-terminal and measures
from process start until the status bar (the last line drawn) appears. ``--record`` writes the TUI section of
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_SOURCE = (
    Path(os.environ.get("GPUTOP_CORPUS", ROOT.parent / "shared" / "corpus")) / "kineto" / "h200_gpt_train_small.json.gz"
)


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


async def frame_times(trace: object, steps: int, size: tuple[int, int]) -> dict[str, list[float]]:
    from gputop_trace.tui.app import GputopApp
    from gputop_trace.tui.screens.main import MainScreen
    from gputop_trace.tui.widgets.timeline import Timeline

    app = GputopApp(["(tiled)"], trace=trace, analyses=False)  # type: ignore[arg-type]
    out: dict[str, list[float]] = {"pan": [], "zoom": [], "pan, whole app (CPU)": []}
    async with app.run_test(size=size) as pilot:
        for _ in range(600):
            await pilot.pause(0.05)
            if isinstance(app.screen, MainScreen):
                break
        await pilot.pause(0.2)
        tl = app.screen.query_one(Timeline)
        # expand everything so that every line of the screen holds events
        tl.set_collapsed(set())
        height = tl.size.height

        def draw() -> None:
            # cold: no strip from an earlier frame is reused, so every line is binned and drawn again
            tl._strips.clear()
            for y in range(height):
                tl.render_line(y)

        # start zoomed to ~1/20 of the trace around its middle (a typical working zoom), then pan / zoom
        mid = (tl.lo + tl.hi) // 2
        span = (tl.hi - tl.lo) // 20
        tl.t0, tl.t1 = mid - span // 2, mid + span // 2
        tl.cursor_t = mid
        draw()
        for i in range(steps):
            t = time.perf_counter()
            tl.pan(0.25 if (i // 10) % 2 == 0 else -0.25)
            draw()
            out["pan"].append((time.perf_counter() - t) * 1e3)
        for i in range(steps):
            t = time.perf_counter()
            tl.zoom(0.5 if (i // 8) % 2 == 0 else 2.0)
            draw()
            out["zoom"].append((time.perf_counter() - t) * 1e3)
        # the whole app: CPU time of one pan step including Textual's message handling, the status bar and
        # details updates and the compositor's screen update (idle waits of the event loop excluded)
        for i in range(min(steps, 30)):
            tl._strips.clear()
            t = time.process_time()
            tl.pan(0.25 if (i // 5) % 2 == 0 else -0.25)
            await pilot.pause()
            out["pan, whole app (CPU)"].append((time.process_time() - t) * 1e3)
    return out


def first_screen_seconds(
    runs: int = 3, paths: tuple[str, ...] = (), env: dict[str, str] | None = None, timeout: float = 20.0
) -> list[float]:
    """Seconds from starting ``gputop-trace view [PATHS]`` (no PATH: the sample) until its status bar is on screen
    (``env``: added to the child's environment; a run that shows no status bar within ``timeout`` s is left out)."""
    import pty
    import select
    import shutil

    exe = shutil.which("gputop-trace") or str(Path(sys.executable).parent / "gputop-trace")
    results = []
    for _ in range(runs):
        pid, fd = pty.fork()
        if pid == 0:  # child
            os.environ["COLUMNS"], os.environ["LINES"] = "160", "48"
            os.environ.update(env or {})
            os.execv(exe, [exe, "view", *paths])
        import fcntl
        import struct
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
        t0 = time.perf_counter()
        buf = b""
        done = None
        while time.perf_counter() - t0 < timeout:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                buf += chunk
                plain = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", buf)
                if b" ev" in plain and b"win " in plain:
                    done = time.perf_counter() - t0
                    break
        os.write(fd, b"q")
        time.sleep(0.3)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
        if done is not None:
            results.append(done)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--source", default=str(DEFAULT_SOURCE if DEFAULT_SOURCE.exists() else ""))
    ap.add_argument("--record", action="store_true", help="write the TUI section of benchmarks/RESULTS.md")
    args = ap.parse_args()

    from benchmarks.tile_model import tiled_to_events
    from gputop_trace.load.loader import load_paths
    from gputop_trace.load.samples import default_sample

    source = args.source or default_sample()
    base = load_paths([source])
    rows = []
    for n in args.events:
        big = tiled_to_events(base, n)
        times = asyncio.run(frame_times(big, args.steps, (160, 48)))
        for what, vals in times.items():
            med, p99 = statistics.median(vals), percentile(vals, 99)
            rows.append((f"{len(big):,}", what, med, p99))
            print(f"{len(big):>12,} events  {what:18s} median {med:6.2f} ms  p99 {p99:6.2f} ms", flush=True)
        del big
    first = first_screen_seconds()
    if first:
        runs = ", ".join(f"{x:.2f}" for x in first)
        print(f"first full screen on the sample: median {statistics.median(first):.2f} s ({runs})")
    if args.record:
        record(rows, first, source)
    return 0


def record(rows: list[tuple[str, str, float, float]], first: list[float], source: str) -> None:
    import numpy
    import textual

    lines = [
        "## TUI",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.node() or 'this machine'} "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs), Python {platform.python_version()}, "
        f"numpy {numpy.__version__}, textual {textual.__version__}, "
        f"with `python benchmarks/bench_tui.py --record`. Large traces: `{Path(source).name}` repeated along time in "
        "the model (`benchmarks/tile_model.py`). Frame = one pan (¼ window) or zoom (×2 / ×½ around the cursor) step "
        "plus drawing every timeline line at 160×48, all groups expanded, no strip reused from an earlier frame; "
        "targets: median ≤ 10 ms, p99 ≤ 30 ms. The *whole app* row is the process CPU time of one pan in the "
        "running app (Textual's message handling, the status bar and details updates and the compositor's screen "
        "update; idle waits excluded), recorded to show the cost around the timeline, not a target.",
        "",
        "| events | step | median ms | p99 ms |",
        "|---:|---|---:|---:|",
    ]
    lines += [f"| {n} | {what} | {med:.2f} | {p99:.2f} |" for n, what, med, p99 in rows]
    if first:
        lines += [
            "",
            f"First full screen of `gputop-trace view` (bundled sample, 160×48 pseudo-terminal, process start → status "
            f"bar drawn): median {statistics.median(first):.2f} s over {len(first)} runs "
            f"({', '.join(f'{x:.2f}' for x in first)} s); target ≤ 1.5 s.",
        ]
    section = "\n".join(lines) + "\n"
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n"
    pat = re.compile(r"^## TUI\n.*?(?=^## |\Z)", re.S | re.M)
    text = pat.sub(section + "\n", text) if pat.search(text) else text.rstrip() + "\n\n" + section
    path.write_text(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())

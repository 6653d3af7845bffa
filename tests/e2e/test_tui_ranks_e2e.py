"""End to end, in a real pseudo-terminal (tmux, 80×24): the installed ``gputop-trace view`` on the corpus DDP pair
(panel 7, ranks side by side) and on a fleet Parquet file (Enter opens a rank, Esc comes back), checked on the
captured screen."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import corpus_file
from tests.e2e.test_e2e_tmux import Tmux, _gputop

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def _need_tmux() -> None:
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed for the end-to-end test (apt-get install tmux)")


def _quit(tm: Tmux) -> int | None:
    tm.keys("q")
    end = time.monotonic() + 10
    while tm.dead_status() is None and time.monotonic() < end:
        time.sleep(0.1)
    return tm.dead_status()


def test_ranks_panel_and_side_by_side_in_a_real_terminal() -> None:
    _need_tmux()
    tm = Tmux([_gputop(), "view", corpus_file("kineto/h200_ddp_2gpu")])
    try:
        tm.wait_for(lambda s: "rank 0" in s and " ev" in s)
        tm.keys("7")
        panel = tm.wait_for(lambda s: "Rank 1 is the last to arrive" in s)
        row0 = next(line for line in panel.splitlines() if line.split()[:2] == ["0", "5"])  # rank 0, 5 steps
        assert "waiting" in panel and "100 ms" in row0  # rank 0's waiting
        assert all(len(line) <= 80 for line in panel.splitlines())
        tm.keys("R")
        side = tm.wait_for(lambda s: "step start" in s and "LATE" in s)
        assert "rank 0 · step_" in side and "waited" in side
        assert "NCCL stream 17" in side
        first = next(line for line in side.splitlines() if line.startswith(" Ranks"))
        tm.keys("]")
        nxt = tm.wait_for(lambda s: next(line for line in s.splitlines() if line.startswith(" Ranks")) != first)
        assert "of 5)" in nxt
        tm.keys("t")
        tm.wait_for(lambda s: "common clock" in s)
        tm.keys("Escape")
        tm.wait_for(
            lambda s: ("7 Ranks" in s or "7Ranks" in s) and "Rank 1 is the last" in s
        )  # 8 tabs at 80 columns drop the space
        assert _quit(tm) == 0
    finally:
        tm.close()


def test_a_fleet_file_in_a_real_terminal(tmp_path: Path) -> None:
    _need_tmux()
    out = tmp_path / "ddp.parquet"
    subprocess.run(
        [_gputop(), "fleet", corpus_file("kineto/h200_ddp_2gpu"), "--executor", "local", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    tm = Tmux([_gputop(), "view", str(out)])
    try:
        fleet = tm.wait_for(lambda s: "ddp.parquet: 2 ranks" in s)
        assert "Enter open rank" in fleet
        tm.keys("Enter")  # the latest rank first: rank 1
        tm.wait_for(lambda s: "rank1.pt.trace.json.gz" in s and " ev" in s)
        tm.keys("Escape")
        tm.wait_for(lambda s: "ddp.parquet: 2 ranks" in s)
        assert _quit(tm) == 0
    finally:
        tm.close()

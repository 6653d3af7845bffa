"""End to end: the critical path in the installed ``gputop-trace view`` in a real 80×24 terminal (tmux): panel 9 shows
the path of the step under the cursor as ``critical_paths`` finds it, ``p`` draws it, ``n`` walks it (the status
bar says where), ``q`` quits with 0."""

from __future__ import annotations

import shutil

import pytest

from gputop_trace.analysis.critical_path.path import critical_paths
from gputop_trace.load.loader import load_paths
from gputop_trace.tui.view.critical_path_view import breakdown_lines, path_at, step_line
from tests.conftest import corpus_file
from tests.e2e.test_e2e_tmux import Tmux, _gputop

TRACE = "kineto/h200_gpt_train_small.json.gz"


@pytest.mark.corpus
@pytest.mark.slow
def test_critical_path_in_a_real_terminal() -> None:
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed for the end-to-end test (apt-get install tmux)")
    path = corpus_file(TRACE)
    trace = load_paths([path])
    paths = critical_paths(trace)
    # the app opens with the cursor in the middle of the trace, on rank 0's first lane
    index = path_at(paths, 0, max(int(trace.span_ns), 1) // 2)
    shown = paths[index]
    head = step_line(shown, index, len(paths), multi_rank=False, width=78)
    tm = Tmux([_gputop(), "view", path])
    try:
        tm.wait_for(lambda s: "GPU busy" in s and " ev" in s)
        tm.keys("9")
        panel = tm.wait_for(lambda s: head in s, timeout=60)
        first = breakdown_lines(shown, 78)[0]
        assert first in panel, first
        assert "on path" in panel and "2× saves" in panel  # the item table with the what-if columns
        tm.keys("9", "p", "n")
        walked = tm.wait_for(lambda s: f"/{len(shown.segments):,} " in s.splitlines()[-2])
        assert "path " in walked.splitlines()[-2]
        assert tm.quit() == 0
    finally:
        tm.close()

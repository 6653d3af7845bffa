"""Issue 31, item 2: every row of the Kernels panel reads differently from every other, on every trace of the
corpus and the bundled samples, at the width the panel gives the kernel column at 80x24 and at 160x48 (a multi-GPU
trace's device column included). Two rows of the same kernel on different devices are told apart by the device
column, not the label."""

from __future__ import annotations

import pytest

from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.load.loader import load_paths
from gputop_trace.tui.app import GputopApp
from tests.corpus.test_json_invariants import NOT_TRACES, _targets
from tests.paths import CORPUS, SAMPLES
from tests.tui_helpers import app_test, press, synthetic_trace, wait_loaded

pytestmark = pytest.mark.corpus

SIZES = [(80, 24), (160, 48)]
#: the H200 PyTorch trace whose top GEMMs are ``nvjet_sm90_tst_256x128_64x4_…`` variants
H200_GPT = "kineto/h200_gpt_train_small.json.gz"


def _corpus_traces() -> list[str]:
    """Every trace of the corpus, then the bundled samples (what ``gputop-trace view`` opens)."""
    corpus = [str(CORPUS / rel) for rel in _targets() if not any(rel.startswith(n) for n in NOT_TRACES)]
    return corpus + [str(p) for p in sorted(SAMPLES.glob("*.json.gz"))]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@app_test
async def test_every_kernel_row_of_every_corpus_trace_reads_differently(size: tuple[int, int]) -> None:
    from gputop_trace.tui.widgets.kernels_panel import KernelsPanel, KernelTable

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "1")
        panel = main.query_one(KernelsPanel)
        table = main.query_one(KernelTable)
        checked, failures = 0, []
        for rel in _corpus_traces():
            trace = load_paths([rel])
            rows = kernel_table(trace)
            if len(rows) < 2:
                continue
            panel.set_rows(trace, rows)
            await pilot.pause()
            width = list(table.table.columns.values())[-1].width  # the kernel column, last
            shown: dict[str, str] = {}  # label → full name, for every row the table shows
            for r in range(table.table.row_count):
                label = str(table.table.get_row_at(r)[-1])
                name = table.items[table.shown[r]].name
                assert len(label) <= width, (rel, label, width)
                if shown.setdefault(label, name) != name:
                    failures.append((rel, width, label, shown[label], name))
            assert table.table.row_count == len(rows)
            checked += 1
        assert not failures, failures[:5]
        assert checked >= 20  # Kineto, JAX, nsys and external traces with two kernels or more


@app_test
async def test_h200_gemms_read_differently_at_160x48() -> None:
    """The real H200 trace opened in the app: its nvjet GEMM rows (``nvjet_sm90_tst_256x128_64x4_…`` and kin,
    which share their first 20 characters) each show where they part, and no two read alike."""

    from gputop_trace.tui.widgets.kernels_panel import KernelTable

    app = GputopApp([str(CORPUS / H200_GPT)])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "1")
        table = main.query_one(KernelTable)
        labels = {
            table.items[table.shown[r]].name: str(table.table.get_row_at(r)[-1]) for r in range(table.table.row_count)
        }
        gemms = {n: lab for n, lab in labels.items() if n.startswith("nvjet_sm90_tst_")}
        assert len(gemms) >= 6, labels
        assert len(set(gemms.values())) == len(gemms), gemms
        for name, label in gemms.items():  # the end of the name (operand layout, epilogue) always shows
            assert label.startswith("nvjet_sm90_ts") and name.rsplit("_", 1)[-1] in label, (name, label)
        coop = gemms["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"]
        assert "128_64x4_1x2_h_bz_coopA_NNT" in coop, coop
        assert len(set(labels.values())) == len(labels)

"""The app on the compiled + CUDA-graph recording: --inductor-dir attached after loading (a wrong folder is the
error dialog with exit code 2), replay bands on the GPU stream with the replayed kernels one row below."""

from __future__ import annotations

import tarfile
from pathlib import Path

from gputop_trace.analysis.compiled.inductor import InductorLookup
from gputop_trace.model.kinds import Kind
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.main import MainScreen
from tests.paths import ROOT
from tests.tui_helpers import app_test, press, run, wait_loaded, wait_until

DATA = ROOT / "tests" / "data"
TRACE = str(DATA / "compiled_cudagraphs_cuda.json.gz")


@app_test
async def test_view_with_inductor_dir(tmp_path: Path) -> None:
    with tarfile.open(DATA / "compiled_cudagraphs_cuda_inductor.tar.gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp_path, filter="data")
        else:  # Python before 3.10.12 / 3.11.4: our own archive
            tar.extractall(tmp_path)

    app = GputopApp([TRACE], inductor_dir=str(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_loaded(app, pilot)
        t = app.trace
        assert t is not None
        info = InductorLookup(t).info("triton_per_fused_addmm_gelu_native_layer_norm_0")
        assert info is not None and info.source_lines == (
            "record_references.py:201 in forward: x = self.a2(self.a(x))",
        )
        bands = [e for e in t.of_kind(Kind.GPU_RANGE) if t.event_name(int(e)) == "CUDA graph replay"]
        assert len(bands) == 10
        assert int(t.lane_rows[int(t.lane[bands[0]])]) == 2  # the bands' row and the kernels' row


def test_view_with_a_wrong_inductor_dir_is_the_error_dialog(tmp_path: Path) -> None:
    async def body() -> str:
        app = GputopApp([TRACE], inductor_dir=str(tmp_path / "missing"))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, (ErrorDialog, MainScreen)))
            assert isinstance(app.screen, ErrorDialog)
            text = app.screen.text
            await press(pilot, "escape")
            await wait_until(pilot, lambda: app.return_code is not None)
            assert app.return_code == 2
            return text

    text = run(body())
    assert "--inductor-dir" in text and "not a folder" in text

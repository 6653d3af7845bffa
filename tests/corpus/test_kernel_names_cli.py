"""Issue 31, item 2 on the command line: in ``kernels`` and ``summary``'s top kernels at 80 columns, two rows whose
kernel names differ never read alike (``nvjet_sm90_tst_256x128_64x4_…`` three times before), on every corpus
trace. Rows whose short names are the same (one template, two instantiations) are ``--full-names``' matter."""

from __future__ import annotations

import json

import pytest

from gputop_trace.analysis.kernels import short_name
from gputop_trace.safe_text import clean
from tests.cli_run import run_cli
from tests.corpus.test_json_invariants import NOT_TRACES, _targets
from tests.paths import CORPUS

pytestmark = pytest.mark.corpus

TRACES = [rel for rel in _targets() if not any(rel.startswith(n) for n in NOT_TRACES)]


def _first_cells(out: str, after: str) -> list[str]:
    """The first cell of each body row of the first table printed after the line starting with ``after``."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(after))
    body = lines[start:]
    head = next(i for i, ln in enumerate(body) if ln.startswith("┡"))
    cells = []
    for ln in body[head + 1 :]:
        if not ln.startswith("│"):
            break
        cells.append(ln.split("│")[1].strip())
    return cells


@pytest.mark.parametrize("rel", TRACES)
def test_kernel_rows_read_differently_at_80_columns(
    rel: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    path = str(CORPUS / rel)
    code, out, _ = run_cli(capsys, "kernels", "--json", path)
    assert code == 0
    doc = json.loads(out)
    if doc.get("mode") == "range_profiler" or len(doc["kernels"]) < 2:
        return
    code, out, _ = run_cli(capsys, "kernels", path)
    assert code == 0
    shown = _first_cells(out, "Top ") if "Top " in out else _first_cells(out, "All ")
    names = [clean(short_name(k["name"])) for k in doc["kernels"]][: len(shown)]
    assert len(shown) == len(names) > 1
    by_label: dict[str, str] = {}
    for label, name in zip(shown, names, strict=True):
        assert by_label.setdefault(label, name) == name, (rel, label, by_label[label], name)
    code, out, _ = run_cli(capsys, "summary", "--json", path)
    top = [clean(short_name(k["name"])) for k in json.loads(out)["top_kernels"]]
    code, out, _ = run_cli(capsys, "summary", path)
    if len(top) > 1:
        shown = _first_cells(out, "Top ")
        by_label = {}
        for label, name in zip(shown, top, strict=True):
            assert by_label.setdefault(label, name) == name, (rel, label, by_label[label], name)

"""Property-based tests of the Nsight Compute CSV reader (hypothesis; budget ``GPUTOP_FUZZ_EXAMPLES``,
docs/fuzzing.md): real CSV pages from the corpus (raw and details pages, with and without ncu's ``==PROF==``
lines) are mutated — lines deleted, duplicated or swapped, cells replaced by any text or number, columns
dropped, quotes and separators broken, the file cut short — and ``gputop-trace ncu PAGE`` must either explain
the kernels (exit 0) or refuse with one paragraph (exit 2): never a traceback, never anything unsafe on the
terminal."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from gputop_trace.cli.main import main
from gputop_trace.errors import TraceError
from gputop_trace.parsers.ncu import load_csv, parse_number
from tests.conftest import CORPUS
from tests.fixtures.fuzz import SETTINGS
from tests.fixtures.hostile import unsafe_characters

PAGES = [
    "full_raw.csv",
    "tc_raw.csv",
    "metrics_raw.csv",
    "nvtx_step.csv",
    "nvtx_warm_raw.csv",
    "full_details.csv",
    "tc_details.csv",
    "metrics_details.csv",
    "details_basic.csv",
    "full_raw_base.csv",
]

cell_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "n/a",
            "nan",
            "inf",
            "-inf",
            "1e999",
            "-0",
            "3,189,083,820.66",
            "(256, 1, 1)",
            '"',
            ",",
            "\n",
            "ID",
            "Metric Name",
            "==PROF== x",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
)

Op = tuple[str, float, float, Any]
ops = st.lists(
    st.tuples(
        st.sampled_from(["delete", "duplicate", "swap", "cell", "drop_column", "add_column", "raw_insert"]),
        st.floats(0, 1),
        st.floats(0, 1),
        cell_values,
    ),
    max_size=6,
)


def mutate(text: str, operations: list[Op], cut: float | None) -> str:
    lines = text.splitlines()
    for op, a, b, value in operations:
        if not lines:
            break
        i, j = int(a * (len(lines) - 1)), int(b * (len(lines) - 1))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif op in ("cell", "drop_column", "add_column"):
            try:
                rows = list(csv.reader(io.StringIO("\n".join(lines))))
            except csv.Error:
                continue
            if not rows or not rows[min(i, len(rows) - 1)]:
                continue
            row = rows[min(i, len(rows) - 1)]
            col = int(b * (len(row) - 1))
            if op == "cell":
                row[col] = str(value)
            elif op == "drop_column":
                for r in rows:
                    if col < len(r):
                        del r[col]
            else:
                for r in rows:
                    r.insert(min(col, len(r)), str(value))
            out = io.StringIO()
            csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
            lines = out.getvalue().splitlines()
        else:  # raw text inserted anywhere, breaking quotes and separators
            at = int(b * len(lines[i]))
            lines[i] = lines[i][:at] + str(value) + lines[i][at:]
    body = "\n".join(lines) + "\n"
    return body[: int(cut * len(body))] if cut is not None else body


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.corpus
@SETTINGS
@given(page=st.sampled_from(PAGES), operations=ops, cut=st.one_of(st.none(), st.floats(0, 1)))
def test_mutated_csv_pages_are_explained_or_refused_cleanly(
    tmp_path: Path, page: str, operations: list[Op], cut: float | None
) -> None:
    text = (CORPUS / "ncu" / page).read_text(encoding="utf-8", errors="replace")
    path = tmp_path / "page.csv"
    path.write_text(mutate(text, operations, cut), encoding="utf-8", errors="surrogatepass")
    try:
        report = load_csv(str(path))
    except TraceError as e:
        assert e.message
    else:
        assert report.kernels
        for k in report.kernels:
            assert all(isinstance(v, float) and math.isfinite(v) for v in k.metrics.values())
    code, out, err = _run("ncu", str(path), "--json")
    event(f"exit code {code}")
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err
    if code == 0:
        doc = json.loads(out)
        assert doc["kernels"]
    code, out, err = _run("ncu", str(path))
    assert code in (0, 2), err
    assert "internal error" not in err
    assert unsafe_characters(out + err) == []


@SETTINGS
@given(st.text(max_size=30))
def test_parse_number_gives_a_finite_number_or_none(text: str) -> None:
    value = parse_number(text)
    assert value is None or math.isfinite(value)


# ---- found by fuzzing (docs/fuzzing.md) ------------------------------------------------------------------------
@pytest.mark.corpus
def test_found_by_fuzzing_rule_type_and_gpu_name_cells_are_cleaned(tmp_path: Path) -> None:
    """A details page whose "Rule Type" cell held an escape sequence: it reached the terminal raw (the rule's
    name and message were cleaned, its type was not); the GPU name beside the kernel name had the same gap."""
    text = (CORPUS / "ncu" / "full_details.csv").read_text(encoding="utf-8", errors="replace")
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"') :])))
    col = rows[0].index("Rule Type")
    for r in rows[1:]:
        if len(r) > col and r[col]:
            r[col] = "\x1b]52;c;cHduZWQ=\x07\x1b[31mWRN"
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path = tmp_path / "page.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    code, shown, err = _run("ncu", str(path))
    assert code == 0, err
    assert unsafe_characters(shown) == [] and "WRN" in shown

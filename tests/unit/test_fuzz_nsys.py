"""Property-based tests of the Nsight Systems loader (hypothesis; budget ``GPUTOP_FUZZ_EXAMPLES``, docs/fuzzing.md).

Two sources of input: small synthetic exports with the real nsys tables (any subset of them, typed or untyped
columns) filled with random rows — integers of every size, NULLs, REALs, text, blobs, names with any characters
— and real corpus exports copied to a temporary folder and damaged (bytes overwritten, the file cut short).
Whatever the input, the loader returns a sound model (on which the summary analyses run) or raises TraceError,
and it never writes next to the file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputop_trace.errors import TraceError
from gputop_trace.model.kinds import Kind
from gputop_trace.parsers.nsys import loader as nsys
from tests.conftest import CORPUS
from tests.fixtures.fuzz import SETTINGS, check_model, load_soundly_or_refuse
from tests.fixtures.nsys_synth import _TABLES, GPID, gpid, gtid

ID_COLUMNS = {"nameId", "demangledName", "shortName", "mangledName", "textId", "value"}
THREAD_COLUMNS = {"globalTid", "endGlobalTid"}
PROCESS_COLUMNS = {"globalPid"}

anything = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
times = st.integers(0, 50_000)


def cell(column: str) -> st.SearchStrategy[Any]:
    """Mostly what nsys writes in that column, sometimes anything at all."""
    if column in THREAD_COLUMNS:
        usual: st.SearchStrategy[Any] = st.sampled_from([gtid(4242), gtid(11), gtid(7, pid=99)])
    elif column in PROCESS_COLUMNS:
        usual = st.sampled_from([GPID, gpid(99)])
    elif column in ID_COLUMNS:
        usual = st.integers(0, 8)
    elif column in ("start", "end"):
        usual = times
    else:
        usual = st.integers(-2, 40)
    return st.one_of(usual, usual, usual, anything)


@st.composite
def export(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, list[dict[str, Any]]], bool]:
    tables = draw(st.sets(st.sampled_from(sorted(_TABLES)), min_size=1))
    if draw(st.booleans()):
        tables |= {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL"}
    schema = {t: [c.split()[0] for c in _TABLES[t]] for t in tables}
    rows: dict[str, list[dict[str, Any]]] = {}
    for t, cols in schema.items():
        if t == "StringIds":
            ids = range(1, 9)
            texts = draw(st.lists(st.text(max_size=20) | st.binary(max_size=12), min_size=8, max_size=8))
            rows[t] = [{"id": i, "value": v} for i, v in zip(ids, texts, strict=True)]
            continue
        n = draw(st.integers(0, 6))
        rows[t] = [{c: draw(cell(c)) for c in cols if draw(st.integers(0, 9))} for _ in range(n)]
    return schema, rows, draw(st.booleans())


def write_export(path: Path, schema: dict[str, list[str]], rows: dict[str, list[dict[str, Any]]], typed: bool) -> None:
    conn = sqlite3.connect(path)
    for t, cols in schema.items():
        decl = {c.split()[0]: " ".join(c.split()[1:2]) for c in _TABLES[t]} if typed else {}
        columns = ", ".join(f"{c} {decl.get(c, '')}".strip() for c in cols)
        conn.execute(f"CREATE TABLE {t} ({columns})")
        for r in rows.get(t, []):
            if r:
                names = ", ".join(r)
                marks = ", ".join("?" for _ in r)
                conn.execute(f"INSERT INTO {t} ({names}) VALUES ({marks})", list(r.values()))
    conn.commit()
    conn.close()


@SETTINGS
@given(ex=export())
def test_random_rows_of_every_type_load_soundly_or_fail_cleanly(
    tmp_path: Path, ex: tuple[dict[str, list[str]], dict[str, list[dict[str, Any]]], bool]
) -> None:
    folder = tmp_path / "x"
    folder.mkdir(exist_ok=True)
    path = folder / "report.sqlite"
    path.unlink(missing_ok=True)
    write_export(path, *ex)
    load_soundly_or_refuse(nsys.load, str(path))
    assert sorted(os.listdir(folder)) == ["report.sqlite"]  # no journal, WAL or shared-memory file


SMALL_EXPORTS = sorted(p.name for p in (CORPUS / "nsys").glob("*.sqlite") if p.stat().st_size < 900_000) or [
    "(corpus missing)"
]


@pytest.mark.corpus
@SETTINGS
@given(
    name=st.sampled_from(SMALL_EXPORTS),
    flips=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=16)), min_size=1, max_size=6),
    page_flips=st.lists(st.tuples(st.integers(1, 400), st.integers(0, 4095), st.integers(0, 255)), max_size=6),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_damaged_corpus_exports_load_soundly_or_fail_cleanly(
    tmp_path: Path,
    name: str,
    flips: list[tuple[float, bytes]],
    page_flips: list[tuple[int, int, int]],
    cut: float | None,
) -> None:
    data = bytearray((CORPUS / "nsys" / name).read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for where, junk in flips:
        at = int(where * (len(data) - 1))
        data[at : at + len(junk)] = junk
    for p, off, byte in page_flips:  # b-tree headers and cells of data pages: what corruption damages
        at = (p % max(1, len(data) // page)) * page + off % page
        if at < len(data):
            data[at] = byte
    if cut is not None:
        data = data[: int(cut * len(data))]
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(bytes(data))
    load_soundly_or_refuse(nsys.load, str(path))


def test_found_by_fuzzing_infinite_gpu_properties_are_left_unknown(tmp_path: Path) -> None:
    """A REAL infinity (or NaN, or a number beyond int64) in a GPU property crashed the loader (OverflowError)."""
    path = tmp_path / "inf.sqlite"
    schema = {t: [c.split()[0] for c in _TABLES[t]] for t in ("TARGET_INFO_GPU", "StringIds")}
    bad = [{"id": 0, "smCount": float("inf")}, {"id": 1, "smCount": float("nan"), "totalMemory": 2.0**70}]
    write_export(path, schema, {"TARGET_INFO_GPU": bad, "StringIds": []}, typed=False)
    t = nsys.load(str(path))
    check_model(t)
    assert all(g.sm_count is None and g.total_memory is None for g in t.meta.gpus)


@pytest.mark.corpus
def test_found_by_fuzzing_a_damaged_schema_with_undecodable_error_text_is_refused(tmp_path: Path) -> None:
    """SQLite's error message about this damage quotes bytes that are not UTF-8: Python raised
    UnicodeDecodeError instead of the usual one-paragraph 'damaged SQLite file' error."""
    data = bytearray((CORPUS / "nsys" / "Faraz-Nasir__CUDA---Recap__report1.sqlite").read_bytes())
    data[int(0.3203125 * (len(data) - 1))] = 0x80
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="damaged SQLite file"):
        nsys.load(str(path))


def test_huge_device_ids_and_register_counts_need_no_huge_tables() -> None:
    """Device ids, ranks and register counts come from the file: the kernel table sized count tables by their
    largest values (ids near 2^31 on two ranks asked for tens of GB). Found while hunting the fuzz run's OOM,
    which turned out to have another cause (the rowid test below)."""
    from gputop_trace.analysis.kernels import kernel_table
    from tests.synthetic import Synth

    s = Synth()
    far = s.stream(7, device=2**31 - 1, rank=2**31 - 1)
    near = s.stream(7, device=-7)
    s.kernel(far, 0, 10, "a", registers=2**31 - 1)
    s.kernel(far, 20, 10, "a", registers=2**31 - 1)
    s.kernel(near, 40, 5, "a", registers=32)
    rows = kernel_table(s.build())
    assert [(r.rank, r.device, r.count, r.total_ns) for r in rows] == [(2**31 - 1, 2**31 - 1, 2, 20), (0, -7, 1, 5)]
    assert [r.registers for r in rows] == [2**31 - 1, 32]


@pytest.mark.corpus
def test_found_by_fuzzing_a_rowid_far_beyond_the_row_count_is_read_in_row_sized_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged export whose kernel table held a rowid near 2^62 made the reader plan one chunk per
    ``chunk_rows`` rowids of the whole span: billions of ranges, and the long fuzz run was OOM-killed. The rows
    of a real export, given rowids that far apart (the largest possible one too), all load, quickly."""
    import shutil
    import time

    from gputop_trace.parsers.nsys import columns as nsys_columns

    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 256)  # many chunks on either side of the jump
    src = CORPUS / "nsys" / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
    whole = nsys.load(str(src))
    path = tmp_path / "sparse.sqlite"
    shutil.copy(src, path)
    conn = sqlite3.connect(path)
    n = conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert n > 3000
    conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = rowid + 4611686018427387904 WHERE rowid > ?", (n // 2,))
    conn.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = 9223372036854775807 WHERE rowid = "
        "(SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
    )
    conn.commit()
    conn.close()
    t0 = time.perf_counter()
    sparse = nsys.load(str(path))
    assert time.perf_counter() - t0 < 60, "sparse rowids must not be walked one chunk span at a time"
    assert sparse.count_by_kind() == whole.count_by_kind()
    assert int(sparse.dur_ns[sparse.of_kind(Kind.KERNEL)].sum()) == int(whole.dur_ns[whole.of_kind(Kind.KERNEL)].sum())

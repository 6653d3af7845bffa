"""The bad-input matrix: every kind of broken, hostile or odd input the issue lists, each with its expected outcome,
run through the command line exactly as a user would meet it.

An outcome is one of two things:

- :class:`Fails`: exit code 2 and one clear paragraph on stderr (``gputop-trace: error: ...``: what was wrong,
  where, what to do) holding the given words — never a traceback, never "internal error";
- :class:`Loads`: exit code 0, exactly the given number of events (or ncu kernels), and a warning holding each
  of the given words (no words: no warning at all — the input is odd but nothing was lost).

Chrome JSON (plain and gzip), Nsight Systems SQLite exports and Nsight Compute reports and CSV pages all go
through the same two outcomes. Cases read ``summary --json`` (events per kind, warnings); ncu cases ``ncu --json``.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import CORPUS
from tests.fixtures.nsys_synth import SynthExport


@dataclass(frozen=True)
class Fails:
    """Exit code 2 with one paragraph holding every one of ``words``."""

    words: tuple[str, ...]


@dataclass(frozen=True)
class Loads:
    """Exit code 0 with ``events`` events (ncu: kernels), and a warning holding each of ``warnings`` (none: no
    warning). ``check(path, doc)`` adds case-specific checks."""

    events: int | None
    warnings: tuple[str, ...] = ()
    check: Callable[[Path, dict[str, Any]], None] | None = field(default=None, compare=False)


Make = Callable[[Path], Path]


@dataclass(frozen=True)
class Case:
    id: str
    make: Make
    outcome: Fails | Loads
    command: tuple[str, ...] = ("summary", "--json")
    corpus: bool = False


# ---------------------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------------------
X = {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 5, "dur": 2}
XB = json.dumps(X).encode()


def _ev(i: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10.5 * i, "dur": 2.25}


EVENTS = [_ev(i) for i in range(40)]
DOC = json.dumps({"traceEvents": EVENTS, "traceName": "t"}).encode()
#: byte offset just after each complete event of DOC
EVENT_ENDS = [DOC.index(b"}", DOC.index(f'"op{i}"'.encode())) + 1 for i in range(40)]


def raw(data: bytes, name: str = "t.json") -> Make:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_bytes(data)
        return p

    return make


def events_doc(*events: dict[str, Any] | bytes, head: bytes = b'{"traceEvents":[', tail: bytes = b"]}") -> bytes:
    return head + b",".join(e if isinstance(e, bytes) else json.dumps(e).encode() for e in events) + tail


def _complete_before(plain_len: int) -> int:
    """Events of DOC complete within its first ``plain_len`` bytes."""
    return sum(1 for end in EVENT_ENDS if end <= plain_len)


ARRAY_END = DOC.index(b"]") + 1


def _truncated(k: int, available: int) -> tuple[str, ...]:
    """The warning words for ``k`` complete events out of ``available`` decompressed bytes."""
    lost = available - EVENT_ENDS[k - 1]
    if lost:
        return ("Trace is truncated", f"the last {lost:,} bytes")
    return ("Trace is truncated", "right after a complete event", "every event in the file was loaded")


def json_cut(cut: int) -> Case:
    k = _complete_before(cut)
    if cut == len(DOC) - 1:  # only the final "}" is missing: every event and the array are complete
        outcome: Fails | Loads = Loads(40)
    elif cut > ARRAY_END:  # cut inside the metadata after the events
        outcome = Loads(40, ("bytes after the traceEvents array are cut short or damaged",))
    elif k == 0:
        words = ("before any trace event",) if cut < DOC.index(b"[") else ("cut short before its first complete event",)
        outcome = Fails(words)
    else:
        outcome = Loads(k, _truncated(k, cut))
    return Case(f"json-cut-at-{cut}", raw(DOC[:cut]), outcome)


GZ = gzip.compress(DOC * 1, mtime=0)


def gzip_cut(cut: int) -> Case:
    d = zlib.decompressobj(47)
    plain = d.decompress(GZ[:cut])
    k = _complete_before(len(plain))
    if not plain:
        outcome: Fails | Loads = Fails(("gzip file cut short before any trace data",))
    elif k == 0:
        outcome = Fails(("cut short", "before"))
    elif plain == DOC:  # only (part of) the 8-byte trailer is missing
        outcome = Loads(40, ("gzip stream ends before its checksum", "every event was read"))
    elif len(plain) > ARRAY_END:
        outcome = Loads(40, ("gzip stream ends early", "bytes after the traceEvents array are cut short"))
    else:
        outcome = Loads(k, ("gzip stream ends early", *_truncated(k, len(plain))[1:]))
    return Case(f"gzip-cut-at-{cut}", raw(GZ[:cut], "t.json.gz"), outcome)


def bad_crc() -> bytes:
    data = bytearray(GZ)
    data[-8] ^= 0xFF  # the CRC32 in the trailer
    return bytes(data)


def two_members() -> bytes:
    half = len(DOC) // 2
    return gzip.compress(DOC[:half], mtime=0) + gzip.compress(DOC[half:], mtime=0)


def one_line(n: int) -> bytes:
    ev = b'{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.125,"dur":1.5,"args":{"device":0,"stream":7}}'
    return b'{"traceEvents":[' + b",".join(ev % (i % 97, i) for i in range(n)) + b"]}"


def one_line_file(n: int) -> Make:
    def make(tmp: Path) -> Path:
        p = tmp / "one_line.json"
        p.write_bytes(one_line(n))
        assert p.stat().st_size > 100_000_000 and b"\n" not in p.read_bytes()[:1000]
        return p

    return make


DEEP = b"[" * 1_000_000 + b"]" * 1_000_000

# wrong types in every field the loader reads: each case holds a good event, then the field set to every
# wrong type in turn (string, list, object, bool, null, float, a number beyond 64 bits, a negative number)
WRONG = ["x", [1], {"a": 1}, True, None, 1.5, 10**30, -1]
KERNEL = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 2,
          "args": {"device": 0, "stream": 7, "correlation": 1, "External id": 1, "grid": [1, 1, 1],
                   "block": [32, 1, 1]}}  # fmt: skip
REPAIRED = "had fields of the wrong type or out of range"
SKIPPED = "had unreadable fields"
ARG_FIELDS = ["External id", "correlation", "device", "size", "grid", "block", "registers per thread",
              "shared memory", "blocks per SM", "warps per SM", "est. achieved occupancy %", "bytes",
              "Collective name", "In msg nelems", "Out msg nelems", "Group size", "Process Group Name", "dtype",
              "name", "sort_index", "labels", "correlation_id", "memcpy_details", "kernel_details"]  # fmt: skip
#: event field → (events loaded: the good one plus the kept ones, warning words)
EVENT_FIELDS: dict[str, tuple[int, tuple[str, ...]]] = {
    "ph": (1, (SKIPPED, "phases this viewer does not draw were ignored: x")),
    "name": (9, (REPAIRED,)),
    "cat": (9, (REPAIRED,)),
    "pid": (9, (REPAIRED,)),
    "tid": (9, (REPAIRED,)),
    "ts": (3, (SKIPPED,)),  # only 1.5 and -1 are times
    "dur": (9, (REPAIRED, "negative duration")),
    "id": (9, (REPAIRED,)),
    "s": (9, (REPAIRED,)),
    "bp": (9, (REPAIRED,)),
    "args": (9, (REPAIRED,)),
}


def wrong_event_field(name: str) -> bytes:
    evs: list[dict[str, Any]] = [X]
    for v in WRONG:
        e = json.loads(json.dumps(KERNEL))
        e[name] = v
        evs.append(e)
    return events_doc(*evs)


def wrong_arg_field(name: str) -> bytes:
    evs: list[dict[str, Any]] = [X]
    for v in WRONG:
        e = json.loads(json.dumps(KERNEL))
        e["args"][name] = v
        evs.append(e)
    return events_doc(*evs)


def wrong_metadata() -> bytes:
    evs: list[dict[str, Any]] = [X]
    for what in ("process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels"):
        for v in WRONG:
            evs.append({"ph": "M", "name": what, "pid": 1, "tid": 1, "args": {"name": v, "sort_index": v, "labels": v}})
            evs.append({"ph": "M", "name": what, "pid": 1, "tid": 1, "args": v})
    return events_doc(*evs)


def wrong_header() -> bytes:
    head = json.dumps({"schemaVersion": [1], "deviceProperties": "H200", "distributedInfo": {"rank": "zero"},
                       "baseTimeNanoseconds": "soon", "displayTimeUnit": 3})[:-1].encode()  # fmt: skip
    return events_doc(X, head=head + b', "traceEvents": [', tail=b"]}")


# ---- SQLite (nsys) --------------------------------------------------------------------------------------------
PID = 4242


def nsys_export(extra_osrt: int = 0) -> SynthExport:
    """One process and GPU: a launch, a kernel, a copy, a memset, a sync, NVTX ranges, OS calls (15 events)."""
    ex = SynthExport()
    ex.process("python3")
    ex.thread(PID, "python3")
    ex.thread(11, "worker")
    ex.gpu(0)
    ex.runtime(1000, 1500, tid=PID, corr=5, name="cudaLaunchKernel_v7000")
    ex.kernel(2000, 3000, corr=5)
    ex.runtime(1600, 1700, tid=PID, corr=6, name="cudaMemcpyAsync_v3020")
    ex.memcpy(3000, 3500, corr=6)
    ex.runtime(1750, 1800, tid=PID, corr=7, name="cudaMemsetAsync_v3020")
    ex.memset(3500, 3600, corr=7)
    ex.runtime(4000, 6000, tid=PID, corr=8, name="cudaStreamSynchronize_v3020")
    ex.sync(4100, 5900, corr=8)
    ex.nvtx(500, 7000, tid=PID, registered="step 0")
    ex.nvtx(900, 3000, tid=PID, text="forward")
    for i in range(1 + extra_osrt):
        ex.osrt(7000 + i * 10, 7005 + i * 10, tid=11, name=f"poll{i % 7}")
    return ex


NSYS_EVENTS = 11  # kernel, memcpy, memset, 4 API calls, a sync, 2 ranges, an OS call
BIG = 3000  # extra OS-runtime rows, so that the file spans many pages


def sqlite_file(mutate: Callable[[Path], None] | None = None, *, extra_osrt: int = 0, **write: Any) -> Make:
    def make(tmp: Path) -> Path:
        p = nsys_export(extra_osrt).write(tmp / "report.sqlite", **write)
        if mutate is not None:
            mutate(p)
        return p

    return make


def sql(*statements: str) -> Callable[[Path], None]:
    def run(p: Path) -> None:
        conn = sqlite3.connect(p)
        for s in statements:
            conn.execute(s)
        conn.commit()
        conn.close()

    return run


def cut_to(fraction: float | None = None, nbytes: int | None = None) -> Callable[[Path], None]:
    def cut(p: Path) -> None:
        data = p.read_bytes()
        p.write_bytes(data[: nbytes if nbytes is not None else int(len(data) * (fraction or 0))])

    return cut


def scribble_btree_headers(p: Path) -> None:
    data = bytearray(p.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for i in range(2, len(data) // page):  # every page but the schema page
        data[i * page : i * page + 12] = b"\xff" * 12
    p.write_bytes(bytes(data))


def scribble_last_page(p: Path) -> None:
    data = bytearray(p.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[-page:] = os.urandom(page)
    p.write_bytes(bytes(data))


def not_nsys(p: Path) -> None:
    p.unlink()
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.commit()
    conn.close()


def empty_db(p: Path) -> None:
    p.unlink()
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA user_version = 1")  # writes the header; no tables
    conn.commit()
    conn.close()


def untouched(path: Path, doc: dict[str, Any]) -> None:
    """The export with views and triggers: nothing ran, nothing was written next to it."""
    assert sorted(os.listdir(path.parent)) == [path.name]  # no -journal, -wal or -shm file
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)
    conn.close()


def hashed(make: Make) -> Make:
    """Record the file's hash beside it (in the case folder) so the check can compare."""

    def wrapped(tmp: Path) -> Path:
        p = make(tmp)
        (tmp.parent / f"{tmp.name}.sha256").write_text(hashlib.sha256(p.read_bytes()).hexdigest())
        return p

    return wrapped


def unchanged(path: Path, doc: dict[str, Any]) -> None:
    untouched(path, doc)
    want = (path.parent.parent / f"{path.parent.name}.sha256").read_text()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == want


# ---- Nsight Compute ------------------------------------------------------------------------------------------
def ncu_rep_cut(nbytes: int | None = None, fraction: float | None = None) -> Make:
    def make(tmp: Path) -> Path:
        data = (CORPUS / "ncu" / "full.ncu-rep").read_bytes()
        p = tmp / "report.ncu-rep"
        p.write_bytes(data[: nbytes if nbytes is not None else int(len(data) * (fraction or 0))])
        return p

    return make


def ncu_page(src: str, *, drop: tuple[str, ...] = (), cut: float | None = None) -> Make:
    """A corpus CSV page with columns left out, or cut short in its last row."""

    def make(tmp: Path) -> Path:
        text = (CORPUS / "ncu" / src).read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
        rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
        keep = [j for j, h in enumerate(rows[0]) if h not in drop]
        out = io.StringIO()
        w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for r in rows:
            w.writerow([r[j] for j in keep if j < len(r)])
        body = "\n".join(lines[:start]) + ("\n" if start else "") + out.getvalue()
        if cut is not None:
            last = body.rstrip("\n").rfind("\n") + 1
            body = body[: last + int((len(body) - last) * cut)]
        p = tmp / f"page-{len(drop)}.csv"
        p.write_text(body, encoding="utf-8")
        return p

    return make


# ---------------------------------------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------------------------------------
NCU = ("ncu", "--json")
FIRST_EVENT = EVENT_ENDS[0]

CASES: list[Case] = [
    # --- JSON cut short anywhere: every complete event before the cut, and how many bytes were lost ---------
    *[
        json_cut(c)
        for c in sorted(
            {
                5,
                DOC.index(b"[") + 1,
                FIRST_EVENT - 3,
                FIRST_EVENT + 4,
                EVENT_ENDS[6] + 20,
                EVENT_ENDS[19] - 1,
                (EVENT_ENDS[38] + EVENT_ENDS[39]) // 2,
                EVENT_ENDS[39],
                len(DOC) - 2,
                len(DOC) - 1,
            }
        )
    ],
    *[gzip_cut(c) for c in sorted({12, 40, len(GZ) // 3, len(GZ) // 2, len(GZ) - 30, len(GZ) - 9, len(GZ) - 4})],
    Case("gzip-bad-crc", raw(bad_crc(), "t.json.gz"), Loads(40, ("checksum does not match",))),
    Case("gzip-two-members", raw(two_members(), "t.json.gz"), Loads(40)),
    Case("gzip-then-garbage", raw(GZ + b"garbage!", "t.json.gz"), Loads(40, ("not gzip follow",))),
    Case("gzip-empty", raw(gzip.compress(b""), "t.json.gz"), Fails(("not a Chrome trace", "empty"))),
    # --- encodings and characters ---------------------------------------------------------------------------
    Case("utf8-bom", raw(b"\xef\xbb\xbf" + events_doc(X)), Loads(1)),
    Case("utf8-bom-gzip", raw(gzip.compress(b"\xef\xbb\xbf" + events_doc(X)), "t.json.gz"), Loads(1)),
    Case(
        "invalid-utf8",
        raw(events_doc(b'{"ph":"X","name":"a\xff\xfeb","pid":1,"tid":1,"ts":1,"dur":2}', X)),
        Loads(2, ("not valid UTF-8",)),
    ),
    Case(
        "control-characters",
        raw(events_doc(b'{"ph":"X","name":"a\x01\x1b[31mred","pid":1,"tid":1,"ts":1,"dur":2}')),
        Loads(1, ("raw control characters",)),
    ),
    Case("lone-surrogate-in-header", raw(events_doc(X, head=b'{"traceName": "a\\ud800b", "traceEvents": [')), Loads(1)),
    Case(
        "lone-surrogate-in-name",
        raw(events_doc(b'{"ph":"X","name":"a\\udfffb","pid":1,"tid":1,"ts":1,"dur":2}')),
        Loads(1, ("unpaired",)),
    ),
    # --- numbers -------------------------------------------------------------------------------------------
    Case("nan-ts", raw(events_doc(b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":NaN,"dur":2}', X)), Loads(1, (SKIPPED,))),
    Case(
        "infinity-dur",
        raw(events_doc(b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":3,"dur":Infinity}', X)),
        Loads(2, ("not strict JSON",)),
    ),
    Case(
        "huge-int-arg",
        raw(
            events_doc(
                b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":'
                b"123456789012345678901234567890}}",
                X,
            )
        ),
        Loads(2, ("beyond 64 bits",)),
    ),
    Case(
        "huge-pid",
        raw(events_doc(b'{"ph":"X","name":"a","pid":99999999999999999999999,"tid":1,"ts":1,"dur":2}')),
        Loads(1, (REPAIRED,)),
    ),
    Case("ts-beyond-int64-ns", raw(events_doc({**X, "ts": 1.7e18}, X)), Loads(1, (SKIPPED, "out of range"))),
    Case("dur-beyond-int64-ns", raw(events_doc({**X, "dur": 1e300}, X)), Loads(2, (REPAIRED, "dur is out of range"))),
    Case("negative-dur", raw(events_doc({**X, "dur": -2}, X)), Loads(2, ("negative duration",))),
    Case("zero-dur", raw(events_doc({**X, "dur": 0}, X)), Loads(2)),
    # --- structure -----------------------------------------------------------------------------------------
    Case(
        "b-without-e",
        raw(events_doc({"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1}, X)),
        Loads(2, ("never ended",)),
    ),
    Case("e-without-b", raw(events_doc({"ph": "E", "pid": 1, "tid": 1, "ts": 1}, X)), Loads(1, ("no matching begin",))),
    Case(
        "events-out-of-order",
        raw(
            events_doc(
                X, {"ph": "E", "pid": 1, "tid": 1, "ts": 30}, {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 10}
            )
        ),
        Loads(2),
    ),
    Case(
        "duplicate-correlation-ids",
        raw(
            events_doc(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": 1,
                    "dur": 2,
                    "args": {"correlation": 7},
                },
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": 4,
                    "dur": 2,
                    "args": {"correlation": 7},
                },
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "k",
                    "pid": 0,
                    "tid": 7,
                    "ts": 5,
                    "dur": 2,
                    "args": {"correlation": 7, "device": 0},
                },
            )
        ),
        Loads(3),
    ),
    Case(
        "unknown-phase",
        raw(events_doc({"ph": "O", "name": "snap", "pid": 1, "tid": 1, "ts": 1, "id": "0x1"}, X)),
        Loads(1, ("phases this viewer does not draw",)),
    ),
    Case(
        "ts-missing",
        raw(events_doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "dur": 2}, X)),
        Loads(1, ("without ts",)),
    ),
    Case("empty-trace-events", raw(b'{"traceEvents": []}'), Loads(0, ("holds no events",))),
    Case("one-line-100-mb", one_line_file(900_000), Loads(900_000)),
    Case(
        "deep-nesting-in-args",
        raw(events_doc(X, b'{"ph":"X","name":"deep","pid":1,"tid":1,"ts":1,"dur":1,"args":{"a":' + DEEP + b"}}", X)),
        Loads(2, ("nest JSON deeper",)),
    ),
    Case(
        "deep-nesting-after-events",
        raw(events_doc(X, tail=b'], "meta": ' + DEEP + b"}")),
        Loads(1, ("keys after the traceEvents array nest JSON too deeply",)),
    ),
    Case("deep-nesting-only", raw(DEEP), Fails(("nests JSON too deeply",))),
    Case(
        "deep-nesting-before-events",
        raw(b'{"meta": ' + DEEP + b', "traceEvents": [' + XB + b"]}"),
        Fails(("nests JSON too deeply",)),
    ),
    Case("array-of-non-events", raw(b"[1, 2, 3]"), Fails(("none of its 3 trace entries is a usable event",))),
    Case(
        "object-without-events", raw(b'{"model": "gpt", "layers": 12}'), Fails(("not a Chrome trace", "model, layers"))
    ),
    # --- wrong types in every field the loader reads ------------------------------------------------------
    *[Case(f"wrong-type-{f}", raw(wrong_event_field(f)), Loads(n, words)) for f, (n, words) in EVENT_FIELDS.items()],
    *[
        Case(f"wrong-type-args.{f.replace(' ', '_')}", raw(wrong_arg_field(f)), Loads(9, (REPAIRED,)))
        for f in ARG_FIELDS
    ],
    # fields the loader does not read (a device event's stream is its tid): any type, no warning (HIP's "0x0")
    *[Case(f"unread-args.{f}", raw(wrong_arg_field(f)), Loads(9)) for f in ("stream", "kind")],
    Case("wrong-type-metadata-args", raw(wrong_metadata()), Loads(1, (REPAIRED,))),
    Case("wrong-type-header-keys", raw(wrong_header()), Loads(1)),
    # --- files that are not traces at all --------------------------------------------------------------------
    Case("missing-file", lambda tmp: tmp / "nope.json", Fails(("No such file", "nope.json"))),
    Case("empty-file", raw(b""), Fails(("empty (0 bytes)", "record the profile again"))),
    Case("only-white-space", raw(b" \n\t \n"), Fails(("text file", "not a profile"))),
    Case("not-json-text", raw(b"this is a log file, not json\n", "notes.json"), Fails(("notes.json", "not a profile"))),
    Case("binary-file", raw(bytes(range(256)) * 4, "core.bin"), Fails(("binary file",))),
    Case("folder-without-traces", lambda tmp: tmp, Fails(("holds no traces",))),
    Case("ncu-report-given-to-summary", raw(b"NVR\x00stand-in", "prof.ncu-rep"), Fails(("gputop-trace ncu",))),
    # --- SQLite ----------------------------------------------------------------------------------------------
    Case("sqlite-cut-in-header", sqlite_file(cut_to(nbytes=60)), Fails(("truncated SQLite file", "100-byte header"))),
    *[
        Case(
            f"sqlite-cut-at-{int(f * 100)}pct",
            sqlite_file(cut_to(f), extra_osrt=BIG),
            Fails(("truncated SQLite file",)),
        )
        for f in (0.02, 0.3, 0.5, 0.97)
    ],
    Case(
        "sqlite-cut-at-a-page-boundary",
        sqlite_file(cut_to(nbytes=4096 * 3), extra_osrt=BIG),
        Fails(("truncated SQLite file",)),
    ),
    Case(
        "sqlite-corrupted-pages",
        sqlite_file(scribble_btree_headers, extra_osrt=BIG),
        Fails(("damaged SQLite file", "nsys export --type sqlite")),
    ),
    Case(
        "sqlite-random-last-page",
        sqlite_file(scribble_last_page, extra_osrt=BIG),
        Fails(("SQLite", "nsys export --type sqlite")),
    ),
    Case(
        "sqlite-header-then-garbage",
        raw(b"SQLite format 3\x00" + bytes(range(256)) * 20, "report.sqlite"),
        Fails(("SQLite", "nsys export --type sqlite")),
    ),
    Case("sqlite-not-an-nsys-export", sqlite_file(not_nsys), Fails(("not an Nsight Systems export", "users"))),
    Case("sqlite-without-tables", sqlite_file(empty_db), Fails(("not an Nsight Systems export", "no tables"))),
    Case("text-file-named-sqlite", raw(b"id,name\n1,x\n", "report.sqlite"), Fails(("not a SQLite database",))),
    Case("nsys-triggers-and-views", hashed(sqlite_file(views_and_triggers=True)), Loads(NSYS_EVENTS, check=unchanged)),
    Case(
        "nsys-kernel-table-replaced-by-a-view",
        sqlite_file(
            sql(
                "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k2",
                "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k2",
            )
        ),
        Loads(NSYS_EVENTS - 1, ("is a view, not a table",)),
    ),
    Case(
        "nsys-text-in-time-columns",
        sqlite_file(sql("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'abc'")),
        Loads(NSYS_EVENTS, ("not integers", "start (1 row)")),
    ),
    Case(
        "nsys-reals-and-text-in-osrt",
        sqlite_file(sql("UPDATE OSRT_API SET start = 7000.75, end = 'x'")),
        Loads(NSYS_EVENTS, ("not integers", "end (1 row), start (1 row)", "ends before it starts")),
    ),
    Case(
        "nsys-text-in-copy-columns",
        sqlite_file(sql("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 'lots'")),
        Loads(NSYS_EVENTS, ("not integers", "bytes (1 row)")),
    ),
    Case(
        "nsys-blob-names-and-numbers-as-names",
        sqlite_file(
            sql("UPDATE StringIds SET value = 12345 WHERE id = 1", "UPDATE NVTX_EVENTS SET text = x'1b5b33316d'")
        ),
        Loads(NSYS_EVENTS),
    ),
    Case(
        "nsys-ids-as-text",
        sqlite_file(
            sql(
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 'gpu0'",
                "UPDATE ThreadNames SET globalTid = 'main'",
                "UPDATE TARGET_INFO_GPU SET smCount = 'many', name = 5",
            )
        ),
        Loads(NSYS_EVENTS),
    ),  # fmt: skip  (SQLite reads them as numbers, as it does in any query)
    Case(
        "nsys-without-gpu-tables",
        sqlite_file(
            omit=(
                "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_MEMCPY",
                "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_RUNTIME",
                "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
            )
        ),
        Loads(3, ("no GPU activity",)),
    ),
    # --- Nsight Compute --------------------------------------------------------------------------------------
    *[
        Case(f"ncu-report-cut-{label}", cut, Fails(("cut short",)), NCU, corpus=True)
        for label, cut in (
            ("in-header", ncu_rep_cut(nbytes=100)),
            ("at-1pct", ncu_rep_cut(fraction=0.01)),
            ("at-50pct", ncu_rep_cut(fraction=0.5)),
            ("at-99pct", ncu_rep_cut(fraction=0.99)),
        )
    ],
    Case(
        "ncu-report-not-nvr",
        raw(b"PK\x03\x04 not a report", "r.ncu-rep"),
        Fails(("not an Nsight Compute report",)),
        NCU,
    ),
    Case("ncu-raw-page", ncu_page("full_raw.csv"), Loads(1), NCU, corpus=True),
    # the page lists 4 kernels; the last one's row is cut
    Case("ncu-raw-page-cut-mid-row", ncu_page("metrics_raw.csv", cut=0.5), Loads(3, ("cut short",)), NCU, corpus=True),
    Case(
        "ncu-details-page-cut-mid-row",
        ncu_page("full_details.csv", cut=0.5),
        Loads(1, ("cut short",)),
        NCU,
        corpus=True,
    ),
    Case(
        "ncu-raw-page-without-id",
        ncu_page("full_raw.csv", drop=("ID",)),
        Fails(("holds no ncu metrics",)),
        NCU,
        corpus=True,
    ),
    Case(
        "ncu-raw-page-without-kernel-name", ncu_page("full_raw.csv", drop=("Kernel Name",)), Loads(1), NCU, corpus=True
    ),
    Case(
        "ncu-details-without-metric-value",
        ncu_page("full_details.csv", drop=("Metric Value",)),
        Fails(("holds no ncu metrics", "'Metric Value' column")),
        NCU,
        corpus=True,
    ),
    Case(
        "ncu-details-without-metric-unit",
        ncu_page("full_details.csv", drop=("Metric Unit",)),
        Loads(1),
        NCU,
        corpus=True,
    ),
    Case(
        "ncu-details-without-rule-columns",
        ncu_page("full_details.csv", drop=("Rule Name", "Rule Description")),
        Loads(1),
        NCU,
        corpus=True,
    ),
    Case(
        "ncu-csv-only-profiler-noise",
        raw(b"==PROF== Connected to process 1\n==PROF== Disconnected\n", "p.csv"),
        Fails(("holds no ncu metrics",)),
        NCU,
    ),
    Case("ncu-csv-empty", raw(b"", "p.csv"), Fails(("holds no ncu metrics",)), NCU),
]


def _one_paragraph(err: str) -> str:
    assert err.startswith("gputop-trace: error:"), err
    assert "\n\n" not in err.strip()
    assert "internal error" not in err
    return " ".join(err.split())


def _count(command: tuple[str, ...], doc: dict[str, Any]) -> int:
    if command[0] == "ncu":
        return len(doc["kernels"])
    return sum(doc["events"].values())


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=[pytest.mark.corpus] if c.corpus else []) for c in CASES]
)
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setenv("GPUTOP_TRACE_NO_CACHE", "1")
    folder = tmp_path / "case"
    folder.mkdir()
    path = case.make(folder)
    code, out, err = run_cli(capsys, *case.command, str(path))
    assert "Traceback" not in out + err
    if isinstance(case.outcome, Fails):
        assert code == 2, (out, err)
        text = _one_paragraph(err)
        for word in case.outcome.words:
            assert word in text, (word, text)
        return
    assert code == 0, err
    doc = json.loads(out)
    warnings: list[str] = doc["warnings"]
    if case.outcome.events is not None:
        assert _count(case.command, doc) == case.outcome.events, warnings
    if not case.outcome.warnings:
        assert warnings == [], warnings
    for word in case.outcome.warnings:
        assert any(word in w for w in warnings), (word, warnings)
    if case.outcome.check is not None:
        case.outcome.check(path, doc)


def test_every_issue_case_is_in_the_matrix() -> None:
    """The cases the issue lists, by name: a case removed by mistake fails here."""
    ids = {c.id for c in CASES}
    for prefix in ("json-cut-at-", "gzip-cut-at-", "sqlite-cut-at-", "ncu-report-cut-", "wrong-type-"):
        assert sum(i.startswith(prefix) for i in ids) >= 4, prefix
    issue_cases = (
        "gzip-bad-crc gzip-two-members utf8-bom invalid-utf8 control-characters nan-ts infinity-dur huge-int-arg "
        "negative-dur zero-dur b-without-e e-without-b duplicate-correlation-ids events-out-of-order "
        "deep-nesting-in-args one-line-100-mb empty-trace-events sqlite-corrupted-pages sqlite-not-an-nsys-export "
        "nsys-text-in-time-columns nsys-triggers-and-views ncu-details-without-metric-value"
    )
    for want in issue_cases.split():
        assert want in ids, want
    assert {f"wrong-type-{f}" for f in EVENT_FIELDS} <= ids
    assert {f"wrong-type-args.{f.replace(' ', '_')}" for f in ARG_FIELDS} <= ids


@pytest.mark.parametrize("case_id", ["json-cut-at-5", "gzip-bad-crc", "sqlite-not-an-nsys-export"])
def test_a_real_process_gives_the_same_exit_code_and_no_traceback(case_id: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == case_id)
    path = case.make(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", *case.command, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300", "GPUTOP_TRACE_NO_CACHE": "1"},
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == (2 if isinstance(case.outcome, Fails) else 0), proc.stderr

"""Build large benchmark inputs from the real corpus (never into git: everything goes to a work folder).

A real trace is repeated along the time axis: copy ``k`` has every timestamp shifted by ``k`` times the trace's
span (plus a gap), and its correlation ids, External ids and flow ids shifted past every id of the copies
before it, so the result reads like one long profile of the same workload, not like the same events stacked.

Outputs (file names are fixed, so benchmarks find them):

- ``kineto_100mb.json`` / ``kineto_1gb.json`` and their ``.json.gz``: Kineto JSON of about 100 MB and 1 GB
  (uncompressed), and ``kineto_180mb.json`` (~180 MB, the whole-command benchmark's large input), written in
  Kineto's own layout (the element text of the source, only the numbers changed);
- ``kineto_epoch_100mb.json``: the 100 MB input with its timestamps rebased onto the Unix epoch (16 digits
  before the point, as traces recorded with Kineto's default clock elsewhere have);
- ``nsys_10m.sqlite``: an Nsight Systems export with 10 M kernel rows (every CUPTI activity table repeated with
  the same factor, so launches keep their runtime calls);
- ``model_10m/``: a 10 M-event :class:`~gputop_trace.model.trace.Trace` in the columnar cache layout
  (:func:`gputop_trace.load.cache.write_trace`), opened memory-mapped with :func:`open_model`.

Every output is reused when it already exists with the same recipe (``make_large.json`` in the folder records
them), so ``benchmarks/run.py`` can call :func:`ensure` freely.

Usage: ``python benchmarks/make_large.py [--out DIR] [--only kineto_100mb,...]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _find_corpus() -> Path:
    env = os.environ.get("GPUTOP_CORPUS")
    if env:
        return Path(env).resolve()
    for up in (ROOT.parent, *ROOT.parent.parents):  # a worktree may sit deeper than the main checkout
        if (up / "shared" / "corpus" / "README.md").is_file():
            return up / "shared" / "corpus"
    return ROOT.parent / "shared" / "corpus"


CORPUS = _find_corpus()
#: the trace the Kineto inputs repeat: the corpus GPT trace, else (a checkout without the corpus, e.g. a GPU box
#: given only the repository) the bundled sample recorded from the same workload
KINETO_SOURCE = CORPUS / "kineto" / "h200_gpt_train_small.json.gz"
if not KINETO_SOURCE.exists():
    KINETO_SOURCE = ROOT / "gputop_trace" / "sample_traces" / "h200_train_step.json.gz"
NSYS_SOURCE = CORPUS / "nsys" / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
DEFAULT_OUT = Path(os.environ.get("GPUTOP_BENCH_DIR", Path(tempfile.gettempdir()) / "gputop-bench"))

MB = 1_000_000
#: name → (kind, parameter)
RECIPES: dict[str, tuple[str, int]] = {
    "kineto_100mb.json": ("kineto", 100 * MB),
    "kineto_100mb.json.gz": ("gzip", 100 * MB),
    "kineto_1gb.json": ("kineto", 1000 * MB),
    # a whole command on a trace of the size users time it on (issue 29: bench_commands.py)
    "kineto_180mb.json": ("kineto", 180 * MB),
    "kineto_1gb.json.gz": ("gzip", 1000 * MB),
    # the 100 MB input rebased onto Unix-epoch timestamps (µs since 1970: 16 digits before the point, as most
    # traces recorded outside this corpus have)
    "kineto_epoch_100mb.json": ("kineto_epoch", 100 * MB),
    "nsys_10m.sqlite": ("nsys", 10_000_000),
    "model_10m": ("model", 10_000_000),
}
RECIPE_VERSION = 1
GAP_NS = 1_000_000  # between two copies of the trace
#: where the epoch variant's first event lands: 2026-10-01 00:00:00 UTC, in ns
EPOCH_START_NS = 1_790_812_800_000_000_000


# --------------------------------------------------------------------------------------------------------
# Kineto JSON
# --------------------------------------------------------------------------------------------------------
_NUMBER_FIELD = re.compile(rb'"(ts|id|correlation|External id)"\s*:\s*(-?\d+(?:\.\d+)?)')
_PH = re.compile(rb'"ph"\s*:\s*"(.)"')


@dataclasses.dataclass
class _Template:
    """One event's text cut around the numbers that change per copy."""

    parts: list[bytes]  # len(fields) + 1 pieces of text
    fields: list[tuple[str, int]]  # ("ts", ns) or ("corr"|"ext"|"flow", id)


def _read_source(path: Path) -> bytes:
    import gzip

    with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
        return f.read()


class _Doc(msgspec.Struct):
    traceEvents: list[msgspec.Raw]  # noqa: N815 - the JSON key


def _split_document(text: bytes) -> tuple[bytes, list[bytes], bytes, bytes]:
    """(text before the first event, event texts, separator between events, text after the last event)."""
    elems = [bytes(r) for r in msgspec.json.decode(text, type=_Doc).traceEvents]
    if len(elems) < 2:
        raise ValueError("the source trace needs at least two events")
    pos = 0
    spans: list[tuple[int, int]] = []
    for e in elems:  # elements are exact substrings of the document, in order
        start = text.index(e, pos)
        pos = start + len(e)
        spans.append((start, pos))
    head = text[: spans[0][0]]
    sep = text[spans[0][1] : spans[1][0]]
    tail = text[spans[-1][1] :]
    return head, elems, sep, tail


def _template(elem: bytes) -> _Template:
    parts: list[bytes] = []
    fields: list[tuple[str, int]] = []
    last = 0
    for m in _NUMBER_FIELD.finditer(elem):
        key, num = m.group(1), m.group(2)
        if key == b"ts":
            fields.append(("ts", int(Decimal(num.decode()) * 1000)))
        elif key == b"id":
            fields.append(("flow", int(num)))
        elif key == b"correlation":
            fields.append(("corr", int(num)))
        else:
            fields.append(("ext", int(num)))
        parts.append(elem[last : m.start(2)])
        last = m.end(2)
    parts.append(elem[last:])
    return _Template(parts, fields)


def _fmt_us(ns: int) -> bytes:
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}".encode()


def kineto_copies(source: Path, target_bytes: int, *, epoch: bool = False) -> Iterator[bytes]:
    """The text of a Kineto trace repeated along time until it holds about ``target_bytes``, in pieces;
    ``epoch``: every timestamp moved so that the first is :data:`EPOCH_START_NS` (Unix-epoch µs in the text)."""
    text = _read_source(source)
    head, elems, sep, tail = _split_document(text)
    templates = [_template(e) for e in elems]
    is_meta = [bool((m := _PH.search(e)) and m.group(1) == b"M") for e in elems]
    ts = [v for t in templates for k, v in t.fields if k == "ts"]
    span = max(ts) - min(ts)
    durs = [
        int(Decimal(m.group(1).decode()) * 1000)
        for e in elems
        for m in re.finditer(rb'"dur"\s*:\s*(-?\d+(?:\.\d+)?)', e)
    ]
    period = span + max(durs, default=0) + GAP_NS
    period = int(math.ceil(period / 1000) * 1000)
    rebase = (EPOCH_START_NS - min(ts)) // 1000 * 1000 if epoch else 0  # whole µs: the digits after the point stay
    max_id = {
        k: max([v for t in templates for kk, v in t.fields if kk == k], default=0) + 1 for k in ("flow", "corr", "ext")
    }
    id_stride = max(max_id["flow"], max_id["corr"])  # ac2g flow ids are correlation ids
    per_copy = len(sep.join(e for e, m in zip(elems, is_meta, strict=True) if not m)) + len(sep)
    copies = max(1, round((target_bytes - len(head) - len(tail)) / per_copy))
    yield head
    first = True
    for k in range(copies):
        shift = {"ts": rebase + k * period, "flow": k * id_stride, "corr": k * id_stride, "ext": k * max_id["ext"]}
        out: list[bytes] = []
        for t, meta in zip(templates, is_meta, strict=True):
            if meta and k:
                continue
            if not first:
                out.append(sep)
            first = False
            pieces = [t.parts[0]]
            for (key, v), part in zip(t.fields, t.parts[1:], strict=True):
                pieces.append(_fmt_us(v + shift["ts"]) if key == "ts" else str(v + shift[key]).encode())
                pieces.append(part)
            out.append(b"".join(pieces))
        yield b"".join(out)
    yield tail


def write_kineto(source: Path, out: Path, target_bytes: int, *, epoch: bool = False) -> None:
    """Write a repeated Kineto trace of about ``target_bytes`` (atomically: temp file, then rename)."""
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        for piece in kineto_copies(source, target_bytes, epoch=epoch):
            f.write(piece)
    os.replace(tmp, out)


def write_gzip(plain: Path, out: Path) -> None:
    """Gzip a file (ISA-L when installed: fast at a ratio close to gzip -6)."""
    try:
        from isal import igzip as gz  # type: ignore[import-not-found,unused-ignore]

        level = 2
    except ImportError:  # pragma: no cover
        import gzip as gz  # type: ignore[no-redef]

        level = 6
    tmp = out.with_name(out.name + ".tmp")
    with open(plain, "rb") as src, gz.open(tmp, "wb", compresslevel=level) as dst:
        shutil.copyfileobj(src, dst, 16 << 20)
    os.replace(tmp, out)


# --------------------------------------------------------------------------------------------------------
# Nsight Systems SQLite
# --------------------------------------------------------------------------------------------------------
NSYS_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
)


def write_nsys(source: Path, out: Path, kernel_rows: int) -> None:
    """An nsys export with ``kernel_rows`` kernel rows: the GPU activity and runtime tables of ``source``
    repeated along time (start/end shifted, correlation ids kept unique), everything else as it was."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.copyfile(source, tmp)
    con = sqlite3.connect(tmp)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        tables = [t for t in NSYS_TABLES if con.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (t,)
        ).fetchone()]  # fmt: skip
        lo, hi, top = 2**63, 0, 0
        for t in tables:
            a, b, c = con.execute(f'SELECT min(start), max("end"), max(correlationId) FROM {t}').fetchone()
            if a is not None:
                lo, hi, top = min(lo, a), max(hi, b), max(top, c or 0)
        base_kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        period = hi - lo + GAP_NS
        stride = top + 1
        copies = math.ceil(kernel_rows / base_kernels)
        for t in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
            shifted = ", ".join(
                f'"{c}" + :shift'
                if c in ("start", "end")
                else ("correlationId + :corr" if c == "correlationId" else f'"{c}"')
                for c in cols
            )
            con.execute(f"CREATE TEMP TABLE base_{t} AS SELECT * FROM {t}")
            names = ", ".join(f'"{c}"' for c in cols)
            for k in range(1, copies):
                limit = ""
                if t == "CUPTI_ACTIVITY_KIND_KERNEL" and k == copies - 1:
                    limit = f" LIMIT {kernel_rows - base_kernels * (copies - 1)}"
                con.execute(
                    f"INSERT INTO {t} ({names}) SELECT {shifted} FROM base_{t} ORDER BY start{limit}",
                    {"shift": k * period, "corr": k * stride},
                )
            con.commit()
        got = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        if got != kernel_rows:
            raise RuntimeError(f"made {got} kernel rows, wanted {kernel_rows}")
    finally:
        con.close()
    os.replace(tmp, out)


# --------------------------------------------------------------------------------------------------------
# a 10 M-event model for the timeline and the analyses
# --------------------------------------------------------------------------------------------------------
def tiled_model(base: Any, n_events: int) -> Any:
    """A :class:`Trace` made of copies of ``base`` one after the other in time, ``n_events`` events in all
    (the last copy cut short); lanes, names and metadata are the base's."""
    from gputop_trace.model.tables import CopyTable, CounterSeries, FlowTable, KernelTable
    from gputop_trace.model.trace import Trace

    n0 = len(base)
    copies = math.ceil(n_events / n0)
    period = int(base.span_ns) + GAP_NS
    # new index of (copy k, base event i): events stay grouped by lane, copies one after the other in a lane
    lo = base.lane_offsets
    lane_len = np.diff(lo)
    lane_of = base.lane.astype(np.int64)
    within = np.arange(n0, dtype=np.int64) - lo[lane_of]

    def new_index(k: np.ndarray[Any, Any], i: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        ln = lane_of[i]
        return lo[ln] * copies + k * lane_len[ln] + within[i]

    k_all = np.repeat(np.arange(copies, dtype=np.int64), n0)
    i_all = np.tile(np.arange(n0, dtype=np.int64), copies)
    dest = new_index(k_all, i_all)
    total = n0 * copies

    def spread(col: np.ndarray[Any, Any], shift: int = 0) -> np.ndarray[Any, Any]:
        out = np.empty(total, dtype=col.dtype)
        vals = np.tile(col, copies)
        if shift:
            vals = vals + k_all * np.int64(shift)
        out[dest] = vals
        return out

    cols = {
        "start_ns": spread(base.start_ns, period),
        "dur_ns": spread(base.dur_ns),
        "kind": spread(base.kind),
        "lane": spread(base.lane),
        "name": spread(base.name),
        "depth": spread(base.depth),
        "corr": spread(base.corr),
        "ext": spread(base.ext),
    }
    # cut to n_events: drop the last copy's tail (keeps every lane sorted)
    keep = np.ones(total, dtype=bool)
    keep[dest[(k_all == copies - 1) & (i_all >= n_events - n0 * (copies - 1))]] = False
    renumber = np.cumsum(keep) - 1
    cols = {k: v[keep] for k, v in cols.items()}
    lane_offsets = np.searchsorted(cols["lane"], np.arange(len(base.lanes) + 1)).astype(np.int64)

    def side(table: Any, cls: Any) -> Any:
        f = {name: getattr(table, name) for name in table.__dataclass_fields__}
        kk = np.repeat(np.arange(copies, dtype=np.int64), len(table))
        ev = new_index(kk, np.tile(f["event"], copies))
        ok = keep[ev]
        out = {name: np.tile(v, (copies,) + (1,) * (v.ndim - 1))[ok] for name, v in f.items() if name != "event"}
        out["event"] = renumber[ev[ok]]
        order = np.argsort(out["event"], kind="stable")
        return cls(**{name: v[order] for name, v in out.items()})

    kk = np.repeat(np.arange(copies, dtype=np.int64), len(base.flows))
    src = new_index(kk, np.tile(base.flows.src, copies))
    dst = new_index(kk, np.tile(base.flows.dst, copies))
    ok = keep[src] & keep[dst]
    flows = FlowTable(src=renumber[src[ok]], dst=renumber[dst[ok]], kind=np.tile(base.flows.kind, copies)[ok])
    counters = tuple(
        CounterSeries(
            c.name,
            (c.ts_ns[None, :] + np.arange(copies, dtype=np.int64)[:, None] * period).ravel(),
            np.tile(c.values, copies),
            c.rank,
            c.pid,
        )
        for c in base.counters
    )
    return Trace(
        **cols,
        names=base.names,
        lanes=base.lanes,
        lane_offsets=lane_offsets,
        kernels=side(base.kernels, KernelTable),
        copies=side(base.copies, CopyTable),
        flows=flows,
        counters=counters,
        meta=base.meta,
    )


def write_model(out: Path, n_events: int, source: Path = KINETO_SOURCE) -> None:
    """Save a ``n_events`` tiled model of ``source`` in the columnar layout (see :func:`open_model`)."""
    from gputop_trace.load import cache_entry
    from gputop_trace.parsers.chrome import loader as chrome

    cache_entry.save_trace(tiled_model(chrome.load(str(source)), n_events), out)


def open_model(path: Path) -> Any:
    """The saved model, memory-mapped (a :class:`gputop_trace.model.trace.Trace`)."""
    from gputop_trace.load import cache_entry

    return cache_entry.open_trace(path)


# --------------------------------------------------------------------------------------------------------
# building what is missing
# --------------------------------------------------------------------------------------------------------
def _manifest(out: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((out / "make_large.json").read_text())
        return data
    except (OSError, ValueError):
        return {}


def ensure(out: Path = DEFAULT_OUT, only: list[str] | None = None, log: Any = print) -> dict[str, Path]:
    """Build every input that is not in ``out`` yet (or was made by another recipe); returns name → path."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(out)
    done: dict[str, Path] = {}
    for name, (kind, param) in RECIPES.items():
        if only and name not in only:
            continue
        path = out / name
        recipe: dict[str, Any] = {"kind": kind, "param": param, "version": RECIPE_VERSION}
        if kind.startswith("kineto") or kind == "gzip":
            recipe["source"] = KINETO_SOURCE.name
        if manifest.get(name, {}).get("recipe") == recipe and path.exists():
            done[name] = path
            continue
        t0 = time.perf_counter()
        if kind in ("kineto", "kineto_epoch"):
            write_kineto(KINETO_SOURCE, path, param, epoch=kind == "kineto_epoch")
        elif kind == "gzip":
            plain = out / name.removesuffix(".gz")
            if not plain.exists() or _manifest(out).get(plain.name, {}).get("recipe", {}).get("param") != param:
                ensure(out, [plain.name], log)
            write_gzip(plain, path)
        elif kind == "nsys":
            write_nsys(NSYS_SOURCE, path, param)
        elif kind == "model":
            write_model(path, param)
        size = _size(path)
        log(f"made {name}: {size / MB:,.1f} MB in {time.perf_counter() - t0:.1f} s")
        manifest = _manifest(out)
        manifest[name] = {"recipe": recipe, "bytes": size}
        (out / "make_large.json").write_text(json.dumps(manifest, indent=1))
        done[name] = path
    return done


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"work folder (default {DEFAULT_OUT})")
    ap.add_argument("--only", help=f"comma-separated subset of: {', '.join(RECIPES)}")
    args = ap.parse_args(argv)
    ensure(args.out, args.only.split(",") if args.only else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

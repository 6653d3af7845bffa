"""The fleet result as a Parquet file: one row per rank (failed ranks too, with their error), nested figures as
list and struct columns, and the rest of the fleet document (findings, errors, fleet statistics, warnings) as
JSON in the file's key-value metadata under :data:`META_KEY`. pyarrow is imported only here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gputop_trace.errors import TraceError

META_KEY = b"gputop_trace.fleet"


def _schema() -> Any:
    import pyarrow as pa

    from gputop_trace.analysis.gaps.causes import CAUSES

    i64, f64, s = pa.int64(), pa.float64(), pa.string()
    cause = pa.struct([("count", i64), ("total_ns", i64)])
    kernel = pa.struct(
        [("name", s), ("count", i64), ("total_ns", i64), ("mean_ns", f64), ("max_ns", i64), ("pct", f64)]
    )
    fields = [
        ("rank", i64),
        ("path", s),
        ("error", s),
        ("error_kind", s),
        ("traceback", s),
        ("format", s),
        ("producer", s),
        ("version", s),
        ("file_bytes", i64),
        ("world_size", i64),
        ("devices", pa.list_(i64)),
        ("t0_ns", i64),
        ("steps", i64),
        ("step_ns", pa.list_(i64)),
        ("step_start_ns", pa.list_(i64)),
        ("mean_step_ns", i64),
        ("span_ns", i64),
        ("busy_ns", i64),
        ("idle_ns", i64),
        ("busy_pct", f64),
        ("gap_threshold_ns", i64),
        ("gaps_ns", i64),
        ("idle_by_cause", pa.struct([(c, cause) for c in CAUSES])),
        ("top_kernels", pa.list_(kernel)),
        ("kernel_ns", i64),
        ("copy_ns", i64),
        ("copy_bytes", i64),
        ("exposed_copy_ns", i64),
        ("collectives", i64),
        ("collective_ns", i64),
        ("exposed_collective_ns", i64),
        ("collective_wait_ns", i64),
        ("imposed_wait_ns", i64),
        ("times_last", i64),
        ("collective_instances", i64),
        ("late_median_ns", i64),
        ("late_max_ns", i64),
        ("arrival_late_ns", i64),
        ("arrival_late_median_ns", i64),
        ("arrival_late_max_ns", i64),
        ("arrival_z", f64),
        ("late_outlier", pa.bool_()),
        ("step_z", f64),
        ("step_outlier", pa.bool_()),
        ("clock_offset_ns", i64),
        ("warnings", pa.list_(s)),
        ("load_s", f64),
        ("analyse_s", f64),
        ("cpu_s", f64),
        ("coll_ops", pa.list_(s)),
        ("coll_groups", pa.list_(s)),
        ("coll_op", pa.list_(pa.int32())),
        ("coll_group", pa.list_(pa.int32())),
        ("coll_start_ns", pa.list_(i64)),
        ("coll_end_ns", pa.list_(i64)),
    ]
    return pa.schema(fields)


def parquet_rows(doc: dict[str, Any], summaries: Any) -> list[dict[str, Any]]:
    """Rows for the Parquet file: the document's ranks with their collective sequences, then the error rows."""
    from gputop_trace.fleet.table import SEQUENCE_FIELDS

    by_key = {(s.rank, s.path): s for s in summaries}
    rows: list[dict[str, Any]] = []
    for r in doc["ranks"]:
        s = by_key[(r["rank"], r["path"])]
        rows.append({**r, **{k: list(getattr(s, k)) for k in SEQUENCE_FIELDS}, "error": None})
    for e in doc["errors"]:
        rows.append(
            {
                "rank": e["rank"],
                "path": e["path"],
                "error": e["error"],
                "error_kind": e["kind"],
                "traceback": e["traceback"],
                "file_bytes": e["file_bytes"],
            }
        )
    return rows


def write_fleet(path: str, doc: dict[str, Any], summaries: Any) -> None:
    """Write the fleet document and summaries as Parquet at ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    rows = parquet_rows(doc, summaries)
    table = pa.Table.from_pylist(rows, schema=schema)
    meta = {k: v for k, v in doc.items() if k != "ranks"}
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    try:
        pq.write_table(table, path, compression="zstd")
    except OSError as e:
        raise TraceError(f"Could not write {path}: {e}. Choose another --out path.", path=path) from None


@dataclass(frozen=True)
class FleetFile:
    """A fleet Parquet file read back: analysed rows (by rank), error rows, and the fleet document's other parts
    (``findings``, ``errors``, ``fleet``, ``warnings``, ``source`` …)."""

    path: str
    rows: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    doc: dict[str, Any]

    @property
    def findings(self) -> list[dict[str, Any]]:
        """The fleet findings, most important first."""
        return list(self.doc.get("findings", []))


def is_fleet_parquet(path: str) -> bool:
    """Whether ``path`` starts like a Parquet file (``PAR1``); cheap, no pyarrow import."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def read_fleet(path: str, *, columns: list[str] | None = None) -> FleetFile:
    """Read a fleet Parquet file written by :func:`write_fleet` (``columns``: only these, plus rank/path/error)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TraceError("Reading a fleet Parquet file needs pyarrow: pip install 'gputop-trace[fleet]'.") from None
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError) as e:
        raise TraceError(f"{path} is not a readable Parquet file ({e}).", path=path) from None
    meta = schema.metadata or {}
    if META_KEY not in meta:
        raise TraceError(
            f"{path} is a Parquet file, but not one 'gputop-trace fleet --out' wrote (no fleet metadata in it).",
            path=path,
        )
    cols = None if columns is None else list(dict.fromkeys(["rank", "path", "error", *columns]))
    table = pq.read_table(path, columns=cols)
    doc = json.loads(meta[META_KEY].decode())
    rows = table.to_pylist()
    ok = sorted((r for r in rows if r.get("error") is None), key=lambda r: r["rank"])
    bad = [r for r in rows if r.get("error") is not None]
    return FleetFile(path=path, rows=ok, errors=bad, doc=doc)

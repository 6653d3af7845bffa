"""The ``--json`` envelope every command shares (see the JSON contract in README.md) and CSV writing."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gputop_trace import __version__

if TYPE_CHECKING:  # the model (numpy) is not needed to write a document
    from gputop_trace.model.trace import Trace

SCHEMA_VERSION = 2  # 2: a finding's place in the list is `priority` (it was `rank`, read as a GPU rank)


def source_block(trace: Trace, path: str | Sequence[str]) -> dict[str, Any]:
    """The ``source`` object: path, format, producer, ranks, truncated bytes (and, after ``--no-python``, how
    many ``python_function`` events were left out; when the job has more ranks than were loaded, ``job``:
    world size, ranks loaded and the note every view shows first)."""
    from gputop_trace.analysis.ranks.job import job_coverage
    from gputop_trace.model.trace import python_left_out

    p = path if isinstance(path, str) else (path[0] if len(path) == 1 else list(path))
    block: dict[str, Any] = {
        "path": p,
        "format": trace.meta.format,
        "producer": trace.meta.producer,
        "ranks": list(trace.meta.ranks),
        "truncated_bytes": int(trace.meta.truncated_bytes),
    }
    left_out = python_left_out(trace)
    if left_out:  # --no-python: present only then
        block["python_function_left_out"] = left_out
    job = job_coverage(trace.meta)
    if job is not None:  # an incomplete job: present only then
        block["job"] = job.as_json()
    return block


def envelope(command: str, trace: Trace | None, path: str | Sequence[str], **payload: Any) -> dict[str, Any]:
    """A complete JSON document: schema version, tool, version, command, source, warnings, then ``payload``."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "gputop-trace",
        "version": __version__,
        "command": command,
    }
    if trace is not None:
        doc["source"] = source_block(trace, path)
        doc["warnings"] = list(trace.meta.warnings)
    else:
        doc["source"] = {"path": path if isinstance(path, str) else list(path)}
        doc["warnings"] = []
    doc.update(payload)
    return doc


def _jsonable(o: Any) -> Any:
    if isinstance(o, float):
        return None if math.isnan(o) or math.isinf(o) else o
    if isinstance(o, Mapping):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if hasattr(o, "item") and callable(o.item):  # numpy scalars
        return _jsonable(o.item())
    return o


def dumps(doc: Mapping[str, Any]) -> str:
    """JSON text of a document (NaN/inf become null; numpy scalars become Python numbers; characters a terminal
    could act on are written as ``\\uXXXX`` escapes)."""
    from gputop_trace.safe_text import escape_for_json

    # names stay exact for parsers, but nothing in them can act on a terminal the JSON is printed to
    return escape_for_json(json.dumps(_jsonable(doc), indent=2, ensure_ascii=False))


def to_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text with a header row; nested values are written as JSON."""
    import csv  # only CSV output needs it

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_csv_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def _csv_cell(v: Any) -> Any:
    v = _jsonable(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    if isinstance(v, str):
        from gputop_trace.safe_text import escape_for_csv

        return escape_for_csv(v)  # control characters as visible escapes: CSV is printed to terminals too
    return "" if v is None else v

"""Lenient decoding of a chunk that the typed structs reject: element by element, repairing events with fields of
the wrong type or range (or skipping them), and, as a last resort, the standard library's JSON for NaN, raw
control characters and invalid UTF-8."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from gputop_trace.parsers.chrome.document import Chunk, NotAnArray
from gputop_trace.parsers.chrome.structs import (
    DEC_ANY,
    DEC_COUNTER,
    DEC_ONE,
    DEC_RAW_LIST,
    Args,
    CounterEvent,
    Event,
)

#: the longest example of an event a warning quotes, in characters
EXAMPLE_CHARS = 160


def quote_example(raw: bytes) -> str:
    """An event's JSON text to quote in a warning: whole when short, else cut after a complete field (never in the
    middle of a number or a name), with an ellipsis."""
    text = " ".join(raw.decode("utf-8", "replace").split())
    if len(text) <= EXAMPLE_CHARS:
        return text
    cut = text.rfind(", ", 0, EXAMPLE_CHARS)
    return (text[:cut] if cut > 0 else text[:EXAMPLE_CHARS]) + ", …"


def lenient_chunk(text: bytes) -> Chunk:
    """Element-by-element decoding: events with unusable fields are repaired when possible, else skipped."""
    raws = DEC_RAW_LIST.decode(text)
    events: list[Any] = []
    counters: list[CounterEvent] = []
    skipped = repaired = 0
    example = repaired_example = ""
    for raw in raws:
        ev: Event | None
        try:
            ev = DEC_ONE.decode(raw)
        except msgspec.MsgspecError:
            try:
                obj = DEC_ANY.decode(raw)
            except msgspec.MsgspecError:
                obj = None
            ev = _coerce(obj)
            if ev is None:
                skipped += 1
                example = example or quote_example(bytes(raw))
                continue
            repaired += 1
            repaired_example = repaired_example or quote_example(bytes(raw))
        events.append(ev)
        if ev.ph == "C":
            try:
                counters.append(DEC_COUNTER.decode(raw))
            except msgspec.MsgspecError:
                pass
    return Chunk(
        events,
        counters,
        skipped=skipped,
        skipped_example=example,
        repaired=repaired,
        repaired_example=repaired_example,
    )


def python_chunk(text: bytes) -> Chunk:
    """Last resort for bytes msgspec rejects (NaN, Infinity, raw control characters, invalid UTF-8)."""
    try:
        decoded = text.decode("utf-8")
        note = (
            "non-standard JSON (NaN, Infinity, raw control characters or unpaired \\uD800-style surrogates in "
            "strings) was read leniently"
        )
    except UnicodeDecodeError:
        decoded = text.decode("utf-8", "replace")
        note = "bytes that are not valid UTF-8 were replaced with U+FFFD in names"
    import json  # (here, not at the top: the lenient path is rare, and json is a few ms of every load's import)

    try:
        items = json.loads(decoded, strict=False)
    except (ValueError, RecursionError):
        raise NotAnArray from None
    if not isinstance(items, list):
        raise NotAnArray
    events: list[Any] = []
    counters: list[CounterEvent] = []
    skipped = 0
    example = ""
    for obj in items:
        ev = _coerce(obj)
        if ev is None:
            skipped += 1
            example = example or quote_example(repr(obj).encode())
            continue
        events.append(ev)
        if ev.ph == "C" and isinstance(obj, dict):
            args = obj.get("args")
            counters.append(
                CounterEvent(
                    ph="C",
                    name=ev.name,
                    pid=ev.pid,
                    tid=ev.tid,
                    ts=msgspec.Raw(repr(ev.ts).encode()),
                    args=args if isinstance(args, dict) else None,
                )
            )
    return Chunk(events, counters, skipped=skipped, skipped_example=example, notes=(note,))


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
    else:
        return None
    if math.isnan(f) or math.isinf(f):
        return None
    return f


def _coerce(obj: Any) -> Event | None:
    """Make an :class:`Event` out of a decoded object with wrong or missing types, or give up (None)."""
    if not isinstance(obj, dict):
        return None
    ph = obj.get("ph")
    if not isinstance(ph, str):
        return None
    ts = _num(obj.get("ts"))
    if ts is None:
        if ph == "M":
            ts = 0.0
        else:
            return None
    dur = _num(obj.get("dur", 0))
    if dur is None:
        dur = 0.0
    pid = obj.get("pid", 0)
    tid = obj.get("tid", 0)
    pid = pid if isinstance(pid, (int, str)) and not isinstance(pid, bool) else str(pid)
    tid = tid if isinstance(tid, (int, str)) and not isinstance(tid, bool) else str(tid)
    if isinstance(pid, int) and not -(2**63) <= pid < 2**63:
        pid = str(pid)
    if isinstance(tid, int) and not -(2**63) <= tid < 2**63:
        tid = str(tid)
    name = obj.get("name", "")
    cat = obj.get("cat", "")
    ident = obj.get("id")
    args = _coerce_args(obj.get("args"))
    return Event(
        ph=ph,
        name=name if isinstance(name, str) else _json_text(name),
        cat=cat if isinstance(cat, str) else str(cat),
        pid=pid,
        tid=tid,
        ts=ts,
        dur=dur,
        id=ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None,
        s=obj.get("s", "") if isinstance(obj.get("s", ""), str) else "",
        bp=obj.get("bp", "") if isinstance(obj.get("bp", ""), str) else "",
        args=args,
    )


def _coerce_args(a: Any) -> Any:
    if not isinstance(a, dict):
        return None
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(Args):
        key = f.encode_name
        if key not in a:
            continue
        v = a[key]
        try:
            out[f.name] = msgspec.convert(v, f.type, strict=False)
        except (msgspec.ValidationError, TypeError, OverflowError):
            continue
    try:
        return Args(**out)
    except TypeError:
        return None


def _json_text(value: Any) -> str:
    """A non-string name as JSON text (json imported here: the lenient path is rare, and json is a few ms of every
    load's import)."""
    import json

    return json.dumps(value)

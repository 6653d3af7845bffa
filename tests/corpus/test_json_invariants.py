"""Invariants of every command's JSON on every trace of the corpus (issue 14, 3b).

On each Kineto, JAX, nsys (``.sqlite``) and external trace (each file alone, and each multi-rank folder as one
job), ``summary``, ``kernels``, ``gaps``, ``transfers``, ``ranges``, ``ranks``, ``ops`` and ``critical-path --json``
must hold: every percentage (``*_pct``, ``pct``, and any "N% of" in the words) within 0–100 and every
share/severity within 0–1; busy + idle = span per device; no rank waits for itself and a rank's collective wait is
at most its collective time; an operator's self time is at most its total and every operator was called; the clock
offsets in the JSON are those the loader applied (``clock_offset_ns == -rank_shift_ns``); a CUPTI range-profiler
trace's kernel table and summary keep their mode (no timed rows, every counter per row); every step in ``summary``
is its recorded range unless it is listed as cut with a reason that holds (issue 31, 4), and its host table (a
profile with no GPU activity) has shares that add up to at most 100 % (issue 31, 1); an nsys export's ``ops`` says
why it has no FLOPs (``flops_unavailable``) and has none; a step's critical path is no longer than the step and its
segments, breakdown and items sum exactly to it. Loads go through the trace cache (one parse per file for the
module); files that are not traces are refused.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest

from gputop_trace.load.loader import load_paths
from tests.cli_run import run_cli
from tests.paths import CORPUS

COMMANDS = ("summary", "kernels", "gaps", "transfers", "ranges", "ranks", "ops", "critical-path")
#: corpus files that are not traces: refused with a message (a PyTorch execution trace, a memory export)
NOT_TRACES = ("external/execution_trace/benchmark_simple_add_et.json.gz", "external/memory_analysis/")
#: folders that hold the ranks of one job
JOBS = ("kineto/h200_ddp_2gpu", "external/trace_filter")

_PCT_WORDS = re.compile(r"(\d+(?:\.\d+)?)% of\b")
_SELF_WAIT = re.compile(r"Rank (\d+) waits [^(]* for the straggling rank (\d+)")


def _targets() -> list[str]:
    if not CORPUS.is_dir():
        return []
    files = [p for sub in ("kineto", "jax", "external") for p in sorted((CORPUS / sub).rglob("*")) if p.is_file()]
    files += sorted((CORPUS / "nsys").glob("*.sqlite"))
    rels = [str(p.relative_to(CORPUS)) for p in files if not p.name.lower().startswith("readme")]
    return rels + [j for j in JOBS if (CORPUS / j).is_dir()]


def _walk(x: Any, path: str, errors: list[str]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            p = f"{path}.{k}"
            if isinstance(v, bool) or v is None:
                continue
            if isinstance(v, (int, float)):
                if (k == "pct" or k.endswith("_pct")) and not -1e-9 <= v <= 100 + 1e-6:
                    errors.append(f"{p} = {v}")
                if (k in ("share", "severity", "share_last") or k.endswith("_share")) and not 0 <= v <= 1 + 1e-9:
                    errors.append(f"{p} = {v}")
            else:
                _walk(v, p, errors)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _walk(v, f"{path}[{i}]", errors)
    elif isinstance(x, str):
        for m in _PCT_WORDS.finditer(x):
            if float(m.group(1)) > 100:
                errors.append(f"{path}: {x[:160]!r}")
        w = _SELF_WAIT.search(x)
        if w and w.group(1) == w.group(2):
            errors.append(f"{path}: a rank waits for itself: {x[:160]!r}")


def _check_devices(doc: dict[str, Any], errors: list[str]) -> None:
    for key in ("devices", "gaps"):
        for d in doc.get(key) or []:
            keys = {"busy_ns", "idle_ns", "span_ns"}
            if isinstance(d, dict) and keys <= d.keys() and d["busy_ns"] + d["idle_ns"] != d["span_ns"]:
                errors.append(f"{key}: busy {d['busy_ns']} + idle {d['idle_ns']} != span {d['span_ns']}")


def _check_profiler(doc: dict[str, Any], errors: list[str]) -> None:
    """A range-profiler kernel table has no timed rows, and every profiled row has every counter the document
    names; an activity table has no profiled rows; ``summary`` says the same mode."""
    if doc.get("command") == "kernels":
        if doc["mode"] not in ("activity", "range_profiler"):
            errors.append(f"kernels: mode {doc['mode']!r}")
        if doc["mode"] == "range_profiler" and doc["kernels"]:
            errors.append("kernels: timed rows in a range-profiler trace")
        if doc["mode"] == "activity" and doc["profiled_kernels"] and doc["kernels"]:
            errors.append("kernels: profiled rows next to timed rows")
        for r in doc["profiled_kernels"]:
            if r["ranges"] < 1 or list(r["counters"]) != doc["counters"]:
                errors.append(f"kernels: profiled row {r['name'][:60]!r} lacks counters or ranges")
    profiled = doc.get("command") == "summary" and doc["range_profiler"] is not None
    if profiled and (doc["devices"] or not any(f["kind"] == "range_profiler_only" for f in doc["findings"])):
        errors.append("summary: a range-profiler trace with device busy time or without its finding")


def _check_waits(doc: dict[str, Any], errors: list[str]) -> None:
    for r in doc.get("ranks") or []:
        if isinstance(r, dict) and "collective_wait_ns" in r and r["collective_wait_ns"] > r["collective_ns"]:
            errors.append(f"rank {r['rank']} waits {r['collective_wait_ns']} > its collectives {r['collective_ns']}")
    for f in doc.get("findings") or []:
        if f.get("kind") != "collective_wait":
            continue
        ev = f["evidence"]
        if str(ev["rank"]) in (ev.get("waited_for") or {}):
            errors.append(f"finding {f['title']!r}: rank waits for itself")
        if ev["wait_ns"] > ev["collective_ns"]:
            errors.append(f"finding {f['title']!r}: wait over its collective time")


def _check_critical_path(doc: dict[str, Any], errors: list[str]) -> None:
    """Every step's path is no longer than the step, and its segments and breakdown sum exactly to its length;
    a what-if never makes the step longer, and gone saves at least what 2x faster saves."""
    for st in doc.get("steps") or [] if doc.get("command") == "critical-path" else []:
        where = f"critical-path rank {st['rank']} step {st['step']}"
        if not 0 <= st["length_ns"] <= st["dur_ns"]:
            errors.append(f"{where}: length {st['length_ns']} outside 0..{st['dur_ns']}")
        for key in ("segments", "breakdown", "items"):
            total = sum(x["dur_ns" if key == "segments" else "total_ns"] for x in st[key])
            if total != st["length_ns"]:
                errors.append(f"{where}: {key} sum to {total}, not {st['length_ns']}")
        for w in st["what_if"]:
            if not 0 <= w["saves_if_2x_ns"] <= w["saves_if_gone_ns"] <= w["step_ns"]:
                errors.append(
                    f"{where}: what-if {w['name'][:60]!r} saves {w['saves_if_2x_ns']}/{w['saves_if_gone_ns']}"
                )


def _check_ops(doc: dict[str, Any], errors: list[str]) -> None:
    for r in doc.get("ops") or []:
        if r["count"] < 1:
            errors.append(f"ops: {r['name']!r} has {r['count']} calls")
        for self_key, total_key in (("self_cpu_ns", "cpu_total_ns"), ("self_device_ns", "device_total_ns")):
            if not 0 <= r[self_key] <= r[total_key]:
                errors.append(f"ops: {r['name']!r} {self_key} {r[self_key]} outside 0..{total_key} {r[total_key]}")
    # a document that says why there are no FLOPs has none (issue 31, 3e: nsys exports)
    if doc.get("command") == "ops" and doc.get("flops_unavailable"):
        if doc["source"]["format"] != "nsys":
            errors.append(f"ops: flops_unavailable on a {doc['source']['format']} trace")
        for r in doc.get("ops") or []:
            if any(r[k] is not None for k in ("flops", "bytes_moved", "achieved_flop_per_s", "peak_pct")):
                errors.append(f"ops: {r['name']!r} has FLOP figures although flops_unavailable says why not")
    elif doc.get("command") == "ops" and doc["source"]["format"] == "nsys":
        errors.append("ops: an nsys export's document does not say why it has no FLOPs (flops_unavailable)")


def _check_steps(doc: dict[str, Any], errors: list[str]) -> None:
    """``summary``: every step is its recorded range unless it is listed as cut with a reason, a cut step is
    shorter than its range and lies inside it, and the span is never longer than the ranges as recorded make it."""
    if doc.get("command") != "summary":
        return
    if doc["span_ns"] > doc["span_as_recorded_ns"] or (doc["span_ns"] != doc["span_as_recorded_ns"]) != bool(
        doc["span_note"]
    ):
        errors.append(f"summary: span {doc['span_ns']} vs as recorded {doc['span_as_recorded_ns']}, no note")
    for row in doc["steps"]:
        cut = {c["name"]: c for c in row["cut"]}
        if not len(row["names"]) == len(row["step_ns"]) == len(row["range_ns"]) == len(row["start_ns"]):
            errors.append(f"summary: rank {row['rank']} step lists of different lengths")
        for name, step, whole in zip(row["names"], row["step_ns"], row["range_ns"], strict=False):
            c = cut.get(name)
            if c is None:
                if step != whole:
                    errors.append(f"summary: {name} measured {step} ns of its {whole} ns range, no reason given")
                continue
            ok = (
                step < whole
                and c["reason"]
                and (c["cut_start"] or c["cut_end"])
                and c["end_ns"] - c["start_ns"] == step
            )
            ok = ok and c["range_start_ns"] <= c["start_ns"] <= c["end_ns"] <= c["range_end_ns"]
            ok = ok and (not c["cut_end"] or row["recording_end_ns"] < c["range_end_ns"])
            ok = ok and (not c["cut_start"] or c["start_ns"] == row["recording_start_ns"] > c["range_start_ns"])
            if not ok:
                errors.append(f"summary: cut step {name}: {c}")
        if bool(row["cut"] or row["left_out"]) != bool(row["note"]):
            errors.append(f"summary: rank {row['rank']} steps cut or left out without a note, or a note for none")


def _check_host(doc: dict[str, Any], errors: list[str]) -> None:
    """``summary``: the host table is there exactly when there is no GPU activity, its shares add up to at most
    100 %, most self CPU time first, and no operator's self time exceeds its total."""
    if doc.get("command") != "summary":
        return
    host = doc["host"]
    if (host is None) != bool(doc["devices"] or doc["range_profiler"]):
        errors.append(f"summary: host table {'missing' if host is None else 'present'} with devices {doc['devices']}")
    if host is None:
        return
    rows = host["top_ops"]
    if sum(r["pct"] for r in rows) > 100 + 1e-6 or sum(r["self_cpu_ns"] for r in rows) > host["self_cpu_total_ns"]:
        errors.append("summary: host shares above 100%")
    if [r["self_cpu_ns"] for r in rows] != sorted((r["self_cpu_ns"] for r in rows), reverse=True):
        errors.append("summary: host rows not by self CPU time")
    errors.extend(f"summary: host {r['name']!r} self above total" for r in rows if r["self_cpu_ns"] > r["cpu_total_ns"])


@cache
def _applied_shift(rel: str) -> dict[str, int]:
    t = load_paths([str(CORPUS / rel)])
    return {str(r): -t.meta.rank_shift_ns.get(r, 0) for r in t.meta.ranks}


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _targets())
def test_every_command_json_keeps_its_invariants(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    errors: list[str] = []
    refused = any(rel.startswith(n) for n in NOT_TRACES)
    for cmd in COMMANDS:
        code, out, err = run_cli(capsys, cmd, "--json", str(CORPUS / rel))
        if refused:
            assert code != 0 and err.strip(), f"{cmd}: a non-trace was not refused"
            return
        if code != 0:
            errors.append(f"{cmd}: exit {code}: {err.strip()[-300:]}")
            continue
        doc = json.loads(out)
        _walk(doc, cmd, errors)
        _check_devices(doc, errors)
        _check_waits(doc, errors)
        _check_profiler(doc, errors)
        _check_ops(doc, errors)
        _check_steps(doc, errors)
        _check_host(doc, errors)
        _check_critical_path(doc, errors)
        if cmd == "ranks":
            offsets = doc["stragglers"]["clock_offset_ns"]
            applied = _applied_shift(rel)
            for r, off in offsets.items():
                if off != applied.get(r, 0):
                    errors.append(f"ranks: clock_offset_ns[{r}] = {off}, applied {applied.get(r, 0)}")
    assert not errors, "\n".join(errors)

"""The fleet result as rows and documents: one row per rank for ``--json`` and Parquet, the error records, and
the fleet document (JSON contract, ``"command": "fleet"``). Plain data in, plain data out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop_trace.analysis.findings.assemble import Finding
    from gputop_trace.analysis.fleet.analyse import FleetRank, FleetReport
    from gputop_trace.analysis.fleet.rank_summary import RankSummary

#: Row fields that hold a rank's collective sequence (Parquet only; too long for a readable JSON document).
SEQUENCE_FIELDS = ("coll_ops", "coll_groups", "coll_op", "coll_group", "coll_start_ns", "coll_end_ns")


def rank_row(s: RankSummary, f: FleetRank | None, *, sequences: bool = False) -> dict[str, Any]:
    """One analysed rank: the summary's figures and its fleet-level figures (``f``; None when not analysed)."""
    mean = s.mean_step_ns
    row: dict[str, Any] = {
        "rank": s.rank,
        "path": s.path,
        "format": s.format,
        "producer": s.producer,
        "file_bytes": s.file_bytes,
        "world_size": s.world_size,
        "devices": list(s.devices),
        "t0_ns": s.t0_ns,
        "steps": s.steps,
        "step_ns": list(s.step_ns),
        "step_start_ns": list(s.step_start_ns),
        "mean_step_ns": round(mean) if mean is not None else None,
        "span_ns": s.span_ns,
        "busy_ns": s.busy_ns,
        "idle_ns": s.idle_ns,
        "busy_pct": round(s.busy_pct, 3),
        "gap_threshold_ns": s.gap_threshold_ns,
        "gaps_ns": s.gaps_ns,
        "idle_by_cause": {c: dict(v) for c, v in s.idle_by_cause.items()},
        "top_kernels": [dict(k) for k in s.top_kernels],
        "kernel_ns": s.kernel_ns,
        "copy_ns": s.copy_ns,
        "copy_bytes": s.copy_bytes,
        "exposed_copy_ns": s.exposed_copy_ns,
        "collectives": s.collectives,
        "collective_ns": s.collective_ns,
        "exposed_collective_ns": s.exposed_collective_ns,
        "collective_wait_ns": f.collective_wait_ns if f else 0,
        "imposed_wait_ns": f.imposed_wait_ns if f else 0,
        "times_last": f.times_last if f else 0,
        "collective_instances": f.instances if f else 0,
        "late_median_ns": f.late_median_ns if f else 0,
        "late_max_ns": f.late_max_ns if f else 0,
        "arrival_late_ns": f.arrival_late_ns if f else None,
        "arrival_late_median_ns": f.arrival_late_median_ns if f else None,
        "arrival_late_max_ns": f.arrival_late_max_ns if f else None,
        "arrival_z": f.arrival_z if f else None,
        "late_outlier": f.late_outlier if f else False,
        "step_z": f.step_z if f else None,
        "step_outlier": f.step_outlier if f else False,
        "clock_offset_ns": f.clock_offset_ns if f else None,
        "warnings": list(s.warnings),
        "version": s.version,
        "load_s": round(s.load_s, 6),
        "analyse_s": round(s.analyse_s, 6),
        "cpu_s": round(s.cpu_s, 6),
    }
    if sequences:
        for k in SEQUENCE_FIELDS:
            row[k] = list(getattr(s, k))
    return row


def error_row(s: RankSummary) -> dict[str, Any]:
    """One rank that could not be analysed: rank, path, the message, its kind (input / internal / worker)."""
    return {
        "rank": s.rank,
        "path": s.path,
        "error": s.error,
        "kind": s.error_kind,
        "traceback": s.traceback,
        "file_bytes": s.file_bytes,
    }


def finding_row(f: Finding) -> dict[str, Any]:
    """A fleet finding in the shape of the ``summary`` document's findings (evidence is already plain)."""
    ranks = f.evidence.get("ranks", [])
    from gputop_trace.report.analysis_json import finding_head

    return {
        **finding_head(f),
        "gpu": {"rank": f.gpu_rank, "device": None},
        "ranks": list(ranks),
        "evidence": f.evidence,
        "thresholds": f.thresholds,
        "event": None,
        "interval": None,
    }


def assign_ranks(per_file: Sequence[Sequence[RankSummary]]) -> tuple[list[RankSummary], list[str]]:
    """One rank per summary: the summaries of every file in order, with clashes resolved, and what was done.

    A rank a file states (Kineto ``distributedInfo``) is kept; a second file stating the same rank becomes an
    error row (matching collectives needs one file per rank). When a rank derived from a file's name or position
    is already taken (an nsys export of a multi-process job holds a rank per process, numbered up from the
    file's own), all of that file's ranks move, in order, to the next ranks no file claims, with a warning."""
    import dataclasses
    from collections import Counter

    from gputop_trace.fleet.summarize import error_summary

    groups = [list(g) for g in per_file]
    stated: dict[int, str] = {}
    for g in groups:  # stated ranks first: they win over derived ones
        for k, s in enumerate(g):
            if not (s.ok and s.rank_given):
                continue
            if s.rank in stated:
                g[k] = error_summary(
                    s.path,
                    s.rank,
                    f"{s.path} says it is rank {s.rank}, like {stated[s.rank]}; it is left out (one file per rank). "
                    "Remove one of them, or rename the files rank0…, rank1… if they carry no distributedInfo.",
                    "input",
                )
            else:
                stated[s.rank] = s.path
    # ranks that files not yet placed claim: a moved file must not take them
    later = Counter(s.rank for g in groups for s in g if s.ok and not s.rank_given)
    taken = set(stated)
    moved: dict[str, list[tuple[int, int]]] = {}
    next_free = 0
    for g in groups:
        derived = [k for k, s in enumerate(g) if s.ok and not s.rank_given]
        later.subtract(g[k].rank for k in derived)
        if any(g[k].rank in taken for k in derived):
            for k in sorted(derived, key=lambda k: g[k].rank):
                while next_free in taken or later[next_free] > 0:
                    next_free += 1
                moved.setdefault(g[k].path, []).append((g[k].rank, next_free))
                g[k] = dataclasses.replace(g[k], rank=next_free)
                taken.add(next_free)
        else:
            taken.update(g[k].rank for k in derived)
    warnings = []
    if moved:
        parts = [f"{path}: {', '.join(f'{a}→{b}' for a, b in pairs)}" for path, pairs in list(moved.items())[:5]]
        warnings.append(
            f"Ranks derived from file names or positions clashed (a multi-process nsys export holds a rank per "
            f"process); {len(moved)} file(s) got the next free ranks: "
            + "; ".join(parts)
            + (" …" if len(moved) > 5 else "")
            + ". Name the files rank0…, rank1… (or record distributedInfo) to choose the numbers."
        )
    return [s for g in groups for s in g], warnings


def fleet_warnings(summaries: Sequence[RankSummary]) -> list[str]:
    """Fleet-level warnings: failed ranks (internal errors loudest), mixed tool versions across workers."""
    from gputop_trace import __version__

    out: list[str] = []
    failed = [s for s in summaries if not s.ok]
    internal = [s for s in failed if s.error_kind == "internal"]
    if internal:
        out.append(
            f"{len(internal)} rank(s) hit an internal error (a bug in gputop-trace; the error rows hold the "
            f"tracebacks): ranks {', '.join(str(s.rank) for s in internal[:10])}"
            + (" …" if len(internal) > 10 else "")
            + ". Please report it."
        )
    other = [s for s in failed if s.error_kind != "internal"]
    if other:
        out.append(
            f"{len(other)} of {len(summaries)} rank(s) could not be analysed and are left out of the fleet figures: "
            + ", ".join(f"rank {s.rank}" for s in other[:10])
            + (" …" if len(other) > 10 else "")
            + " (see errors)."
        )
    versions = sorted({s.version for s in summaries if s.version and s.version != __version__})
    if versions:
        out.append(
            f"Some workers run another gputop-trace version ({', '.join(versions)}; this one is {__version__}): "
            "install the same version everywhere so that every rank is analysed the same way."
        )
    return out


def fleet_document(
    summaries: Sequence[RankSummary],
    report: FleetReport,
    paths: Sequence[str],
    *,
    executor: str,
    elapsed_s: float,
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``fleet`` JSON document: envelope, ``ranks`` (analysed, by rank), ``errors``, ``findings``, ``fleet``."""
    from gputop_trace.report.envelope import envelope

    ok = sorted((s for s in summaries if s.ok), key=lambda s: s.rank)
    bad = sorted((s for s in summaries if not s.ok), key=lambda s: (s.rank, s.path))
    formats = sorted({s.format for s in ok if s.format})
    doc = envelope("fleet", None, list(paths))
    doc["source"] = {
        "path": list(paths),
        "format": formats[0] if len(formats) == 1 else ("mixed" if formats else ""),
        "producer": " / ".join(sorted({s.producer for s in ok if s.producer})),
        "ranks": [s.rank for s in ok],
        "files": len(paths),
        "truncated_bytes": 0,
    }
    doc["warnings"] = list(dict.fromkeys(warnings))
    total_bytes = sum({s.path: s.file_bytes for s in summaries}.values())  # a multi-rank file counts once
    doc["fleet"] = {
        **report.stats,
        "executor": executor,
        "files": len(paths),
        "failed": len(bad),
        "bytes": total_bytes,
        "elapsed_s": round(elapsed_s, 3),
        "ranks_per_min": round(60.0 * len(summaries) / elapsed_s, 2) if elapsed_s > 0 else None,
        "gb_per_min": round(60.0 * total_bytes / 1e9 / elapsed_s, 4) if elapsed_s > 0 else None,
    }
    doc["ranks"] = [rank_row(s, report.ranks.get(s.rank)) for s in ok]
    doc["errors"] = [error_row(s) for s in bad]
    doc["findings"] = [finding_row(f) for f in report.findings]
    return doc

"""The worked diagnosis of one kernel from its Nsight Compute metrics (ncu base units) and, when the report has it,
its source page: register spills and local-memory traffic, shared-memory bank conflicts, uncoalesced global
access, and the hottest SASS / source lines.

- Spills: ``sass__inst_executed_register_spilling`` (warp instructions that spill or reload registers) and local
  memory traffic ``l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum`` × 32 bytes per sector.
- Bank conflicts: ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum`` over the shared-memory
  wavefronts ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum``, loads and stores apart; a problem
  from :data:`BANK_CONFLICT_SHARE` of either's wavefronts on.
- Coalescing: sectors per request of global loads and stores
  (``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`` / ``..._requests_...``); 4 is ideal for 32 threads
  reading 4 bytes each, a problem above :data:`UNCOALESCED_SECTORS`.
- Hot lines: the source-page lines with the most warp-stall samples (share of all samples).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputop_trace.model.ncu import NcuSourceLine

#: Bytes per L1/L2 sector.
SECTOR_BYTES = 32
#: Share of shared-memory wavefronts (0.10 = 10 %) spent on bank conflicts from which they are a problem.
BANK_CONFLICT_SHARE = 0.10
#: Sectors per global request above which access is uncoalesced (4 = 32 threads × 4 bytes, contiguous).
UNCOALESCED_SECTORS = 4.5


@dataclass(frozen=True)
class Finding:
    """One item of the diagnosis: ``kind`` (``spills``, ``bank_conflicts``, ``coalescing``), ``problem`` whether
    it holds the kernel back, ``text`` what was measured and what to do."""

    kind: str
    problem: bool
    text: str


@dataclass(frozen=True)
class HotLine:
    """A source-page line and its share (0–100) of all warp-stall samples of the kernel."""

    line: NcuSourceLine
    share_pct: float


def _m(metrics: Mapping[str, float], name: str) -> float:
    v = metrics.get(name)
    return math.nan if v is None else v


def _sum(metrics: Mapping[str, float], *names: str) -> float:
    vals = [v for n in names if not math.isnan(v := _m(metrics, n))]
    return sum(vals) if vals else math.nan


def spills(metrics: Mapping[str, float]) -> Finding | None:
    """Register spills and local-memory traffic (None when the report has no spill counters)."""
    inst = _m(metrics, "sass__inst_executed_register_spilling")
    local = _sum(
        metrics,
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    )
    if math.isnan(inst) and math.isnan(local):
        return None
    local_bytes = 0.0 if math.isnan(local) else local * SECTOR_BYTES
    if (math.isnan(inst) or inst == 0) and local_bytes == 0:
        return Finding("spills", False, "no register spills and no local-memory traffic.")
    return Finding(
        "spills",
        True,
        f"register spills: {0 if math.isnan(inst) else inst:,.0f} spill/reload instructions, {local_bytes:,.0f} bytes "
        "of local-memory traffic. Local memory lives in DRAM behind L1: reduce live registers per thread (smaller "
        "tiles, fewer unrolled loops) or raise the register limit (__launch_bounds__, -maxrregcount).",
    )


def bank_conflicts(metrics: Mapping[str, float]) -> Finding | None:
    """Shared-memory bank conflicts of loads and of stores (None without shared-memory traffic); a problem when
    either spends :data:`BANK_CONFLICT_SHARE` or more of its wavefronts on conflicts."""
    parts = []
    worst = 0.0
    for op, label in (("ld", "loads"), ("st", "stores")):
        conflicts = _m(metrics, f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
        wavefronts = _m(metrics, f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
        if math.isnan(conflicts) or math.isnan(wavefronts) or wavefronts <= 0:
            continue
        share = conflicts / wavefronts
        worst = max(worst, share)
        parts.append(f"shared {label}: {conflicts:,.0f} of {wavefronts:,.0f} wavefronts ({share:.0%}) are conflicts")
    if not parts:
        return None
    what = "; ".join(parts)
    if worst < BANK_CONFLICT_SHARE:
        return Finding("bank_conflicts", False, f"few bank conflicts: {what}.")
    return Finding(
        "bank_conflicts",
        True,
        f"shared-memory bank conflicts: {what}. Threads of a warp hit the same bank at different addresses and are "
        "served one after another: pad the shared arrays (e.g. [32][33]) or swizzle the index.",
    )


def coalescing(metrics: Mapping[str, float]) -> Finding | None:
    """Sectors per request of global loads and stores (None when the kernel made no global requests)."""
    parts = []
    worst = 0.0
    for op, label in (("ld", "loads"), ("st", "stores")):
        sectors = _m(metrics, f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")
        requests = _m(metrics, f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum")
        if math.isnan(sectors) or math.isnan(requests) or requests <= 0:
            continue
        spr = sectors / requests
        worst = max(worst, spr)
        parts.append(f"global {label} {spr:.1f} sectors per request")
    if not parts:
        return None
    if worst <= UNCOALESCED_SECTORS:
        return Finding("coalescing", False, f"coalesced: {', '.join(parts)} (4 is ideal).")
    return Finding(
        "coalescing",
        True,
        f"uncoalesced access: {', '.join(parts)} (4 is ideal for 32 threads reading 4 bytes each): each request "
        "fetches sectors it does not use. Make neighbouring threads touch neighbouring addresses (structure of "
        "arrays, transpose through shared memory).",
    )


def diagnose(metrics: Mapping[str, float]) -> list[Finding]:
    """Spills, bank conflicts and coalescing, in that order (items the report cannot tell are left out)."""
    return [f for f in (spills(metrics), bank_conflicts(metrics), coalescing(metrics)) if f is not None]


def hottest_lines(lines: Sequence[NcuSourceLine], top: int = 5) -> list[HotLine]:
    """The ``top`` lines with the most warp-stall samples (ties: source order), with their share of all samples;
    empty when no line has samples."""
    total = sum(ln.samples for ln in lines)
    if total <= 0:
        return []
    ranked = sorted((ln for ln in lines if ln.samples > 0), key=lambda ln: -ln.samples)[:top]
    return [HotLine(ln, 100.0 * ln.samples / total) for ln in ranked]

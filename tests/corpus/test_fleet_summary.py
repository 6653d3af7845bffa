"""Per-rank summaries and the fleet analysis over them: the same figures and the same stragglers as the
multi-rank analyses of one merged trace, error records instead of exceptions, robust outliers."""

from __future__ import annotations

import dataclasses
import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest

from gputop_trace.analysis.fleet.analyse import analyse_fleet, robust_z
from gputop_trace.analysis.fleet.collectives import match_fleet
from gputop_trace.analysis.fleet.rank_summary import RankSummary, SummaryOptions
from gputop_trace.analysis.gaps.causes import CAUSES
from gputop_trace.fleet.executors import expand_paths, plan_jobs
from gputop_trace.fleet.summarize import summarize_file
from gputop_trace.model.trace import Trace
from tests.fleet_helpers import fleet_small  # noqa: F401  (fixture)

DDP = "kineto/h200_ddp_2gpu"


def _summaries(directory: Path | str) -> list[RankSummary]:
    return [s for j in plan_jobs(expand_paths([str(directory)])) for s in summarize_file(j.path, j.default_rank)]


def _merged(directory: Path | str) -> Trace:
    from gputop_trace.load.loader import load_paths

    return load_paths([str(directory)])


# ---- equivalence with the analyses of one merged multi-rank trace -------------------------------------------
def _assert_fleet_equals_merged(directory: Path | str) -> list[RankSummary]:
    from gputop_trace.analysis.ranks.stragglers import find_stragglers
    from gputop_trace.analysis.ranks.table import rank_table

    trace = _merged(directory)
    ref = find_stragglers(trace)
    summaries = _summaries(directory)
    fleet = match_fleet(summaries)
    assert fleet.waits == ref.ranks  # instances, times last, waiting, imposed, lateness: identical
    # the loader aligns ranks whose clocks are off by more than 0.5 ms; the summaries keep each file's own clock,
    # so their offsets are the loader's shift plus what find_stragglers still sees after it
    shift = trace.meta.rank_shift_ns
    assert fleet.clock_offset_ns == {r: off - shift.get(r, 0) for r, off in ref.clock_offset_ns.items()}
    assert (fleet.straggler, fleet.straggler_share, fleet.instances) == (
        ref.straggler,
        ref.straggler_share,
        ref.instances,
    )
    assert [g.unmatched for g in fleet.groups] == [g.unmatched for g in ref.groups]
    for a, b in zip(fleet.groups, ref.groups, strict=True):
        assert a.group == b.group and a.ranks == b.ranks and a.op == b.op
        np.testing.assert_array_equal(a.wait_ns, b.wait_ns)
        np.testing.assert_array_equal(a.last, b.last)
    rows = {r.rank: r for r in rank_table(trace, ref)}
    for s in summaries:
        row = rows[s.rank]
        assert (s.steps, s.step_ns, s.busy_ns, s.idle_ns) == (row.steps, row.step_ns, row.busy_ns, row.idle_ns)
        assert (s.collectives, s.collective_ns, s.exposed_collective_ns) == (
            row.collectives,
            row.collective_ns,
            row.exposed_collective_ns,
        )
    return summaries


@pytest.mark.corpus
def test_ddp_pair_fleet_equals_find_stragglers_on_the_merged_trace(corpus: Path) -> None:
    summaries = _assert_fleet_equals_merged(corpus / DDP)
    fleet = match_fleet(summaries)
    assert fleet.straggler == 1  # the corpus' rank 1 sleeps 4 ms per step
    waits = {w.rank: w for w in fleet.waits}
    assert waits[1].times_last == 30 and waits[0].wait_ns > 90_000_000


@pytest.mark.corpus
def test_generated_fleet_on_two_hosts_equals_find_stragglers(fleet_small: tuple[Path, dict[int, int]]) -> None:  # noqa: F811
    directory, stragglers = fleet_small
    summaries = _assert_fleet_equals_merged(directory)
    fleet = match_fleet(summaries)
    assert fleet.straggler in stragglers
    # the second host's clock is off: estimated from the collectives' end times, the same for all its ranks
    host2 = {fleet.clock_offset_ns[r] for r in range(8, 12)}
    assert len(host2) <= 2 and abs(next(iter(host2))) > 500_000  # more than the loader's alignment threshold
    assert set(_merged(directory).meta.rank_shift_ns) == set(range(8, 12))


@pytest.mark.corpus
def test_summary_is_small_plain_data_in_the_files_time_base(corpus: Path) -> None:
    path = str(corpus / DDP / "rank0.pt.trace.json.gz")
    (s,) = summarize_file(path, 7)
    assert s.ok and s.rank == 0 and s.rank_given  # distributedInfo wins over the default rank
    assert s.format == "kineto" and s.devices == (0,)
    blob = pickle.dumps(s)
    assert len(blob) < 16_000  # what travels back from a worker (the file holds 1.2 MB of JSON)
    assert len(blob) < Path(path).stat().st_size / 5
    trace = _merged(path)
    assert s.t0_ns == trace.meta.t0_ns
    # collective times are the file's own (µs × 1000): the first NCCL kernel's ts in the file
    with gzip.open(path, "rt") as f:
        import json

        events = json.load(f)["traceEvents"]
    first_nccl = min(e["ts"] for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower())
    assert s.coll_start_ns[0] == round(first_nccl * 1000)
    assert s.coll_ops == ("all_reduce",) and s.coll_groups == ("0",) and len(s.coll_op) == 30
    assert set(s.idle_by_cause) == set(CAUSES)
    assert sum(v["total_ns"] for v in s.idle_by_cause.values()) == s.gaps_ns
    assert s.top_kernels[0]["name"].startswith("ncclDevKernel_AllReduce")  # rank 0 waits inside all-reduce
    assert s.exposed_copy_ns > 0 and s.copy_bytes > 0


@pytest.mark.corpus
def test_gap_threshold_option_reaches_the_idle_causes(corpus: Path) -> None:
    path = str(corpus / DDP / "rank1.pt.trace.json.gz")
    (fine,) = summarize_file(path, 0, SummaryOptions(gap_threshold_ns=0))
    (coarse,) = summarize_file(path, 0, SummaryOptions(gap_threshold_ns=1_000_000))
    n_fine = sum(v["count"] for v in fine.idle_by_cause.values())
    n_coarse = sum(v["count"] for v in coarse.idle_by_cause.values())
    assert n_fine > n_coarse > 0 and coarse.gap_threshold_ns == 1_000_000


# ---- bad ranks become error records --------------------------------------------------------------------------
def test_missing_and_corrupt_files_give_input_errors(tmp_path: Path) -> None:
    (missing,) = summarize_file(str(tmp_path / "rank3.json"), 3)
    assert not missing.ok and missing.error_kind == "input" and missing.rank == 3
    assert "rank3.json" in (missing.error or "")
    bad = tmp_path / "rank4.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00not really gzip at all")
    (corrupt,) = summarize_file(str(bad), 4)
    assert not corrupt.ok and corrupt.error_kind == "input" and corrupt.traceback is None
    assert corrupt.steps == 0 and corrupt.busy_ns == 0


@pytest.mark.corpus
def test_a_bug_is_an_internal_error_record_with_its_traceback(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gputop_trace.fleet.summarize as rs

    def broken(*_: object, **__: object) -> list[RankSummary]:
        raise ValueError("boom")

    monkeypatch.setattr(rs, "summarize_trace", broken)
    (s,) = rs.summarize_file(str(corpus / DDP / "rank0.pt.trace.json.gz"), 0)
    assert not s.ok and s.error_kind == "internal"
    assert (s.error or "").startswith("internal error: ValueError: boom")
    assert s.traceback is not None and "ValueError: boom" in s.traceback


def test_memory_limit_refuses_a_file_before_loading_it(tmp_path: Path) -> None:
    f = tmp_path / "rank0.json"
    f.write_text('{"traceEvents": []}')
    (s,) = summarize_file(str(f), 0, SummaryOptions(max_memory=1000))
    assert not s.ok and s.error_kind == "input" and "memory" in (s.error or "")


# ---- robust outliers ------------------------------------------------------------------------------------------
def test_robust_z_uses_the_median_and_mad_and_falls_back_to_mean_deviation() -> None:
    z = robust_z(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert z[2] == 0.0
    assert z[4] == pytest.approx(0.6745 * 97 / 1.0)  # MAD of |-2,-1,0,1,97| is 1
    z2 = robust_z(np.array([5.0, 5.0, 5.0, 5.0, 9.0]))  # MAD 0: mean absolute deviation 0.8
    assert z2[4] == pytest.approx(4 / (1.253314 * 0.8))
    assert robust_z(np.array([3.0, 3.0, 3.0])).tolist() == [0.0, 0.0, 0.0]
    assert len(robust_z(np.zeros(0))) == 0


def _synthetic(rank: int, step_ms: float, *, idle: dict[str, int] | None = None) -> RankSummary:
    steps = tuple(round(step_ms * 1e6 * f) for f in (1.0, 1.01, 0.99, 1.0))
    by_cause = {c: {"count": 1 if (idle or {}).get(c) else 0, "total_ns": (idle or {}).get(c, 0)} for c in CAUSES}
    return RankSummary(
        path=f"/x/rank{rank}.json",
        rank=rank,
        step_ns=steps,
        span_ns=150_000_000,
        busy_ns=100_000_000,
        idle_ns=50_000_000,
        idle_by_cause=by_cause,
        gaps_ns=sum((idle or {}).values()),
        gap_threshold_ns=20_000,
    )


def test_step_time_outliers_need_a_robust_z_and_a_real_excess() -> None:
    rng = np.random.default_rng(0)
    ranks = [_synthetic(r, 30.0 + float(rng.uniform(-0.3, 0.3))) for r in range(20)]
    ranks[7] = _synthetic(7, 42.0)  # 40% slower: an outlier
    ranks[11] = _synthetic(11, 31.2)  # z is high against a tight fleet, but only 4% slower: not reported
    rep = analyse_fleet(ranks)
    flagged = sorted(r for r, f in rep.ranks.items() if f.step_outlier)
    assert flagged == [7]
    (f,) = [f for f in rep.findings if f.kind == "step_time_outlier"]
    assert f.evidence["ranks"] == [7] and "Rank 7" in f.title
    assert rep.ranks[11].step_z is not None and rep.ranks[11].step_z > 3.5


def test_too_few_ranks_give_no_outliers() -> None:
    rep = analyse_fleet([_synthetic(0, 30.0), _synthetic(1, 60.0)])
    assert not any(f.step_outlier for f in rep.ranks.values())
    assert rep.ranks[0].step_z is None


def test_dominant_idle_cause_across_the_fleet() -> None:
    ranks = [_synthetic(r, 30.0, idle={"data_loading": 8_000_000, "sync_stall": 1_000_000}) for r in range(6)]
    ranks.append(_synthetic(6, 30.0, idle={"sync_stall": 20_000_000}))
    rep = analyse_fleet(ranks)
    causes = [f.evidence["cause"] for f in rep.findings if f.kind == "dominant_idle_cause"]
    assert causes == ["data_loading", "sync_stall"]  # 48 ms and 26 ms of 74 ms; both above 25%
    top = next(f for f in rep.findings if f.kind == "dominant_idle_cause")
    assert top.evidence["top_cause_on_ranks"] == 6 and "DataLoader" in top.detail


def test_failed_ranks_are_left_out_of_the_fleet_figures() -> None:
    good = [_synthetic(r, 30.0) for r in range(4)]
    bad = dataclasses.replace(_synthetic(9, 99.0), error="unreadable", error_kind="input")
    rep = analyse_fleet([*good, bad])
    assert sorted(rep.ranks) == [0, 1, 2, 3] and rep.stats["ranks"] == 4


# ---- one rank per summary -----------------------------------------------------------------------------------
def _at(path: str, *ranks: int, given: bool = False) -> list[RankSummary]:
    return [RankSummary(path=path, rank=r, rank_given=given, file_ranks=len(ranks)) for r in ranks]


def test_assign_ranks_keeps_stated_ranks_and_moves_clashing_files_as_a_block() -> None:
    from gputop_trace.fleet.table import assign_ranks

    # two multi-process nsys exports (ranks numbered up from their positions 0 and 1), a Kineto rank stating 5,
    # a file named rank4
    per_file = [_at("/a.sqlite", 0, 1), _at("/b.sqlite", 1, 2), _at("/k.json", 5, given=True), _at("/rank4.json", 4)]
    out, warnings = assign_ranks(per_file)
    assert [(s.path, s.rank) for s in out] == [
        ("/a.sqlite", 0),
        ("/a.sqlite", 1),
        ("/b.sqlite", 2),  # the whole file moves, in order, to ranks nobody else claims (4 and 5 are claimed)
        ("/b.sqlite", 3),
        ("/k.json", 5),
        ("/rank4.json", 4),
    ]
    assert len(warnings) == 1 and "/b.sqlite: 1→2, 2→3" in warnings[0]


def test_assign_ranks_stated_rank_wins_and_a_second_claim_is_an_error() -> None:
    from gputop_trace.fleet.table import assign_ranks

    per_file = [_at("/pos0.json", 0), _at("/x.json", 0, given=True), _at("/y.json", 0, given=True)]
    out, warnings = assign_ranks(per_file)
    by = {s.path: s for s in out}
    assert by["/x.json"].ok and by["/x.json"].rank == 0
    assert by["/pos0.json"].ok and by["/pos0.json"].rank == 1  # derived: moves out of the stated rank's way
    assert not by["/y.json"].ok and "says it is rank 0, like /x.json" in (by["/y.json"].error or "")
    assert warnings and "/pos0.json: 0→1" in warnings[0]
    assert assign_ranks([_at("/r0", 0), _at("/r1", 1)]) == ([*_at("/r0", 0), *_at("/r1", 1)], [])


@pytest.mark.corpus
def test_a_multi_process_export_gives_one_summary_per_rank(corpus: Path) -> None:
    from gputop_trace.analysis.ranks.table import rank_table

    path = corpus / "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
    summaries = summarize_file(str(path), 3)
    assert [(s.rank, s.devices, s.file_ranks, s.rank_given) for s in summaries] == [
        (3, (0,), 2, False),
        (4, (1,), 2, False),
    ]
    rows = {r.rank: r for r in rank_table(_merged(path))}  # the loader numbers them 0 and 1 from default rank 0
    for s, r in zip(summaries, (0, 1), strict=True):
        assert (s.busy_ns, s.idle_ns, s.step_ns) == (rows[r].busy_ns, rows[r].idle_ns, rows[r].step_ns)
        assert s.top_kernels and s.kernel_ns > 0
    assert summaries[0].top_kernels != summaries[1].top_kernels or summaries[0].kernel_ns != summaries[1].kernel_ns

"""GPU idle gaps on the real corpus: the idle-time cross-check and the planted stalls, named."""

from __future__ import annotations

from functools import cache

import pytest

from gputop_trace.analysis.gaps.detect import find_gaps
from gputop_trace.load.loader import load_paths
from gputop_trace.model.trace import Trace
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

MS = 1_000_000


@cache
def _load(rel: str) -> Trace:
    return load_paths([corpus_file(rel)])


def test_gpt_idle_time_is_span_minus_the_union_of_gpu_ops() -> None:
    (d,) = find_gaps(_load("kineto/h200_gpt_train_small.json.gz"))
    # the cross-check figure (Holistic Trace Analysis reports 45,473 µs: it rounds every op inward to whole µs)
    assert abs(d.idle_ns - 45_012_545) <= 1_000
    assert d.span_ns == d.busy_ns + d.idle_ns
    assert sum(d.histogram.total_ns) == d.idle_ns


def test_gpt_data_load_stalls_between_steps_are_found_and_named() -> None:
    t = _load("kineto/h200_gpt_train_small.json.gz")
    (d,) = find_gaps(t)
    big = [g for g in d.gaps if g.dur_ns > 5 * MS]
    assert len(big) == 2
    for g in big:
        assert g.cause == "data_loading"
        assert t.event_name(g.cause_event) == "data_load"
        assert g.breakdown_ns["data"] > 8 * MS  # the planted ~8 ms stall
    after_step0, after_step1 = sorted(big, key=lambda g: g.start_ns)
    # the GPU went idle when loss.item() in log_loss returned, then waited for the next step's data_load
    assert after_step0.range_name == "log_loss"
    assert t.event_name(after_step0.after_sync) == "aten::item"
    # after step 1 the GPU went idle at the end of the checkpoint copy
    assert after_step1.range_name == "checkpoint_d2h"
    assert 8 * MS < after_step0.dur_ns < 9 * MS and 12 * MS < after_step1.dur_ns < 13 * MS


def test_gpt_one_ms_threshold_keeps_only_the_two_stalls() -> None:
    (d,) = find_gaps(_load("kineto/h200_gpt_train_small.json.gz"), 1 * MS)
    assert [round(g.dur_ns / MS, 1) for g in d.longest(5)] == [12.4, 8.6]


def test_ddp_straggler_rank_idles_while_its_host_generates_data() -> None:
    t = _load("kineto/h200_ddp_2gpu")
    r0, r1 = find_gaps(t)
    assert (r0.rank, r1.rank) == (0, 1)
    assert r1.idle_pct > 60 > r0.idle_pct
    for g in r1.longest(4):
        assert g.dur_ns > 15 * MS
        assert g.cause == "cpu_bound"
        assert t.event_name(g.cause_event) == "aten::randn"
        assert g.range_name is not None and g.range_name.startswith("step_")
        # the 4 ms sleep of the straggler is the untraced part of each gap
        assert 3 * MS < g.breakdown_ns["untraced"] < 5 * MS


def test_jax_host_sleep_and_host_sync_are_attributed() -> None:
    t = _load("jax/h200_jax_mlp.perfetto_trace.json.gz")
    (d,) = find_gaps(t)
    sleeps = [g for g in d.gaps if g.cause == "blocked_os"]
    assert len(sleeps) == 4
    for g in sleeps:
        assert "sleep" in t.event_name(g.cause_event)
        assert 2.5 * MS < g.breakdown_ns["os"] < 3.5 * MS  # the planted 3 ms host sleep
        assert g.range_name == "np.asarray(jax.Array)"  # the GPU went idle during the per-step host sync
    stalls = [g for g in d.gaps if g.cause == "sync_stall"]
    assert len(stalls) == 5
    assert {t.event_name(g.after_sync) for g in stalls} == {"np.asarray(jax.Array)"}


def test_inductor_sleep_is_untraced_host_time_and_item_syncs_stall() -> None:
    t = _load("kineto/h200_inductor_compiled.json.gz")
    (d,) = find_gaps(t)
    untraced = [g for g in d.gaps if g.cause == "untraced" and g.dur_ns > 2 * MS]
    assert len(untraced) >= 4  # the 2 ms CPU sleep per step, outside any traced operator
    assert all(g.range_name and g.range_name.startswith("infer_") for g in untraced)
    stalls = [g for g in d.gaps if g.cause == "sync_stall"]
    assert stalls and {t.event_name(g.cause_event) for g in stalls} <= {"aten::item", "aten::_local_scalar_dense"}

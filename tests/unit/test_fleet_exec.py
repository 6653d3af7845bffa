"""``gputop-trace fleet`` end to end: every executor (this process, a process pool, a 2-worker Dask LocalCluster of
real worker processes) gives identical per-rank summaries; bad ranks become error rows while the rest completes;
a 256-rank fleet with injected stragglers is analysed and the findings name the stragglers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.analysis.fleet.rank_summary import RankSummary, SummaryOptions
from gputop_trace.errors import TraceError
from gputop_trace.fleet.executors import (
    RankJob,
    expand_paths,
    plan_jobs,
    pool_size,
    run_dask,
    run_local,
    run_processes,
)
from tests.cli_run import run_cli
from tests.fleet_helpers import fleet_256, fleet_small, summarize_or_die  # noqa: F401  (fixtures)

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    """A Dask LocalCluster of two single-threaded worker processes, and a client of it."""
    import distributed

    dist: Any = distributed  # its constructors carry no annotations: called as Any (as fleet/executors.py does)
    with (
        dist.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        dist.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def mixed_dir(fleet_small: tuple[Path, dict[int, int]], tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """Four good ranks of the small fleet, a truncated copy of a fifth (recoverable), and a sixth that is no trace
    at all."""
    d = tmp_path_factory.mktemp("mixed")
    src = sorted(fleet_small[0].glob("rank*.json.gz"))
    for p in src[:4]:
        shutil.copy(p, d / p.name)
    data = src[4].read_bytes()
    (d / src[4].name).write_bytes(data[: len(data) // 3])  # cut mid-stream, as a crashed profiler leaves it
    (d / src[5].name).write_bytes(bytes(range(256)) * 64)  # overwritten with binary garbage
    return d


def _jobs(mixed_dir: Path) -> list[RankJob]:
    files = expand_paths([str(mixed_dir), str(mixed_dir / "rank0099.pt.trace.json.gz")])  # the last one is missing
    return plan_jobs(files)


def _flat(per_file: list[list[RankSummary]]) -> list[RankSummary]:
    assert all(len(group) == 1 for group in per_file)  # one rank per file here
    return [s for group in per_file for s in group]


def _comparable(per_file: list[list[RankSummary]]) -> list[RankSummary]:
    return [s.without_timings() for s in _flat(per_file)]


def test_every_executor_gives_identical_summaries_and_isolates_bad_ranks(mixed_dir: Path, dask_client: Any) -> None:
    jobs = _jobs(mixed_dir)
    opts = SummaryOptions()
    local_files = run_local(jobs, opts)
    seen: list[int] = []
    pool = run_processes(jobs, opts, on_result=lambda g: seen.extend(s.rank for s in g), workers=2)
    dask_files = run_dask(jobs, opts, client=dask_client)
    assert _comparable(pool) == _comparable(local_files)
    assert _comparable(dask_files) == _comparable(local_files)
    local, dask = _flat(local_files), _flat(dask_files)
    assert sorted(seen) == sorted(s.rank for s in local)  # progress heard of every rank
    ok = [s for s in local if s.ok]
    bad = {s.rank: s for s in local if not s.ok}
    assert [s.rank for s in ok] == [0, 1, 2, 3, 4]
    assert sorted(bad) == [5, 99]
    assert bad[5].error_kind == "input" and "binary file" in (bad[5].error or "")
    assert bad[99].error_kind == "input" and "rank0099" in (bad[99].error or "")
    assert all(s.collectives == 30 and s.steps == 5 for s in ok[:4])
    # the truncated rank is recovered up to the cut, and says so
    assert ok[4].collectives < 30 and any("truncat" in w.lower() for w in ok[4].warnings)
    # the rank that the others waited for is matched identically from every executor's summaries
    from gputop_trace.analysis.fleet.collectives import match_fleet

    assert match_fleet(dask).waits == match_fleet(local).waits


def test_a_dying_worker_costs_only_its_own_rank(
    fleet_small: tuple[Path, dict[int, int]],  # noqa: F811
    tmp_path: Path,
) -> None:
    good = sorted(fleet_small[0].glob("rank*.json.gz"))
    die = tmp_path / "rank0042-die.pt.trace.json.gz"
    shutil.copy(good[0], die)
    # the killer goes first: the pool breaks while others are in flight, and the queue behind it must go on
    jobs = plan_jobs([str(die), *(str(p) for p in good)])
    heard: list[str] = []
    out = _flat(
        run_processes(
            jobs, SummaryOptions(), on_result=lambda g: heard.extend(s.path for s in g), workers=2, fn=summarize_or_die
        )
    )
    by = {s.path: s for s in out}
    assert [by[str(p)].ok for p in good] == [True] * 12
    assert not by[str(die)].ok and by[str(die)].error_kind == "worker"
    assert "worker process died" in (by[str(die)].error or "")
    assert sorted(heard) == sorted(s.path for s in out)  # every rank reported once
    assert [s.path for s in out] == [j.path for j in jobs]  # results in job order
    # on Dask, the scheduler gives up on a task that kills its workers again and again: an error row too
    # (a cluster of its own: killing workers must not leave the module's shared cluster without any)
    import distributed

    dist: Any = distributed
    with (
        dist.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        dist.Client(cluster) as own_client,
    ):
        dask = _flat(run_dask(jobs[:4], SummaryOptions(), client=own_client, fn=summarize_or_die))
    assert [s.ok for s in dask] == [False, True, True, True]
    assert dask[0].error_kind == "worker" and "Dask task failed" in (dask[0].error or "")


def test_paths_globs_and_ranks(fleet_small: tuple[Path, dict[int, int]], tmp_path: Path) -> None:  # noqa: F811
    d = fleet_small[0]
    files = expand_paths([f"{d}/rank000[2-4]*.json.gz", str(d / "rank0001.pt.trace.json.gz"), str(d / "nope.json")])
    assert [Path(f).name for f in files] == [
        "rank0002.pt.trace.json.gz",
        "rank0003.pt.trace.json.gz",
        "rank0004.pt.trace.json.gz",
        "rank0001.pt.trace.json.gz",
        "nope.json",  # missing here: may exist on the workers; else an error row
    ]
    assert [j.default_rank for j in plan_jobs(files)] == [2, 3, 4, 1, 4]  # no number in "nope": its position
    with pytest.raises(TraceError, match="matches no trace file"):
        expand_paths([f"{tmp_path}/*.json.gz"])
    assert len(expand_paths([str(d)])) == 12


def test_pool_size_is_bounded_by_memory(fleet_small: tuple[Path, dict[int, int]]) -> None:  # noqa: F811
    from gputop_trace.load.resources import estimate

    files = [str(p) for p in sorted(fleet_small[0].glob("*.json.gz"))]
    need = max(estimate([f]).needed for f in files)
    assert pool_size(files, max_memory=need * 3, cores=8) == 3
    assert pool_size(files, max_memory=need // 2, cores=8) == 1  # never zero: one worker tries
    assert pool_size(files[:2], max_memory=need * 100, cores=8) == 2  # never more workers than files
    assert pool_size(files, max_memory=need * 100, cores=4) == 4


# ---- the command ----------------------------------------------------------------------------------------------
def test_cli_json_contract_errors_and_exit_code(
    mixed_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capsys, "fleet", str(mixed_dir), str(tmp_path / "rank7.json"), "--executor", "local", "--json"
    )
    assert code == 0  # the fleet was analysed; failed ranks are rows and a warning, not a failure
    doc = json.loads(out)
    from gputop_trace import __version__

    assert (doc["schema_version"], doc["tool"], doc["version"], doc["command"]) == (
        2,
        "gputop-trace",
        __version__,
        "fleet",
    )
    assert doc["source"]["format"] == "kineto" and doc["source"]["ranks"] == [0, 1, 2, 3, 4]
    for r in doc["ranks"]:
        assert {
            "rank",
            "path",
            "steps",
            "step_ns",
            "busy_ns",
            "idle_ns",
            "idle_by_cause",
            "top_kernels",
            "collective_ns",
            "collective_wait_ns",
            "exposed_copy_ns",
            "warnings",
        } <= set(r)
        assert all(isinstance(r[k], int) for k in ("busy_ns", "idle_ns", "collective_ns", "collective_wait_ns"))
        assert "coll_start_ns" not in r  # sequences stay in the Parquet file
    assert [(e["rank"], Path(e["path"]).name) for e in doc["errors"]] == [
        (5, "rank0005.pt.trace.json.gz"),
        (7, "rank7.json"),
    ]
    assert all(e["error"] for e in doc["errors"])
    assert any("2 of 7 rank(s) could not be analysed" in w for w in doc["warnings"])
    assert "could not be analysed" in " ".join(err.split())  # the warning also goes to stderr
    for f in doc["findings"]:
        assert {"priority", "kind", "title", "detail", "evidence", "severity", "time_ns", "ranks"} <= set(f)


def test_two_files_claiming_one_rank(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = corpus / "kineto/h200_ddp_2gpu"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(src / "rank0.pt.trace.json.gz", tmp_path / "a" / "rank0.pt.trace.json.gz")
    shutil.copy(src / "rank1.pt.trace.json.gz", tmp_path / "a" / "rank1.pt.trace.json.gz")
    shutil.copy(src / "rank0.pt.trace.json.gz", tmp_path / "b" / "rank7.pt.trace.json.gz")  # says rank 0 inside
    code, out, _ = run_cli(capsys, "fleet", str(tmp_path / "a"), str(tmp_path / "b"), "--executor", "local", "--json")
    assert code == 0
    doc = json.loads(out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    (err,) = doc["errors"]
    assert err["rank"] == 0 and err["path"].endswith("b/rank7.pt.trace.json.gz")
    assert "says it is rank 0" in err["error"]
    assert next(f for f in doc["findings"] if f["kind"] == "most_waited_on")["ranks"] == [1]


def test_cli_nothing_analysable_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rank0.json").write_text("{ not json")
    code, _, err = run_cli(
        capsys, "fleet", str(tmp_path / "rank0.json"), str(tmp_path / "rank1.json"), "--executor", "local"
    )
    assert code == 2 and "None of the 2 trace(s) could be analysed" in " ".join(err.split())
    code, _, err = run_cli(capsys, "fleet", str(tmp_path), "--executor", "nowhere")
    assert code == 2 and "Unknown executor" in " ".join(err.split())
    code, _, err = run_cli(capsys, "fleet", f"{tmp_path}/*.json.gz")
    assert code == 2 and "matches no trace file" in " ".join(err.split())
    code, _, err = run_cli(capsys, "fleet", str(tmp_path), "--out", str(tmp_path / "nowhere" / "f.parquet"))
    assert code == 2 and "Cannot write --out" in " ".join(err.split())


def test_cli_unreachable_scheduler_is_bad_input(
    fleet_small: tuple[Path, dict[int, int]],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(
        capsys, "fleet", str(fleet_small[0]), "--executor", "dask://127.0.0.1:9", "--connect-timeout", "2"
    )
    assert code == 2 and "Could not reach the Dask scheduler at tcp://127.0.0.1:9" in " ".join(err.split())


def test_cli_on_a_dask_scheduler_address_writes_parquet(
    fleet_small: tuple[Path, dict[int, int]],  # noqa: F811
    dask_client: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gputop_trace.fleet.parquet import read_fleet

    address = dask_client.scheduler.address  # tcp://127.0.0.1:PORT
    out = tmp_path / "fleet.parquet"
    code, text, _ = run_cli(
        capsys, "fleet", str(fleet_small[0]), "--executor", "dask://" + address[len("tcp://") :], "--out", str(out)
    )
    assert code == 0 and "12 ranks analysed, 0 failed" in text and f"gputop-trace view {out}\n" in text
    ff = read_fleet(str(out))
    assert [r["rank"] for r in ff.rows] == list(range(12)) and ff.errors == []
    r5 = ff.rows[5]
    assert r5["late_outlier"] is True and len(r5["step_ns"]) == 5 and len(r5["coll_start_ns"]) == 30
    assert set(r5["idle_by_cause"]) >= {"cpu_bound", "gpu_dependency"}
    assert ff.findings and ff.findings[0]["title"]
    assert ff.doc["fleet"]["executor"].startswith("dask://")
    # the table itself is ordinary Parquet any tool can read
    import pyarrow.parquet as pq

    t = pq.read_table(out, columns=["rank", "step_ns", "arrival_late_ns"])
    import pyarrow as pa

    assert t.num_rows == 12 and pa.types.is_list(t.schema.field("step_ns").type)
    assert t.schema.field("step_ns").type.value_type == pa.int64()


def test_mixed_formats_and_a_profile_without_gpu_work(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [
        corpus / "jax/h200_jax_mlp.perfetto_trace.json.gz",
        corpus / "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite",  # two GPU-driving processes: two ranks
        corpus / "kineto/h200_gpt_train_small.json.gz",
        corpus / "nsys/h200_nsys2022.4_nvtx_osrt_only.sqlite",
    ]
    code, out, _ = run_cli(capsys, "fleet", *map(str, files), "--executor", "processes", "--workers", "2", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["source"]["format"] == "mixed" and doc["errors"] == [] and doc["fleet"]["files"] == 4
    rows = [(r["rank"], Path(r["path"]).name, r["format"], r["devices"]) for r in doc["ranks"]]
    assert rows == [
        (0, files[0].name, "jax", [0]),
        (1, files[1].name, "nsys", [0]),  # no rank in the files or names: their position, then one per process
        (2, files[1].name, "nsys", [1]),
        (3, files[3].name, "nsys", []),
        (4, files[2].name, "kineto", [0]),  # its position (2) was taken by the export's second process
    ]
    assert any(f"{files[2]}: 2→4" in w for w in doc["warnings"])
    by = {r["rank"]: r for r in doc["ranks"]}
    assert by[4]["steps"] == 3 and by[0]["steps"] == 5
    assert by[1]["busy_ns"] > 0 and by[2]["busy_ns"] > 0
    assert by[3]["busy_ns"] == 0 and any("no GPU activity" in w for w in by[3]["warnings"])
    assert doc["fleet"]["collective_instances"] == 0  # nothing to match: no finding about collectives
    assert not {f["kind"] for f in doc["findings"]} & {"late_arrival", "most_waited_on"}


def test_cli_start_up_does_not_import_dask_or_pyarrow() -> None:
    code = (
        "import sys\nfrom gputop_trace.cli.main import build_parser\nbuild_parser().parse_args(['fleet', 'x'])\n"
        "print(','.join(m for m in ('dask', 'distributed', 'pyarrow', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == ""


# ---- 256 ranks ------------------------------------------------------------------------------------------------
def test_256_rank_fleet_names_the_injected_stragglers(
    fleet_256: tuple[Path, dict[int, int]],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    directory, stragglers = fleet_256
    code, out, _ = run_cli(
        capsys,
        "fleet",
        f"{directory}/rank*.pt.trace.json.gz",
        "--executor",
        "processes",
        "--workers",
        str(min(4, os.cpu_count() or 1)),
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    assert len(doc["ranks"]) == 256 and doc["errors"] == []
    late = next(f for f in doc["findings"] if f["kind"] == "late_arrival")
    assert sorted(late["ranks"]) == sorted(stragglers)  # all of them, and nobody else
    assert all(f"rank {r}" in late["title"] for r in stragglers)
    waited = next(f for f in doc["findings"] if f["kind"] == "most_waited_on")
    assert set(waited["ranks"][:3]) == set(stragglers)
    rows = {r["rank"]: r for r in doc["ranks"]}
    assert {r for r, row in rows.items() if row["late_outlier"]} == set(stragglers)
    # the worst straggler is the latest on average
    worst = max(stragglers, key=lambda r: stragglers[r])
    assert max(rows.values(), key=lambda r: r["arrival_late_ns"])["rank"] == worst
    assert not any(row["step_outlier"] for row in rows.values())  # their steps are not slower: nothing invented


def test_a_cluster_without_workers_gives_error_rows_instead_of_waiting_forever(
    fleet_small: tuple[Path, dict[int, int]],  # noqa: F811
) -> None:
    import distributed

    dist: Any = distributed
    jobs = plan_jobs([str(p) for p in sorted(fleet_small[0].glob("rank*.json.gz"))[:2]])
    with (
        dist.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster,
        dist.Client(cluster) as client,
    ):
        t0 = time.monotonic()
        out = _flat(run_dask(jobs, SummaryOptions(), client=client, no_workers_s=3.0))
    assert time.monotonic() - t0 < 60
    assert [s.ok for s in out] == [False, False]
    assert all(s.error_kind == "worker" and "no Dask worker was connected" in (s.error or "") for s in out)

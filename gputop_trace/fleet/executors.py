"""Running the per-rank summary over many trace files: in-process, on a local process pool, or on a Dask cluster.

Every executor calls the same pure function (:func:`gputop_trace.fleet.summarize.summarize_file`) with a
path, and only the small per-rank summaries travel back: traces never cross a process boundary. A file that fails
comes back as an error record and the others complete; a worker process that dies (killed for memory, a crash in
native code) costs only the files it was running, which are retried one at a time to find the one that kills it.
Every executor returns, per job and in job order, the list of summaries of that file's ranks.

* ``local``: a loop in this process.
* ``processes``: :class:`concurrent.futures.ProcessPoolExecutor` with
  ``min(cores, files, available memory / largest per-file need)`` workers (the need is
  :func:`gputop_trace.load.resources.estimate` of the largest file).
* ``dask://HOST:PORT`` (or ``tcp://…``): an existing ``dask.distributed`` scheduler. Workers open the paths
  themselves, so the files must be visible to every worker under the same path (shared storage).
* ``dask-local``: a throwaway ``LocalCluster`` of worker processes on this machine (testing the Dask path).
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputop_trace.errors import TraceError

if TYPE_CHECKING:
    from gputop_trace.analysis.fleet.rank_summary import RankSummary, SummaryOptions

#: ``fn(path, default_rank, options) -> [RankSummary, ...]``: what runs next to each file.
SummaryFn = Callable[[str, int, "SummaryOptions"], "list[RankSummary]"]
#: Called in the client with each file's summaries as they arrive (progress bars).
OnResult = Callable[["list[RankSummary]"], None]
#: Per job, in job order: the summaries of the file's ranks (one error record for a file that failed).
PerFile = list["list[RankSummary]"]

EXECUTORS = ("local", "processes", "dask://HOST:PORT", "dask-local")
#: Dask tasks that failed are run again one at a time when there are at most this many.
DASK_RETRY_ALONE_MAX = 32


@dataclass(frozen=True)
class RankJob:
    """One file to summarise and the rank to give it when the file does not say (Kineto ``distributedInfo``
    wins): a number in its name, else its position among the files."""

    path: str
    default_rank: int


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files from files, directories (their trace files) and glob patterns, in order, without duplicates.

    A path that exists nowhere is kept as it is: on a Dask cluster it may exist on the workers only, and
    otherwise its rank gets a "not found" error row. Raises :class:`TraceError` when a pattern or directory
    matches no trace file at all, or nothing is left.
    """
    from gputop_trace.parsers.sniff import TRACE_SUFFIXES, list_trace_files

    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(list_trace_files(p))
        elif glob.has_magic(p) and not os.path.exists(p):
            hits = sorted(glob.glob(p, recursive=True))
            files = [h for h in hits if os.path.isfile(h) and h.lower().endswith(TRACE_SUFFIXES)]
            if not files:
                raise TraceError(
                    f"The pattern {p} matches no trace file (files ending with {', '.join(TRACE_SUFFIXES)}). "
                    "Quote the pattern so that the shell does not expand it, and check the directory.",
                    path=p,
                )
            out.extend(files)
        else:
            out.append(p)
    unique = list(dict.fromkeys(out))
    if not unique:
        raise TraceError("No trace files given: pass files, directories or glob patterns of per-rank traces.")
    return unique


def plan_jobs(files: Sequence[str]) -> list[RankJob]:
    """A job per file with its default rank, as :func:`gputop_trace.load.loader.load_paths` numbers files: the number
    in its name (``rank12``) when no other file's name has the same number, else its position."""
    from gputop_trace.parsers.chrome.loader import rank_from_filename

    guesses = [rank_from_filename(f) for f in files]
    unique = {g for g in guesses if g is not None and guesses.count(g) == 1}
    return [
        RankJob(f, g if g is not None and g in unique else i)
        for i, (f, g) in enumerate(zip(files, guesses, strict=True))
    ]


def run_local(
    jobs: Sequence[RankJob], options: SummaryOptions, on_result: OnResult | None = None, fn: SummaryFn | None = None
) -> PerFile:
    """Summarise every file in this process, one after the other."""
    from gputop_trace.fleet.summarize import summarize_file

    call = fn or summarize_file
    out: PerFile = []
    for j in jobs:
        s = call(j.path, j.default_rank, options)
        out.append(s)
        if on_result:
            on_result(s)
    return out


def pool_size(files: Sequence[str], max_memory: int | None = None, cores: int | None = None) -> int:
    """Worker processes for a local pool: ``min(cores, files, memory / largest per-file need)``, at least 1.

    ``max_memory`` (bytes) replaces the memory available to this machine (MemAvailable and cgroup limit)."""
    from gputop_trace.load.resources import available_memory, estimate
    from gputop_trace.parsers.cores import usable_cores

    n = max(1, min(cores or usable_cores(), len(files)))
    need = max((estimate([f]).needed for f in files if os.path.isfile(f)), default=0)
    avail = max_memory if max_memory is not None else available_memory()
    if need and avail is not None:
        n = min(n, max(1, avail // need))
    return int(n)


def run_processes(
    jobs: Sequence[RankJob],
    options: SummaryOptions,
    on_result: OnResult | None = None,
    workers: int | None = None,
    fn: SummaryFn | None = None,
) -> PerFile:
    """Summarise the files on a pool of worker processes (``workers``: default :func:`pool_size`).

    At most one job more than there are workers is in flight, so a worker that dies (killed for memory, a crash
    in native code: the pool breaks) costs only the jobs in flight: the rest go on in a fresh pool, and those
    are run again one at a time, so that only the file that kills its worker gets an error row. Interrupted,
    the pool is shut down without starting the jobs still queued."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from gputop_trace.fleet.summarize import summarize_file

    call = fn or summarize_file
    n = workers or pool_size([j.path for j in jobs], options.max_memory)
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads or big arrays
    done: dict[int, list[RankSummary]] = {}
    queue = deque(range(len(jobs)))
    suspects: list[int] = []

    def finish(i: int, s: list[RankSummary]) -> None:
        done[i] = s
        if on_result:
            on_result(s)

    while queue:
        pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx)
        inflight: dict[Future[list[RankSummary]], int] = {}
        try:
            while queue or inflight:
                while queue and len(inflight) <= n:
                    i = queue.popleft()
                    inflight[pool.submit(call, jobs[i].path, jobs[i].default_rank, options)] = i
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                broken = False
                for fut in finished:
                    i = inflight.pop(fut)
                    try:
                        finish(i, fut.result())
                    except BrokenProcessPool:
                        suspects.append(i)
                        broken = True
                if broken:  # every job still in flight went down with the pool
                    suspects.extend(inflight.values())
                    break
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    for i in sorted(suspects):  # alone on a fresh worker: a second death names the file
        j = jobs[i]
        try:
            with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as solo:
                s = solo.submit(call, j.path, j.default_rank, options).result()
        except BrokenProcessPool:
            s = _died(
                j,
                "its worker process died while analysing it (killed for using too much memory, or a crash in "
                "native code)",
            )
        finish(i, s)
    return [done[i] for i in range(len(jobs))]


def run_dask(
    jobs: Sequence[RankJob],
    options: SummaryOptions,
    on_result: OnResult | None = None,
    address: str | None = None,
    client: Any = None,
    fn: SummaryFn | None = None,
    connect_timeout_s: float = 30.0,
    no_workers_s: float = 120.0,
) -> PerFile:
    """Summarise the files on a Dask cluster: ``client`` (a ``distributed.Client``), or a new client of the
    scheduler at ``address``. Only paths go out and only summaries come back; a task that fails on the cluster
    (its worker died repeatedly, it could not be unpickled …) becomes an error row, and so does every task still
    waiting once the scheduler has had no worker for ``no_workers_s`` seconds (it would wait forever)."""
    from gputop_trace.fleet.summarize import summarize_file

    try:
        import distributed
    except ImportError:
        raise TraceError(
            "The Dask executor needs dask.distributed: pip install 'gputop-trace[fleet]' (or dask distributed)."
        ) from None
    call = fn or summarize_file
    own = client is None
    if own:
        client = _dask_client(distributed, address, connect_timeout_s)
    futures: list[Any] = []
    done: dict[int, list[RankSummary]] = {}
    try:
        futures = client.map(
            call, [j.path for j in jobs], [j.default_rank for j in jobs], [options] * len(jobs), pure=False
        )
        index = {f.key: i for i, f in enumerate(futures)}
        failed: list[int] = []
        for fut, abandoned in _finished(distributed, client, futures, no_workers_s):
            i = index[fut.key]
            if abandoned:
                where = f"at {address} " if address else ""
                done[i] = _died(
                    jobs[i],
                    f"no Dask worker was connected to the scheduler {where}for {no_workers_s:.0f} s, so the task "
                    "never ran (start workers with 'dask worker tcp://HOST:8786' on machines that see the traces)",
                )
                if on_result:
                    on_result(done[i])
                continue
            try:
                done[i] = fut.result()
            except Exception:  # the task itself failed on the cluster (summarize_file never raises)
                failed.append(i)
                continue
            finally:
                fut.release()
            if on_result:
                on_result(done[i])
        _retry_alone(client, call, jobs, options, failed, done, on_result)
        return [done[i] for i in range(len(jobs))]
    except BaseException:
        client.cancel([f for i, f in enumerate(futures) if i not in done])  # interrupted: stop the rest
        raise
    finally:
        if own:
            client.close()


def _dask_client(distributed: Any, address: str | None, connect_timeout_s: float) -> Any:
    """A new ``distributed.Client`` of the scheduler at ``address`` (waiting up to ``connect_timeout_s`` s);
    :class:`TraceError` where it cannot be reached."""
    try:
        return _untyped(distributed.Client)(address, timeout=connect_timeout_s)
    except (OSError, TimeoutError) as e:
        raise TraceError(
            f"Could not reach the Dask scheduler at {address} ({type(e).__name__}: {e}). Start one with "
            "'dask scheduler' and workers with 'dask worker tcp://HOST:8786' on machines that see the traces "
            "under the same path, then pass --executor dask://HOST:8786.",
        ) from None


def _retry_alone(
    client: Any,
    call: SummaryFn,
    jobs: Sequence[RankJob],
    options: SummaryOptions,
    failed: list[int],
    done: dict[int, list[RankSummary]],
    on_result: OnResult | None,
) -> None:
    """Run the ``failed`` tasks again one at a time, into ``done``: a task that kills its worker also fails the
    tasks queued on that worker each time (Dask counts them as suspects), so that only the file that kills its
    worker gets an error row (more than :data:`DASK_RETRY_ALONE_MAX` failed: all get one, not retried)."""
    for i in sorted(failed):
        j = jobs[i]
        if len(failed) <= DASK_RETRY_ALONE_MAX:
            fut = client.submit(call, j.path, j.default_rank, options, pure=False)
            try:
                done[i] = fut.result()
            except Exception as e:
                done[i] = _died(j, f"the Dask task failed ({type(e).__name__}: {e})")
            finally:
                fut.release()
        else:
            done[i] = _died(j, f"the Dask task failed, with {len(failed)} others (not retried one by one)")
        if on_result:
            on_result(done[i])


def _finished(distributed: Any, client: Any, futures: list[Any], no_workers_s: float) -> Any:
    """``(future, abandoned)`` as the futures finish (like ``distributed.as_completed``), but watching the
    cluster: once it has had no worker for ``no_workers_s`` seconds, the futures still pending are cancelled and
    yielded with ``abandoned`` true, instead of being waited for forever."""
    pending = set(futures)
    alone_since: float | None = None
    while pending:
        try:
            done, not_done = _untyped(distributed.wait)(list(pending), timeout=2.0, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done, not_done = set(), pending
        for fut in done:
            yield fut, False
        pending = set(not_done)
        if done or not pending:
            alone_since = None
            continue
        workers = len((client.scheduler_info() or {}).get("workers", {}))
        if workers:
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since >= no_workers_s:
            client.cancel(list(pending))
            for fut in pending:
                yield fut, True
            return


def run_dask_local(
    jobs: Sequence[RankJob],
    options: SummaryOptions,
    on_result: OnResult | None = None,
    workers: int | None = None,
    fn: SummaryFn | None = None,
) -> PerFile:
    """Summarise the files on a throwaway ``LocalCluster`` of ``workers`` single-threaded worker processes."""
    try:
        import distributed
    except ImportError:
        raise TraceError(
            "The Dask executor needs dask.distributed: pip install 'gputop-trace[fleet]' (or dask distributed)."
        ) from None
    n = workers or pool_size([j.path for j in jobs], options.max_memory)
    with (
        _untyped(distributed.LocalCluster)(
            n_workers=n, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        _untyped(distributed.Client)(cluster) as client,
    ):
        return run_dask(jobs, options, on_result, client=client, fn=fn)


def run_jobs(
    executor: str,
    jobs: Sequence[RankJob],
    options: SummaryOptions,
    on_result: OnResult | None = None,
    workers: int | None = None,
    connect_timeout_s: float = 30.0,
) -> PerFile:
    """Run ``jobs`` on the executor named as on the command line (see :data:`EXECUTORS`)."""
    if executor == "local":
        return run_local(jobs, options, on_result)
    if executor == "processes":
        return run_processes(jobs, options, on_result, workers)
    if executor == "dask-local":
        return run_dask_local(jobs, options, on_result, workers)
    if executor.startswith(("dask://", "tcp://", "tls://")):
        address = "tcp://" + executor[len("dask://") :] if executor.startswith("dask://") else executor
        return run_dask(jobs, options, on_result, address=address, connect_timeout_s=connect_timeout_s)
    raise TraceError(
        f"Unknown executor {executor!r}: use local, processes, dask-local, or the address of a Dask scheduler as "
        "dask://HOST:PORT (tcp://HOST:PORT and tls://HOST:PORT work too)."
    )


def _died(job: RankJob, why: str) -> list[RankSummary]:
    from gputop_trace.fleet.summarize import error_summary

    return [error_summary(job.path, job.default_rank, f"{job.path}: {why}.", "worker")]


def _untyped(fn: Any) -> Any:
    """dask.distributed's constructors and helpers carry no annotations: call them as ``Any``."""
    return fn

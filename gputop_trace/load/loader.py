"""One entry point from a path (file, directory of per-rank traces, or several paths) to a :class:`Trace`."""

from __future__ import annotations

import os
from collections.abc import Sequence

from gputop_trace.errors import TraceError
from gputop_trace.load import heap
from gputop_trace.model.merge import merge_traces
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.sniff import list_trace_files, sniff
from gputop_trace.parsers.source import Progress

#: ``progress(bytes_done, bytes_total, events_so_far)``


def load_file(
    path: str,
    *,
    progress: Progress | None = None,
    default_rank: int = 0,
    use_cache: bool = True,
    include_python: bool = True,
) -> Trace:
    """Load one file of any supported format, from the columnar cache when it was loaded before
    (:mod:`gputop_trace.load.cache`; ``use_cache=False`` or ``GPUTOP_TRACE_NO_CACHE=1`` bypasses it).
    ``include_python=False`` leaves out Kineto ``python_function`` events (cached apart from the full model)."""
    kind = sniff(path)
    if kind == "directory":
        return load_paths([path], progress=progress, use_cache=use_cache, include_python=include_python)
    if kind in ("chrome", "nsys", "nsys-rep") and use_cache:
        from gputop_trace.load import cache, cache_keys

        if not cache_keys.cache_disabled():
            params: dict[str, object] = {"format": kind, "default_rank": default_rank}
            if not include_python and kind == "chrome":
                params["python"] = False
            trace = cache.load_cached(
                path,
                params,
                lambda: _parse_file(path, kind, progress, default_rank, include_python),
            )
            if progress is not None:
                size = os.path.getsize(path)
                progress(size, size, len(trace))
            return trace
    return _parse_file(path, kind, progress, default_rank, include_python)


def _parse_file(
    path: str, kind: str, progress: Progress | None, default_rank: int, include_python: bool = True
) -> Trace:
    # freed pieces reused while the file is read, the cyclic garbage collector paused, and what is free given back
    # once the file is read (load/heap.py)
    with heap.while_loading():
        if kind in ("nsys", "nsys-rep"):
            from gputop_trace.parsers.process_ranks import ranks_from_processes

            return ranks_from_processes(_parse_format(path, kind, progress, default_rank))
        return _parse_format(path, kind, progress, default_rank, include_python)


def _parse_format(
    path: str, kind: str, progress: Progress | None, default_rank: int, include_python: bool = True
) -> Trace:
    if kind == "chrome":
        # the file opened and its first window read and scanned while the rest of the parser is imported
        # (parsers/chrome/opening.py imports only what that needs)
        from gputop_trace.parsers.chrome.opening import open_trace

        opened = open_trace(path)
        try:
            from gputop_trace.parsers.chrome import loader as chrome
        except BaseException:
            opened.close()
            raise
        return chrome.load(
            path, progress=progress, default_rank=default_rank, include_python=include_python, opened=opened
        )
    if kind == "nsys-rep":
        from gputop_trace.load.nsys_report import load_report

        return load_report(path, progress=progress, default_rank=default_rank)
    if kind == "nsys":
        from gputop_trace.parsers.nsys import loader as nsys

        sq: Trace = nsys.load(path, progress=progress, default_rank=default_rank)
        return sq
    if kind == "ncu-rep":
        raise TraceError(
            f"{path} is an Nsight Compute report, not a timeline. Open it with: gputop-trace ncu {path}",
            path=path,
        )
    raise TraceError(f"{path}: unsupported input.", path=path)


#: per-rank files are parsed in parallel processes only when there is this much (decompressed) data in all
PARALLEL_MIN_BYTES = 64 << 20


def _default_ranks(files: Sequence[str]) -> list[int]:
    """Rank for each file without ``distributedInfo``: a number in its name when that is unique, else its position."""
    from gputop_trace.parsers.chrome.loader import rank_from_filename

    guesses = [rank_from_filename(f) for f in files]
    unique = {g for g in guesses if g is not None and guesses.count(g) == 1}
    return [g if g is not None and g in unique else i for i, g in enumerate(guesses)]


def parallel_workers(files: Sequence[str]) -> int:
    """How many processes to parse ``files`` with: bounded by the cores, the files and the memory available for
    the largest file's estimated peak (:mod:`gputop_trace.load.resources`); 1 for small inputs."""
    from gputop_trace.load.resources import available_memory, estimate

    if len(files) < 2:
        return 1
    per_file = [estimate([f]) for f in files]
    if sum(e.decompressed for e in per_file) < PARALLEL_MIN_BYTES:
        return 1
    from gputop_trace.parsers.cores import usable_cores

    cores = usable_cores()
    avail = available_memory()
    biggest = max(e.needed for e in per_file)
    by_memory = max(1, avail // biggest) if avail else cores
    return max(1, min(cores, len(files), by_memory))


def _load_one(path: str, default_rank: int, use_cache: bool, include_python: bool = True) -> Trace:
    """Worker entry point (module level so that it pickles)."""
    return load_file(path, default_rank=default_rank, use_cache=use_cache, include_python=include_python)


def _worker_ignores_ctrl_c() -> None:
    """Worker initializer: Ctrl+C reaches the whole foreground process group, but only the parent handles it (it
    kills the workers); a worker left to it would print a traceback of its own. A worker is born with SIGINT
    blocked (:func:`_load_parallel` spawns it so), so one that arrives while it starts up waits here, and is
    dropped once it is ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _load_parallel(
    files: Sequence[str],
    defaults: Sequence[int],
    workers: int,
    progress: Progress | None,
    use_cache: bool,
    include_python: bool = True,
) -> list[Trace | TraceError]:
    """Parse files in ``workers`` fresh processes (spawned: safe from an app with threads running); a file that
    is not a readable trace gives its :class:`TraceError` in its place."""
    import multiprocessing as mp
    import signal
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    sizes = [os.path.getsize(f) for f in files]
    total = sum(sizes)
    done_bytes = 0
    done_events = 0
    results: dict[int, Trace | TraceError] = {}
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=mp.get_context("spawn"), initializer=_worker_ignores_ctrl_c
    )
    try:
        # the workers are spawned by submit(): with SIGINT blocked meanwhile, a Ctrl+C while one starts up (before
        # its initializer) cannot make it print a traceback; here it is delivered once the submits are done
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = {
                pool.submit(_load_one, f, d, use_cache, include_python): i
                for i, (f, d) in enumerate(zip(files, defaults, strict=True))
            }
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = futures[fut]
                try:
                    trace = fut.result()
                except TraceError as e:  # this file is bad: the others still load (the caller warns)
                    results[i] = e
                else:
                    results[i] = trace
                    done_events += len(trace)
                done_bytes += sizes[i]
            if progress is not None:
                progress(done_bytes, total, done_events)  # may raise LoadCancelled
    except BaseException:
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for proc in procs:
            proc.kill()
        # a worker killed while sending its result leaves the pool's reader thread waiting for the rest of the
        # message; with this process' (unused) end of the result pipe closed it reads end-of-file instead, else
        # the interpreter hangs at exit joining that thread
        writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
        if writer is not None:
            writer.close()
        # the workers are gone: joining the pool's threads is quick, and lets its queues release their semaphores
        # (else the resource tracker warns about them as the program exits)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [results[i] for i in range(len(files))]


def load_paths(
    paths: Sequence[str], *, progress: Progress | None = None, use_cache: bool = True, include_python: bool = True
) -> Trace:
    """Load one or more paths (files or directories) as one trace; several files become ranks.

    A file's rank comes from the file itself (Kineto ``distributedInfo``), else from a number in its name
    (``rank3``), else from its position in the sorted list. Each file is cached on its own (``use_cache``).
    ``include_python=False`` leaves out Kineto ``python_function`` events (``--no-python``).
    Several large files are parsed in parallel processes (:func:`parallel_workers`); ranks whose clocks
    disagree are aligned on their collectives (:func:`gputop_trace.analysis.ranks.clock.align_rank_clocks`).
    """
    files = expand_paths(paths)
    if len(files) == 1:
        return load_file(files[0], progress=progress, use_cache=use_cache, include_python=include_python)
    return join_ranks(files, load_files(files, progress=progress, use_cache=use_cache, include_python=include_python))


def expand_paths(paths: Sequence[str]) -> list[str]:
    """The trace files ``paths`` name: files as given, directories as the trace files directly inside them."""
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(list_trace_files(p))
        else:
            files.append(p)
    return files


def load_files(
    files: Sequence[str], *, progress: Progress | None = None, use_cache: bool = True, include_python: bool = True
) -> list[Trace | TraceError]:
    """Each of several files loaded as one rank (in parallel processes when large, :func:`parallel_workers`); a
    file that is not a readable trace gives its :class:`TraceError` in its place. :func:`join_ranks` makes them
    one trace."""
    defaults = _default_ranks(files)
    workers = parallel_workers(files)
    if workers > 1:
        return _load_parallel(files, defaults, workers, progress, use_cache, include_python)
    results: list[Trace | TraceError] = []
    for f, d in zip(files, defaults, strict=True):
        try:
            results.append(
                load_file(f, progress=progress, default_rank=d, use_cache=use_cache, include_python=include_python)
            )
        except TraceError as e:
            results.append(e)
    return results


def join_ranks(files: Sequence[str], results: Sequence[Trace | TraceError]) -> Trace:
    """The ranks loaded by :func:`load_files` as one trace, their clocks aligned; files that failed are named in
    its warnings. A :class:`TraceError` when none loaded, or when they cannot be ranks of one job."""
    traces = [r for r in results if isinstance(r, Trace)]
    failed = [(f, r) for f, r in zip(files, results, strict=True) if isinstance(r, TraceError)]
    if not traces:  # nothing to show: the first file's own error says why
        raise failed[0][1]
    ranks = [r for t in traces for r in t.meta.ranks]
    if len(set(ranks)) != len(ranks):
        dup = sorted({r for r in ranks if ranks.count(r) > 1})
        raise TraceError(
            f"Several of these traces claim the same rank ({', '.join(map(str, dup))}): they look like runs of "
            "different jobs, or copies of one file. To compare two runs, use 'gputop-trace diff BASE TEST'; to look "
            "at one, open it alone; for a job, keep one file per rank.",
        )
    loaded = [f for f, r in zip(files, results, strict=True) if isinstance(r, Trace)]
    why = not_one_job(traces, loaded)
    if why:
        raise TraceError(
            f"These traces cannot be ranks of one job: {why}. Opened together they would be merged onto one "
            "clock and compared as if they waited for each other. To compare two runs, use "
            "'gputop-trace diff BASE TEST'; to look at one, open it alone.",
        )
    from gputop_trace.analysis.ranks.clock import align_rank_clocks

    trace = align_rank_clocks(merge_traces(traces))
    if failed:
        lost = [
            f"{os.path.basename(f)} was left out ({len(traces)} of {len(files)} traces were loaded): {e.message}"
            for f, e in failed
        ]
        trace = trace.with_meta(warnings=(*lost, *trace.meta.warnings))
    return trace


def not_one_job(traces: Sequence[Trace], files: Sequence[str]) -> str | None:
    """Why these traces (one per file) cannot be ranks of one job, or None when they can be.

    Ranks of one job agree on the world size and the distributed backend and process-group count
    (``distributedInfo``), and run on one GPU model; a rank is below the world size. Facts a file does not record
    are not held against it."""

    def info(t: Trace) -> dict[str, object]:
        d = t.meta.properties.get("distributedInfo")
        return d if isinstance(d, dict) else {}

    names = [os.path.basename(f) for f in files]
    for t, name in zip(traces, names, strict=True):
        if t.meta.world_size is not None:
            beyond = [r for r in t.meta.ranks if r >= t.meta.world_size]
            if beyond:
                return f"{name} is rank {beyond[0]} of a job of {t.meta.world_size} ranks"
    checks: list[tuple[str, list[object]]] = [
        ("world size", [t.meta.world_size for t in traces]),
        ("distributed backend", [info(t).get("backend") for t in traces]),
        ("number of process groups", [info(t).get("pg_count") for t in traces]),
        ("GPU model", [", ".join(sorted({g.name for g in t.meta.gpus if g.name})) or None for t in traces]),
    ]
    for what, values in checks:
        known = [(v, n) for v, n in zip(values, names, strict=True) if v is not None]
        if len({v for v, _ in known}) > 1:
            (a, na), (b, nb) = known[0], next(k for k in known if k[0] != known[0][0])
            return f"their {what} differs ({na}: {a}; {nb}: {b})"
    return _apart_in_time(traces, names)


#: ranks of one job are recorded at the same time: windows further apart than this (ns) are not one job's, even
#: for clocks that disagree (nodes' clocks differ by milliseconds; a profiler schedule by minutes)
MAX_RANK_GAP_NS = 3600 * 10**9


def _apart_in_time(traces: Sequence[Trace], names: Sequence[str]) -> str | None:
    """Why these traces' recorded windows (each in its file's own clock) are too far apart to be one job's."""
    windows = sorted((t.meta.t0_ns, t.meta.t0_ns + t.span_ns, n) for t, n in zip(traces, names, strict=True) if len(t))
    end, end_name = (windows[0][1], windows[0][2]) if windows else (0, "")
    for start, stop, name in windows[1:]:
        if start - end > MAX_RANK_GAP_NS:
            hours = (start - end) / 3.6e12
            apart = f"{hours / 24:,.1f} days" if hours >= 48 else f"{hours:,.1f} hours"
            return (
                f"they were recorded {apart} apart ({name} starts {apart} after {end_name} ends), and the ranks "
                "of one job are recorded at the same time"
            )
        if stop > end:
            end, end_name = stop, name
    return None

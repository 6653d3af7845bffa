"""One rank's trace file reduced to :class:`~gputop_trace.analysis.fleet.rank_summary.RankSummary` records, the
function every fleet executor runs next to the file.

:func:`summarize_file` is pure and picklable (module level, plain arguments, plain result) so that a process pool
or a Dask worker can run it. It never raises for a bad file: a problem with the input
(:class:`~gputop_trace.errors.TraceError`) becomes an error record with the loader's message, and an unexpected
exception (a bug) an error record that says "internal error" with the exception type and the traceback. Times in
the records are int64 ns; ``load_s``/``analyse_s``/``cpu_s`` are seconds.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from typing import TYPE_CHECKING

from gputop_trace import __version__
from gputop_trace.analysis.fleet.rank_summary import RankSummary, SummaryOptions, summarize_trace
from gputop_trace.errors import TraceError

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace


def summarize_file(path: str, default_rank: int = 0, options: SummaryOptions | None = None) -> list[RankSummary]:
    """Load one trace file and reduce it to a :class:`RankSummary` per rank it holds; never raises for a bad
    file (the list then holds one error record, with ``default_rank``).

    ``default_rank`` is used when the file does not say its rank (Kineto ``distributedInfo`` wins)."""
    opts = options or SummaryOptions()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        trace = _load(path, default_rank, opts)
        t1 = time.perf_counter()
        size = _size(path)
        summaries = [
            dataclasses.replace(s, version=__version__, file_bytes=size) for s in summarize_trace(trace, path, opts)
        ]
        t2 = time.perf_counter()
        cpu = time.process_time() - c0
        n = len(summaries)  # a multi-rank file's time is shared out evenly
        return [dataclasses.replace(s, load_s=(t1 - t0) / n, analyse_s=(t2 - t1) / n, cpu_s=cpu / n) for s in summaries]
    except TraceError as e:
        return [error_summary(path, default_rank, e.message, "input")]
    except MemoryError:
        msg = (
            f"{path}: ran out of memory while analysing it. Give each worker more memory (fewer workers per "
            "machine) or record a shorter profile."
        )
        return [error_summary(path, default_rank, msg, "input")]
    except Exception as e:  # a bug: report it with its traceback, never swallow it silently
        msg = (
            f"internal error: {type(e).__name__}: {e} (while analysing {path}). This is a bug in gputop-trace; "
            "please report it with the traceback."
        )
        return [error_summary(path, default_rank, msg, "internal", tb=traceback.format_exc())]


def error_summary(path: str, rank: int, message: str, kind: str, *, tb: str | None = None) -> RankSummary:
    """The record of a rank that could not be analysed."""
    return RankSummary(
        path=path, rank=rank, error=message, error_kind=kind, traceback=tb, version=__version__, file_bytes=_size(path)
    )


def _load(path: str, default_rank: int, opts: SummaryOptions) -> Trace:
    from gputop_trace.load.loader import load_file
    from gputop_trace.load.resources import check_memory

    if os.path.isdir(path):
        raise TraceError(f"{path} is a directory; a fleet run takes one trace file per rank.", path=path)
    check_memory([path], opts.max_memory)
    return load_file(path, default_rank=default_rank, use_cache=opts.use_cache)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0

"""A columnar cache of loaded traces: reopening a trace seen before maps its columns instead of parsing it.

Where: ``$GPUTOP_TRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/gputop-trace``, else ``~/.cache/gputop-trace``
(created private to the user). The cache never writes next to a trace and never changes one.

What: one folder per (trace file, load options, file state). Every numpy column of the :class:`Trace` is a plain
``.npy`` file, memory-mapped read-only on reopen; names are one UTF-8 blob plus offsets; lanes, counters' labels
and metadata are JSON (with tags that keep tuples, int dict keys, enums and non-finite floats exact);
``header.json`` records the format version, the loader's fingerprint, the source's absolute path, size and
mtime (ns), the load options, and each column's dtype, shape, size and CRC-32.

Trust: an entry is used only when its header matches the source as it is now and the current code (the
fingerprint hashes the package version and the parser and model sources, so any change to how traces are
parsed invalidates every entry), and when every column file has exactly the dtype, shape, size and checksum the
header promises and the columns agree with each other (ids in range, lanes partitioned). Anything else (a
truncated or rewritten column, a damaged header, a stale source) is removed and the trace parsed again.

Concurrency: an entry is written into a private temporary folder and renamed into place in one step; an entry
is never modified after that, so a reader sees a whole entry or none. When two processes parse the same trace
at once, the first rename wins and the other discards its copy. Entries of older versions of a trace are
removed when a new one is written; a reader still holding them keeps its mapping (POSIX keeps unlinked files).

Size: at most ``$GPUTOP_TRACE_CACHE_SIZE`` (default 4G; ``0`` turns writing off), least recently used entries
evicted first. Only traces of at least ``$GPUTOP_TRACE_CACHE_MIN`` (default 16M) are cached: smaller ones
load faster than a cache check is worth. ``GPUTOP_TRACE_NO_CACHE=1`` or ``--no-cache`` bypasses the cache.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop_trace.load.cache_entry import (
    HEADER,
    STALE_TMP_SECONDS,
    TMP_PREFIX,
    InvalidEntry,
    Uncacheable,
    read_entry,
    remove_entry,
    write_entry,
)
from gputop_trace.load.cache_keys import SourceKey, cache_root, max_bytes, min_source_bytes, worth_caching
from gputop_trace.model.trace import Trace


# --------------------------------------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------------------------------------
@dataclass
class CacheResult:
    """What :func:`load_cached` did (for tests, benchmarks and ``--verbose`` output)."""

    hit: bool = False
    written: bool = False
    rebuilt_because: str = ""
    entry: Path | None = None


def load_cached(
    path: str,
    options: Mapping[str, Any],
    parse: Callable[[], Trace],
    *,
    root: Path | None = None,
    min_bytes: int | None = None,
    result: CacheResult | None = None,
) -> Trace:
    """The trace of ``path`` from the cache when a valid entry exists, else ``parse()`` (then cached).

    ``options`` are the load options that change the result (they are part of the key). Caching is best
    effort: any problem with the cache folder falls back to parsing, silently.
    """
    res = result if result is not None else CacheResult()
    root = root if root is not None else cache_root()
    try:
        key = SourceKey.of(path, options)
    except OSError:
        return parse()  # the parser reports a missing or unreadable file properly
    limit = max_bytes()
    if not worth_caching(path, key.size, min_source_bytes() if min_bytes is None else min_bytes):
        return parse()
    folder = root / key.name
    if folder.is_dir():
        try:
            trace = read_entry(folder, key)
        except InvalidEntry as e:
            res.rebuilt_because = str(e)
            remove_entry(folder)
        except OSError as e:
            if (folder / HEADER).is_file():  # a file of the entry is missing or unreadable: damaged
                res.rebuilt_because = f"unreadable entry ({e.strerror or e}: {getattr(e, 'filename', '')})"
                remove_entry(folder)
            else:  # removed or evicted by another process while reading
                res.rebuilt_because = f"entry vanished ({e.strerror or e})"
        else:
            res.hit, res.entry = True, folder
            _touch(folder)
            return trace
    trace = parse()
    if limit <= 0:
        return trace
    try:
        res.entry = write_entry(trace, key, root)
        res.written = res.entry is not None
    except (OSError, Uncacheable):
        return trace
    _remove_older_states(root, key)
    evict(root, limit, keep=key.name)
    return trace


def _touch(folder: Path) -> None:
    try:
        os.utime(folder)
    except OSError:
        pass


def _entries(root: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(root) as it:
            yield from (e for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return


def _remove_older_states(root: Path, key: SourceKey) -> None:
    for e in _entries(root):
        if e.name.startswith(key.family + "-") and e.name != key.name:
            remove_entry(Path(e.path))


def _entry_bytes(folder: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def evict(root: Path, limit: int, *, keep: str = "") -> list[str]:
    """Remove least recently used entries until the cache holds at most ``limit`` bytes (never ``keep``);
    also clears temporary folders left by processes that died. Returns the names removed."""
    now = time.time()
    sized: list[tuple[float, str, int]] = []
    removed: list[str] = []
    for e in _entries(root):
        try:
            mtime = e.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if e.name.startswith(TMP_PREFIX):
            if now - mtime > STALE_TMP_SECONDS:
                shutil.rmtree(e.path, ignore_errors=True)
                removed.append(e.name)
            continue
        sized.append((mtime, e.name, _entry_bytes(e.path)))
    total = sum(s for _, _, s in sized)
    for _mtime, name, size in sorted(sized):
        if total <= limit:
            break
        if name == keep:
            continue
        remove_entry(root / name)
        removed.append(name)
        total -= size
    return removed

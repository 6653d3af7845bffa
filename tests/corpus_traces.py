"""Corpus traces loaded once per test process: a file, or a folder of per-rank files joined as one job."""

from __future__ import annotations

from functools import cache

from gputop_trace.load.loader import load_paths
from gputop_trace.model.trace import Trace
from tests.paths import CORPUS


@cache
def corpus_trace(rel: str) -> Trace:
    """The corpus file or folder ``rel`` (relative to the corpus) as one trace; loaded on first use, then shared."""
    p = CORPUS / rel
    return load_paths(sorted(str(x) for x in p.iterdir()) if p.is_dir() else [str(p)])

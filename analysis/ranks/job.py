"""Whether the loaded ranks are the whole job: a trace's ``distributedInfo.world_size`` against the ranks loaded.

Waits, stragglers and the collective matching only see the ranks that were loaded: when the job had more, every
view says so first (``2 of 128 ranks loaded: ...``), and the JSON ``source`` block carries it as ``job``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop_trace.model.tables import TraceMeta


@dataclass(frozen=True)
class JobCoverage:
    """``loaded`` of the job's ``world_size`` ranks were loaded (``loaded < world_size``); ``note`` says it in
    plain words, and what to do."""

    world_size: int
    loaded: tuple[int, ...]
    note: str

    def as_json(self) -> dict[str, object]:
        """The ``source.job`` object of the JSON contract."""
        return {"world_size": self.world_size, "ranks_loaded": len(self.loaded), "note": self.note}


def job_coverage(meta: TraceMeta) -> JobCoverage | None:
    """The coverage of an incomplete job, or None when every rank is loaded or the trace records no world size."""
    ws = meta.world_size
    ranks = tuple(meta.ranks)
    if not ws or len(ranks) >= ws:
        return None
    n = len(ranks)
    if n == 1:
        note = (
            f"1 of {ws} ranks loaded (rank {ranks[0]}): collective waits are estimates from this rank alone and no "
            "straggler can be named; open the whole folder of rank traces to compare the ranks."
        )
    else:
        note = (
            f"{n} of {ws} ranks loaded: waits and stragglers are among these {n} only; open the whole folder of "
            "rank traces."
        )
    return JobCoverage(world_size=ws, loaded=ranks, note=note)

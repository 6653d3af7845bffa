"""Write a synthetic fleet of per-rank Kineto traces derived from the corpus' 2-rank DDP traces.

    python benchmarks/make_fleet.py OUT_DIR --ranks 256 --straggler 37:4ms --straggler 201:6ms [--repeat K]

Rank ``r`` is a copy of corpus rank ``r % 2`` (every event kept; ``distributedInfo.rank``/``world_size`` and the
process-group fields rewritten) on a per-host clock: ranks are grouped ``--gpus-per-host`` to a host and every
host's clock is off by a random amount of up to ``--clock-skew``, as traces from different machines are.

Collectives are re-timed with a small model of how NCCL kernels behave, so that the analyses see what they would
see on a real job:

* every rank's host issues collective ``i`` at the corpus' last arrival ``A_i`` (the corpus' own straggler —
  rank 1 sleeps 4 ms per step — is evened out, so the injected stragglers are the only ones), plus a few tens
  of µs of jitter; a straggler issues it ``delay × U(0.5, 1.5)`` later: its launch call and the host events of
  its ``nccl:*`` annotation move by that much;
* a collective kernel starts when its launch arrives, but never before the previous collective on its stream
  ended (stream order), and it ends on every rank at the same moment: the last rank's arrival plus the transfer
  time the corpus recorded after its last arrival. The early ranks wait inside the kernel meanwhile.

Other GPU work keeps its times (a simplification: on a real job the optimiser would also start later).
``--repeat K`` repeats the recorded steps K times per file (ids and step numbers renumbered) for larger files.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
DDP = ("kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz", "kineto/h200_ddp_2gpu/rank1.pt.trace.json.gz")
_NCCL = re.compile(r"^(nccl|rccl)", re.IGNORECASE)
_STEP = re.compile(r"^step_(\d+)$")


@dataclass
class Template:
    """One corpus rank's events with their times in integer ns and the events that move with each collective."""

    header: dict[str, Any]
    events: list[dict[str, Any]]
    ts_ns: np.ndarray  # int64 start of every event (0 where the event has no ts)
    has_ts: np.ndarray  # bool
    is_x: np.ndarray  # bool: complete events (have a dur)
    dur_ns: np.ndarray  # int64
    kernel: np.ndarray  # event index of collective instance i (by start)
    gpu_side: list[np.ndarray] = field(default_factory=list)  # events that start with the kernel (kernel, flow, band)
    host_side: list[np.ndarray] = field(default_factory=list)  # events that move with the launch

    @property
    def arrival_ns(self) -> np.ndarray:
        return self.ts_ns[self.kernel]

    @property
    def end_ns(self) -> np.ndarray:
        return self.ts_ns[self.kernel] + self.dur_ns[self.kernel]


def _ns(ts: float) -> int:
    return round(ts * 1000)


def _span(doc: dict[str, Any]) -> tuple[int, int]:
    """First start and last end (ns) of a file's timed events."""
    timed = [e for e in doc["traceEvents"] if "ts" in e and e.get("ph") != "M"]
    return min(_ns(e["ts"]) for e in timed), max(_ns(e["ts"]) + _ns(e.get("dur", 0)) for e in timed)


def _repeat(doc: dict[str, Any], k: int, period: int) -> list[dict[str, Any]]:
    """The file's events with the recorded steps repeated ``k`` times, ``period`` ns apart (the same for every
    rank, so that repeated collectives stay matched): ids, flow ids and step numbers renumbered."""
    events = doc["traceEvents"]
    if k <= 1:
        return events
    corr_max = max((e.get("args", {}).get("correlation", 0) for e in events), default=0) + 1
    ext_max = max((e.get("args", {}).get("External id", 0) for e in events), default=0) + 1
    flow_max = max((e.get("id", 0) for e in events if isinstance(e.get("id"), int)), default=0) + 1
    steps = sum(1 for e in events if _STEP.match(str(e.get("name", ""))) and e.get("cat") == "user_annotation")
    out = list(events)
    for r in range(1, k):
        for e in events:
            if e.get("ph") in ("M", "i"):
                continue
            c = dict(e)
            c["ts"] = (_ns(e["ts"]) + r * period) / 1000
            if "args" in e:
                a = dict(e["args"])
                if "correlation" in a:
                    a["correlation"] += r * corr_max
                if "External id" in a:
                    a["External id"] += r * ext_max
                c["args"] = a
            if isinstance(e.get("id"), int):
                c["id"] = e["id"] + r * (corr_max if e.get("cat") == "ac2g" else flow_max)
            m = _STEP.match(str(e.get("name", "")))
            if m:
                c["name"] = f"step_{int(m.group(1)) + r * steps}"
            out.append(c)
    for e in out:  # the window end instant closes the last repetition
        if e.get("ph") == "i" and e.get("name") == "Record Window End":
            e["ts"] = (_ns(e["ts"]) + (k - 1) * period) / 1000
    return out


def read_doc(path: str | Path) -> dict[str, Any]:
    """A corpus trace file as decoded JSON."""
    with gzip.open(path, "rb") as f:
        doc: dict[str, Any] = msgspec.json.decode(f.read())
    return doc


def load_template(doc: dict[str, Any], repeat: int = 1, period: int = 0) -> Template:
    """Index one corpus rank's collectives (its steps repeated ``repeat`` times, ``period`` ns apart)."""
    events = _repeat(doc, repeat, period)
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    n = len(events)
    has_ts = np.array(["ts" in e for e in events], dtype=bool)
    ts = np.array([_ns(e["ts"]) if "ts" in e else 0 for e in events], dtype=np.int64)
    is_x = np.array([e.get("ph") == "X" for e in events], dtype=bool)
    dur = np.array([_ns(e.get("dur", 0)) if e.get("ph") == "X" else 0 for e in events], dtype=np.int64)
    cat = [e.get("cat") for e in events]
    name = [str(e.get("name", "")) for e in events]
    kernel = np.array([i for i in range(n) if cat[i] == "kernel" and _NCCL.match(name[i])], dtype=np.int64)
    kernel = kernel[np.argsort(ts[kernel], kind="stable")]
    by_corr: dict[int, list[int]] = {}
    for i, e in enumerate(events):
        c = e.get("args", {}).get("correlation") if isinstance(e.get("args"), dict) else None
        if c is not None and cat[i] in ("cuda_runtime", "cuda_driver"):
            by_corr.setdefault(int(c), []).append(i)
    flows_f: dict[tuple[int, int], int] = {}  # (id, ts) of a kernel-side launch flow end
    for i, e in enumerate(events):
        if e.get("ph") == "f" and e.get("cat") == "ac2g":
            flows_f[(int(e["id"]), int(ts[i]))] = i
    thread = [(e.get("pid"), e.get("tid")) for e in events]
    annotations = [i for i in range(n) if cat[i] == "user_annotation" and _NCCL.match(name[i]) and is_x[i]]
    bands = [i for i in range(n) if cat[i] == "gpu_user_annotation" and _NCCL.match(name[i]) and is_x[i]]
    t = Template(header=header, events=events, ts_ns=ts, has_ts=has_ts, is_x=is_x, dur_ns=dur, kernel=kernel)
    order = np.argsort(ts, kind="stable")
    sorted_ts = ts[order]
    for k in kernel.tolist():
        corr = int(events[k]["args"]["correlation"])
        gpu = [k]
        f = flows_f.get((corr, int(ts[k])))
        if f is not None:
            gpu.append(f)
        gpu += [b for b in bands if thread[b] == thread[k] and ts[b] <= ts[k] < ts[b] + max(dur[b], 1)]
        host: list[int] = []
        launches = by_corr.get(corr, [])
        if launches:
            la = launches[0]
            enclosing = [a for a in annotations if thread[a] == thread[la] and ts[a] <= ts[la] <= ts[a] + dur[a]]
            if enclosing:
                a = max(enclosing, key=lambda j: ts[j])
                lo = np.searchsorted(sorted_ts, ts[a], side="left")
                hi = np.searchsorted(sorted_ts, ts[a] + dur[a], side="right")
                cand = order[lo:hi]
                host = [
                    int(j) for j in cand if thread[j] == thread[a] and has_ts[j] and ts[j] + dur[j] <= ts[a] + dur[a]
                ]
            else:
                host = launches[:1] + [j for j, e in enumerate(events) if e.get("ph") == "s" and e.get("id") == corr]
        t.gpu_side.append(np.array(sorted(set(gpu)), dtype=np.int64))
        t.host_side.append(np.array(sorted(set(host) - set(gpu)), dtype=np.int64))
    return t


@dataclass(frozen=True)
class FleetPlan:
    """Per rank: template, clock offset (ns), host delay per collective (ns), kernel arrival and end (ns)."""

    ranks: int
    template_of: np.ndarray
    clock_offset_ns: np.ndarray
    host_delay_ns: np.ndarray  # [rank, instance]
    arrival_ns: np.ndarray  # [rank, instance], on the corpus clock (offset not applied)
    end_ns: np.ndarray
    stragglers: dict[int, int]


def plan_fleet(
    templates: Sequence[Template],
    ranks: int,
    stragglers: dict[int, int],
    *,
    seed: int = 0,
    jitter_ns: int = 30_000,
    clock_skew_ns: int = 2_000_000,
    gpus_per_host: int = 8,
    stream_gap_ns: tuple[int, int] = (2_000, 10_000),
) -> FleetPlan:
    """Decide every rank's clock offset, host delays, and collective kernel times (see the module doc)."""
    rng = np.random.default_rng(seed)
    n_inst = {len(t.kernel) for t in templates}
    if len(n_inst) != 1:
        raise SystemExit(f"the templates have different numbers of collectives: {sorted(n_inst)}")
    n = n_inst.pop()
    arrivals = np.stack([t.arrival_ns for t in templates])  # [template, instance]
    last = arrivals.max(axis=0)
    transfer = np.maximum(np.stack([t.end_ns for t in templates]) - last, 1_000)  # after the last arrival
    template_of = np.arange(ranks) % len(templates)
    hosts = (ranks + gpus_per_host - 1) // gpus_per_host
    host_offset = rng.integers(-clock_skew_ns, clock_skew_ns + 1, size=hosts)
    clock = host_offset[np.arange(ranks) // gpus_per_host]
    delay = rng.integers(0, jitter_ns + 1, size=(ranks, n)).astype(np.int64)
    for r, d in stragglers.items():
        if not 0 <= r < ranks:
            raise SystemExit(f"straggler rank {r} is not in 0..{ranks - 1}")
        delay[r] += (d * rng.uniform(0.5, 1.5, size=n)).astype(np.int64)
    arrive = np.zeros((ranks, n), dtype=np.int64)
    end = np.zeros((ranks, n), dtype=np.int64)
    prev_end = np.full(ranks, np.iinfo(np.int64).min // 2, dtype=np.int64)
    for i in range(n):
        queued = prev_end + rng.integers(stream_gap_ns[0], stream_gap_ns[1] + 1, size=ranks)
        arrive[:, i] = np.maximum(last[i] + delay[:, i], queued)
        end[:, i] = arrive[:, i].max() + transfer[template_of, i]
        prev_end = end[:, i]
    return FleetPlan(ranks, template_of, clock.astype(np.int64), delay, arrive, end, dict(stragglers))


def rank_events(t: Template, plan: FleetPlan, rank: int) -> list[dict[str, Any]]:
    """Rank ``rank``'s events: a copy of its template with its clock offset, host delays and kernel times."""
    start = t.ts_ns + plan.clock_offset_ns[rank]
    dur = t.dur_ns.copy()
    for i, (gpu, host) in enumerate(zip(t.gpu_side, t.host_side, strict=True)):
        start[host] += plan.host_delay_ns[rank, i]
        a = plan.arrival_ns[rank, i] + plan.clock_offset_ns[rank]
        e = plan.end_ns[rank, i] + plan.clock_offset_ns[rank]
        start[gpu] = a
        dur[gpu[t.is_x[gpu]]] = e - a
    out: list[dict[str, Any]] = []
    ts_us = (start / 1000).tolist()
    dur_us = (dur / 1000).tolist()
    for j, ev in enumerate(t.events):
        if not t.has_ts[j]:
            out.append(ev)
            continue
        c = dict(ev)
        c["ts"] = ts_us[j]
        if t.is_x[j]:
            c["dur"] = dur_us[j]
        out.append(c)
    return out


def _group_fields(events: list[dict[str, Any]], world: int) -> None:
    """Process-group fields of the collective kernels for a world of ``world`` ranks (in place, shared args)."""
    ranks_text = str(list(range(world)))
    seen: set[int] = set()
    for e in events:
        a = e.get("args")
        if isinstance(a, dict) and "Process Group Ranks" in a and id(a) not in seen:
            seen.add(id(a))
            a["Group size"] = world
            a["Process Group Ranks"] = ranks_text


def write_rank(t: Template, plan: FleetPlan, rank: int, out_dir: Path, level: int = 1) -> Path:
    """Write one rank's trace (gzip at ``level``; plain JSON for level 0) and return its path."""
    header = copy.deepcopy(t.header)
    dist = header.get("distributedInfo", {})
    dist["rank"] = rank
    dist["world_size"] = plan.ranks
    for pg in dist.get("pg_config", []):
        pg["pg_size"] = plan.ranks
        pg["ranks"] = list(range(plan.ranks))
    header["distributedInfo"] = dist
    path = out_dir / f"rank{rank:04d}.pt.trace.json{'.gz' if level else ''}"
    header["traceName"] = str(out_dir / f"rank{rank:04d}.pt.trace.json")
    data = msgspec.json.encode({**header, "traceEvents": rank_events(t, plan, rank)})
    if level:
        with gzip.open(path, "wb", compresslevel=level) as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@dataclass(frozen=True)
class Fleet:
    """What was written: the files (by rank), the injected stragglers (rank → delay ns) and the plan."""

    paths: list[Path]
    stragglers: dict[int, int]
    plan: FleetPlan


def make_fleet(
    out_dir: str | Path,
    ranks: int,
    stragglers: dict[int, int] | None = None,
    *,
    seed: int = 0,
    repeat: int = 1,
    corpus: str | Path | None = None,
    level: int = 1,
    **plan_args: Any,
) -> Fleet:
    """Write ``ranks`` per-rank traces into ``out_dir`` with the given stragglers (rank → host delay, ns)."""
    base = Path(corpus or os.environ.get("GPUTOP_CORPUS") or DEFAULT_CORPUS)
    docs = [read_doc(base / p) for p in DDP]
    spans = [_span(d) for d in docs]
    period = max(e for _, e in spans) - min(s for s, _ in spans) + 1_000_000
    templates = [load_template(d, repeat, period) for d in docs]
    for t in templates:
        _group_fields(t.events, ranks)
    plan = plan_fleet(templates, ranks, stragglers or {}, seed=seed, **plan_args)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_rank(templates[int(plan.template_of[r])], plan, r, out, level) for r in range(ranks)]
    return Fleet(paths, dict(stragglers or {}), plan)


def _delay(text: str) -> tuple[int, int]:
    rank, _, value = text.partition(":")
    m = re.fullmatch(r"([0-9.]+)\s*(ns|us|ms|s)?", value.strip() or "4ms")
    if not rank.isdigit() or not m:
        raise argparse.ArgumentTypeError(f"{text!r}: write RANK:DELAY, like 37:4ms")
    scale = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[m.group(2) or "ms"]
    return int(rank), round(float(m.group(1)) * scale)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="directory to write rank0000.pt.trace.json.gz …")
    p.add_argument("--ranks", type=int, default=256)
    p.add_argument(
        "--straggler",
        type=_delay,
        action="append",
        default=[],
        metavar="RANK:DELAY",
        help="a rank whose host issues its collectives DELAY late (×0.5–1.5 each time); repeatable",
    )
    p.add_argument("--repeat", type=int, default=1, help="repeat the recorded steps K times per file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="corpus directory (default: $GPUTOP_CORPUS or ../shared/corpus)")
    p.add_argument("--level", type=int, default=1, help="gzip level (0: plain .json)")
    a = p.parse_args(argv)
    fleet = make_fleet(a.out, a.ranks, dict(a.straggler), seed=a.seed, repeat=a.repeat, corpus=a.corpus, level=a.level)
    size = sum(p.stat().st_size for p in fleet.paths)
    print(
        f"wrote {len(fleet.paths)} ranks ({size / 1e6:.1f} MB) to {a.out}; stragglers: "
        + (", ".join(f"rank {r} (+{d / 1e6:g} ms)" for r, d in sorted(fleet.stragglers.items())) or "none")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

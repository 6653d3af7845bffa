"""Whether two runs can be compared: GPU model and count, world size, format, steps (count, naming, warm-up), and
how far their kernel-name sets overlap. Each difference is listed with what it weakens."""

from __future__ import annotations

from dataclasses import dataclass

from gputop_trace.analysis.diff.steps import RunSteps, StepPairs, step_key
from gputop_trace.model.trace import Trace
from gputop_trace.units import plural

#: Below this share of the kernel names in common (normalised names, Jaccard), the kernel sets are called different.
KERNEL_OVERLAP_MIN_PCT = 90.0


@dataclass(frozen=True)
class RunFacts:
    """What one run is: its GPU models (``not recorded`` when the file does not say), GPU count, world size,
    format, steps (all and steady), and the names of its steps with their numbers as ``<n>``."""

    gpu_models: tuple[str, ...]
    gpu_count: int
    ranks: tuple[int, ...]
    world_size: int
    format: str
    steps: int
    steady_steps: int
    warmup_steps: int
    step_naming: tuple[str, ...]


@dataclass(frozen=True)
class Difference:
    """One way the runs differ: ``what`` (an id: ``gpu_model``, ``gpu_count``, ``world_size``, ``ranks``, ``format``,
    ``no_steps``, ``step_count``, ``step_names``, ``kernel_names``), the two values, and what it weakens."""

    what: str
    base: str
    test: str
    weakens: str


@dataclass(frozen=True)
class Comparability:
    """Both runs' facts, the kernel-name overlap (shared normalised names / all, 0–100) and the differences."""

    base: RunFacts
    test: RunFacts
    kernel_overlap_pct: float
    shared_kernels: int
    base_only_kernels: int
    test_only_kernels: int
    differences: tuple[Difference, ...]


def run_facts(trace: Trace, steps: RunSteps) -> RunFacts:
    """The facts of one run."""
    models = tuple(sorted({g.name for g in trace.meta.gpus if g.name and "not recorded" not in g.name}))
    ranks = {ln.rank for ln in trace.lanes} | set(trace.meta.ranks)
    return RunFacts(
        gpu_models=models or ("not recorded",),
        gpu_count=len(trace.devices),
        ranks=tuple(sorted(ranks)),
        world_size=int(trace.meta.world_size or len(ranks)),
        format=trace.meta.format,
        steps=0 if steps.whole_span else len(steps),
        steady_steps=0 if steps.whole_span else steps.steady,
        warmup_steps=0 if steps.whole_span else int(steps.warmup.sum()),
        step_naming=tuple(sorted({step_key(lab) for lab in steps.labels})) if not steps.whole_span else (),
    )


def comparability(
    base: RunFacts, test: RunFacts, pairs: StepPairs, base_kernels: set[str], test_kernels: set[str]
) -> Comparability:
    """The differences between two runs that weaken the comparison."""
    diffs: list[Difference] = []
    if "not recorded" not in base.gpu_models + test.gpu_models and base.gpu_models != test.gpu_models:
        diffs.append(Difference("gpu_model", ", ".join(base.gpu_models), ", ".join(test.gpu_models),
                                "the step times compare the hardware as well as the code; kernel times differ by GPU, "
                                "so per-kernel deltas mix both"))  # fmt: skip
    if base.gpu_count != test.gpu_count:
        diffs.append(Difference("gpu_count", str(base.gpu_count), str(test.gpu_count),
                                "work is spread over a different number of GPUs: totals differ by that alone; compare "
                                "the per-step figures"))  # fmt: skip
    if base.world_size != test.world_size:
        diffs.append(Difference("world_size", str(base.world_size), str(test.world_size),
                                "each rank does a different share of the work and communicates differently: "
                                "collective and per-kernel deltas are not like for like"))  # fmt: skip
    if base.world_size == test.world_size > 1 and base.ranks != test.ranks:
        diffs.append(Difference("ranks", ", ".join(map(str, base.ranks)), ", ".join(map(str, test.ranks)),
                                "different ranks of a job do different work (one may wait in collectives for the "
                                "others): a difference can be the ranks' roles, not a change"))  # fmt: skip
    if base.format != test.format:
        diffs.append(Difference("format", base.format, test.format,
                                "the profilers record names and host activity differently: kernel names may not line "
                                "up, and operator, range and idle-cause rows compare what each recorded"))  # fmt: skip
    if not base.steps or not test.steps:
        which = "BASE" if not base.steps else "TEST"
        which = "both runs" if not base.steps and not test.steps else which
        diffs.append(Difference("no_steps", str(base.steps), str(test.steps),
                                f"{which} has no step ranges: the whole spans are compared, so there is no verdict "
                                "on noise and setup time counts as step time"))  # fmt: skip
    elif base.steps != test.steps or pairs.unmatched_base or pairs.unmatched_test:
        diffs.append(Difference("step_count", f"{base.steps} ({base.steady_steps} steady)",
                                f"{test.steps} ({test.steady_steps} steady)",
                                f"only the {plural(len(pairs), 'step')} both runs have are compared; whole-run "
                                "totals cover different amounts of work, so read the per-step columns"))  # fmt: skip
    if base.steps and test.steps and base.step_naming != test.step_naming:
        diffs.append(Difference("step_names", ", ".join(base.step_naming), ", ".join(test.step_naming),
                                f"steps are matched by {pairs.matched_by}: check that step k of one run is step k of "
                                "the other"))  # fmt: skip
    shared = base_kernels & test_kernels
    every = base_kernels | test_kernels
    overlap = 100.0 * len(shared) / len(every) if every else 100.0
    if overlap < KERNEL_OVERLAP_MIN_PCT:
        diffs.append(Difference("kernel_names", f"{len(base_kernels - test_kernels)} only in BASE",
                                f"{len(test_kernels - base_kernels)} only in TEST",
                                f"only {overlap:.0f} % of the kernel names are in both runs: those in one run show as "
                                "new or removed, a renamed kernel as one of each"))  # fmt: skip
    return Comparability(base, test, overlap, len(shared), len(base_kernels - test_kernels),
                         len(test_kernels - base_kernels), tuple(diffs))  # fmt: skip

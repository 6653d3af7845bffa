"""The verdict on step time: is TEST's step faster or slower than BASE's beyond the runs' own step-to-step noise?

For each pair of matched steady steps ``k`` the ratio ``r_k = test_k / base_k`` of their durations; the change is
``median(r) − 1``. Its 95 % confidence interval is a percentile bootstrap of that median: :data:`RESAMPLES`
resamples of the pairs with replacement, from a generator seeded with :data:`SEED` (the same input always gives
the same interval). The change is *beyond noise* when the interval leaves out 0. With fewer than
:data:`MIN_STEPS` pairs, or when a run has no step ranges, no verdict is given, and the reason is said.
Percentages are 0–100 floats: positive means TEST's step is longer (slower).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gputop_trace.units import plural

F64 = npt.NDArray[np.float64]

#: Fewest matched steady steps for a verdict.
MIN_STEPS = 5
RESAMPLES = 4000
SEED = 16
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Verdict:
    """``kind``: ``faster``, ``slower``, ``no_difference`` (within noise), ``identical`` (the same files),
    ``too_few_steps`` or ``whole_span`` (no step ranges: no verdict). ``change_pct`` the median change of step
    time (positive: TEST slower); ``ci_low_pct`` / ``ci_high_pct`` its 95 % interval (NaN without a verdict);
    ``steps`` the pairs it rests on; ``sentence`` all of it in words."""

    kind: str
    change_pct: float
    ci_low_pct: float
    ci_high_pct: float
    steps: int
    sentence: str

    @property
    def beyond_noise(self) -> bool:
        """Whether the change is larger than the noise."""
        return self.kind in ("faster", "slower")

    @property
    def noise_pct(self) -> float:
        """Half the width of the interval (the ``± x %`` of "no difference beyond noise")."""
        return (self.ci_high_pct - self.ci_low_pct) / 2


def bootstrap_median_ci(values: F64, *, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the median of ``values`` (seeded: reproducible)."""
    n = len(values)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    medians = np.median(values[idx], axis=1)
    tail = 100 * (1 - CONFIDENCE) / 2
    lo, hi = np.percentile(medians, [tail, 100 - tail])
    return float(lo), float(hi)


def _pct(x: float) -> str:
    return f"{abs(x):.1f} %"


def step_verdict(base_ns: F64, test_ns: F64, *, whole_span: str = "", identical: bool = False) -> Verdict:
    """The verdict from the durations (ns) of the matched steady steps (``base_ns[k]`` pairs with ``test_ns[k]``).
    ``whole_span``: which run has no step ranges (``BASE``, ``TEST`` or ``either run``; the durations are then the
    whole spans); ``identical``: the inputs are the same files."""
    n = len(base_ns)
    nan = float("nan")
    if identical:
        return Verdict("identical", 0.0, 0.0, 0.0, n, "BASE and TEST are identical: the same files.")
    ok = base_ns > 0
    ratios = np.asarray(test_ns[ok], dtype=np.float64) / np.asarray(base_ns[ok], dtype=np.float64)
    change = 100 * (float(np.median(ratios)) - 1) if len(ratios) else nan
    said = f"{change:+.1f} %" if len(ratios) else "unknown"
    if whole_span:
        return Verdict(
            "whole_span",
            change,
            nan,
            nan,
            n,
            f"No step ranges in {whole_span}: the whole spans are compared ({said}), one sample "
            "per run, so a change cannot be told from noise. Mark steps (torch.profiler schedule, "
            "record_function('step_N') or NVTX ranges) for a verdict.",
        )
    if len(ratios) < MIN_STEPS:
        return Verdict(
            "too_few_steps",
            change,
            nan,
            nan,
            len(ratios),
            f"No verdict: only {plural(len(ratios), 'matched steady step')} (at least "
            f"{MIN_STEPS} are needed to tell a change from step-to-step noise); the median change is {said} per "
            "step. Profile more steps.",
        )
    lo, hi = (100 * (v - 1) for v in bootstrap_median_ci(ratios))
    if lo > 0 or hi < 0:
        kind = "slower" if change > 0 else "faster"
        a, b = sorted((abs(lo), abs(hi)))
        sentence = f"TEST is {_pct(change)} {kind} per step (95 % CI {a:.1f}–{b:.1f} %): beyond noise."
    else:
        kind = "no_difference"
        sentence = (
            f"No difference beyond noise (± {(hi - lo) / 2:.1f} %): the median change is {said} per step, "
            f"within the 95 % interval {lo:+.1f} to {hi:+.1f} %."
        )
    return Verdict(kind, change, lo, hi, len(ratios), sentence)

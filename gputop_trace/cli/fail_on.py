"""``--fail-on``: turn findings into a CI exit code (1 when a condition holds, see ``gputop-trace summary --help``).

A condition list is comma-separated; each item is one of

* ``idle=PCT`` — some GPU is idle more than PCT % of its active span (``idle=30`` or ``idle=30%``);
* ``exposed=TIME`` — the exposed copy time (summed over GPUs) is above TIME (``exposed=5ms``);
* ``severity=PCT`` — some finding costs more than PCT % of its GPU's active span (``severity=10%``);
* a finding kind (``pageable_async``, ``sync_copy``, ``host_sync``, ``idle_gaps``, ``collective_wait`` ...) —
  that finding is present; ``any`` — any finding is present.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop_trace.units import format_ns, parse_duration_ns, plural

if TYPE_CHECKING:
    from gputop_trace.analysis.findings.assemble import Finding
    from gputop_trace.analysis.gaps.detect import DeviceGaps
    from gputop_trace.analysis.transfers import TransferReport

FINDING_KINDS = (
    "idle_gaps",
    "host_sync",
    "pageable_async",
    "sync_copy",
    "copy_on_compute_stream",
    "sync_memset",
    "side_stream_copy",
    "launch_bound",
    "launch_overhead",
    "slow_launch",
    "collective_wait",
    "no_gpu_activity",
)


@dataclass(frozen=True)
class FailOn:
    """Parsed ``--fail-on`` conditions (``None`` = not set)."""

    idle_pct: float | None = None
    exposed_ns: int | None = None
    severity_pct: float | None = None
    kinds: tuple[str, ...] = ()
    any_finding: bool = False


def _pct(text: str) -> float:
    v = float(text.strip().rstrip("%"))
    if not 0 <= v <= 100:
        raise ValueError(f"{text!r} is not a percentage between 0 and 100")
    return v


def parse_fail_on(text: str) -> FailOn:
    """argparse type for ``--fail-on``."""
    idle = exposed = severity = None
    kinds: list[str] = []
    any_finding = False
    try:
        for item in (p.strip() for p in text.split(",")):
            if not item:
                continue
            key, sep, value = item.partition("=")
            key = key.strip().lower()
            if sep:
                if key == "idle":
                    idle = _pct(value)
                elif key == "exposed":
                    exposed = parse_duration_ns(value, default_unit="ms")
                elif key == "severity":
                    severity = _pct(value)
                else:
                    raise ValueError(f"unknown condition {key!r}; use idle=PCT, exposed=TIME or severity=PCT")
            elif key == "any":
                any_finding = True
            elif key in FINDING_KINDS:
                kinds.append(key)
            else:
                raise ValueError(
                    f"unknown condition {item!r}; use idle=PCT, exposed=TIME, severity=PCT, any, or a finding kind "
                    f"({', '.join(FINDING_KINDS)})"
                )
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return FailOn(idle, exposed, severity, tuple(kinds), any_finding)


def add_fail_on(parser: argparse.ArgumentParser) -> None:
    """The ``--fail-on`` option."""
    parser.add_argument(
        "--fail-on",
        type=parse_fail_on,
        metavar="CONDITIONS",
        help="exit with code 1 when a condition holds (for CI): comma-separated idle=PCT (a GPU idle more than PCT%% "
        "of its active time), exposed=TIME (exposed copy time above TIME), severity=PCT (a finding costing more than "
        "PCT%%), any (any finding), or a finding kind such as pageable_async or host_sync",
    )


def failed_conditions(
    cond: FailOn, findings: list[Finding], gaps: list[DeviceGaps], transfers: TransferReport | None
) -> list[str]:
    """The conditions that hold, each as one line for the user (empty: pass)."""
    out: list[str] = []
    if cond.idle_pct is not None:
        for d in gaps:
            if d.idle_pct > cond.idle_pct:
                out.append(f"GPU {d.device} (rank {d.rank}) is idle {d.idle_pct:.1f}% > {cond.idle_pct:g}%")
    if cond.exposed_ns is not None and transfers is not None and transfers.exposed_ns > cond.exposed_ns:
        out.append(f"exposed copy time {format_ns(transfers.exposed_ns)} > {format_ns(cond.exposed_ns)}")
    if cond.severity_pct is not None:
        for f in findings:
            if 100.0 * f.severity > cond.severity_pct:
                out.append(f"finding {f.priority} ({f.kind}) costs {100.0 * f.severity:.1f}% > {cond.severity_pct:g}%")
    for k in cond.kinds:
        if any(f.kind == k for f in findings):
            out.append(f"finding {k} present")
    if cond.any_finding and findings:
        out.append(f"{plural(len(findings), 'finding')} present")
    return out

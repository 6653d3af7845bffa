"""Findings: the few things to fix first, in plain words, each with its evidence (detectors.md).

:func:`find_findings` (:mod:`.assemble`) runs every topic's detector and ranks what they found. The topics:
:mod:`.idle` (idle gaps by cause), :mod:`.sync` (host synchronizations), :mod:`.launch` (launch-bound GPUs, short
kernels), :mod:`.transfer` (copies), :mod:`.collective` (waits for a straggler), :mod:`.compiled` (torch.compile
and CUDA graphs), :mod:`.critical_path` (the item whose speed-up shortens a step most). :mod:`.draft` is what every
detector builds before the findings are ranked. Times are int64 ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.findings.assemble import Finding, at_stake_order, find_findings

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "assemble": ("Finding", "at_stake_order", "find_findings"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = ["Finding", "at_stake_order", "find_findings"]

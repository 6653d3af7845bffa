"""The critical path of each step: which chain of work sets the step time, what it is made of, and what the step
would take were one item faster (detectors.md §8).

- :mod:`.model`: the results (:class:`PathSegment`, :class:`WhatIf`, :class:`StepPath`) and the step graph's types;
- :mod:`.context`: what the whole trace gives every step (event roles, lane ends, collective peers, stream waits);
- :mod:`.edges`: the cross-lane edges inferred from the calls (wakes, joins, event waits);
- :mod:`.graph`: one step's dependency graph;
- :mod:`.walk`: the replay (optional compiled ``_replay``), the walk into segments, the what-ifs;
- :mod:`.path`: :func:`critical_paths`, putting it together per step. Times are int64 ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.critical_path.path import (
        CATEGORIES,
        PathSegment,
        StepPath,
        WhatIf,
        critical_paths,
        step_windows,
    )

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "path": ("CATEGORIES", "PathSegment", "StepPath", "WhatIf", "critical_paths", "step_windows"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = ["CATEGORIES", "PathSegment", "StepPath", "WhatIf", "critical_paths", "step_windows"]

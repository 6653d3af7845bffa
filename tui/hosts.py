"""What a screen or widget reads of the app it is in, as protocols: typed access to the app without importing it.

The app imports its screens and their widgets, so a screen or widget that imported the app (even only for a type)
would close an import circle (tests/unit/test_import_graph.py). :class:`TraceApp` is what the trace browser's
screens ask of :class:`~gputop_trace.tui.app.GputopApp`; :func:`shown_trace` is how a widget used in either app
finds the trace on show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from gputop_trace.model.trace import Trace
    from gputop_trace.tui.analysis_results import AnalysisResults


@runtime_checkable
class ShowsTrace(Protocol):
    """An app that shows one trace (None while loading, and in the app for two runs)."""

    trace: Trace | None


class CancelsLoad(Protocol):
    """An app whose load can be cancelled from its progress screen."""

    def cancel_load(self) -> None:
        """Stop the load and quit (exit code 130, as the command line)."""


class TraceApp(ShowsTrace, CancelsLoad, Protocol):
    """What the trace browser's screens read of the app: the analyses' results and the two requests they make."""

    results: AnalysisResults

    def want_critical_path(self) -> bool:
        """Start the critical path's worker the first time it is asked for; whether it was started now."""

    def back_to_fleet(self) -> bool:
        """Return to the fleet screen this trace was opened from; whether there was one."""


def shown_trace(node: DOMNode) -> Trace | None:
    """The trace ``node``'s app shows, for a widget used in either app (None while loading, in the app for two
    runs, in another app such as a test's, and for a widget not attached to an app)."""
    if not node.is_attached:
        return None
    app = node.app
    return app.trace if isinstance(app, ShowsTrace) else None


__all__ = ["CancelsLoad", "ShowsTrace", "TraceApp", "shown_trace"]

"""gputop-trace: a keyboard-driven terminal timeline browser and analyser for GPU profiles.

The package is laid out as ``parsers -> model <- analysis -> tui``: parsers turn a file into one frozen,
columnar :class:`~gputop_trace.model.trace.Trace`; analyses are pure functions of that trace; only the ``tui``
package imports Textual, and only the ``tui`` package and the command line print.
"""

__version__ = "0.1.0"

from gputop_trace.annotate import annotate  # one range for NVTX and torch.profiler

__all__ = ["__version__", "annotate"]

"""Pure analyses of a :class:`~gputop_trace.model.trace.Trace`: kernel table, idle gaps, transfer overlap, ranges.

Every function takes the trace (and explicit thresholds) and returns plain data; none prints, plots or
imports Textual. Times are int64 nanoseconds relative to the trace start unless a name says otherwise.
"""

"""Comparing two runs (``gputop-trace diff BASE TEST``): steps of both runs lined up (:mod:`.steps`), the verdict
on step time with a bootstrap confidence interval (:mod:`.verdict`), where the difference comes from
(:mod:`.attribution`), what makes the runs less comparable (:mod:`.comparability`), all put together by
:func:`gputop_trace.analysis.diff.compare.diff_runs`. Pure functions of two loaded traces; times in int64 ns."""

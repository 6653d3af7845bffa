"""The model: one frozen, columnar Trace for every input format (times int64 ns, sizes bytes).

Import each name from the module that defines it: ``arrays`` (numpy aliases), ``kinds`` (event, lane, copy,
memory and flow kinds), ``tables`` (lanes, metadata, side tables), ``trace`` (the :class:`Trace`), ``depths``
(row packing), ``native`` (the switch of the compiled parts), ``builder`` (:class:`TraceBuilder`), ``merge``
(ranks into one), ``kernel_names`` (demangled names), ``ncu`` (Nsight Compute records). This file imports
nothing, so the numpy-free parts stay numpy-free.
"""

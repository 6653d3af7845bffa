"""File → :class:`~gputop_trace.model.trace.Trace` loaders: ``chrome`` (Kineto, JAX, generic), ``nsys``, ``ncu``."""

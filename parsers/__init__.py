"""File → :class:`~gputop_trace.model.Trace` loaders: ``chrome`` (Kineto, JAX, generic), ``nsys``, ``ncu``."""

"""Capture: the commands ``gputop-trace record`` runs (torch.profiler through our launcher, ``nsys profile`` and
its SQLite export). Argument lists only; nothing here runs them."""

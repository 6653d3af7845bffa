"""``python -m gputop_trace``."""

from gputop_trace.cli import entry

entry()

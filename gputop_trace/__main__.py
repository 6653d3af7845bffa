"""``python -m gputop_trace``."""

from gputop_trace.cli.main import entry

entry()

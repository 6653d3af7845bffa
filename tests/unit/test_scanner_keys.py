"""The args keys the compiled scanner is configured with (written out in ``parsers/chrome/scanner.py``, so that a
load can start scanning before msgspec and the structs are imported) are exactly the keys ``Args`` reads: a key
missing there would leave an event's arg unread on the compiled path only."""

from __future__ import annotations

import msgspec

from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.structs import Args


def test_the_scanner_keys_are_the_fields_of_args_in_order() -> None:
    assert list(scanner.ARGS_KEYS) == [f.encode_name for f in msgspec.structs.fields(Args)]

"""A Chrome trace is opened, and its first window read and scanned, while the rest of the parser is imported
(parsers/chrome/opening.py): what the opening imports must stay light, and a load through it gives the model of
a load that opens the file itself."""

from __future__ import annotations

import json
import subprocess
import sys

from gputop_trace.load.loader import load_paths
from gputop_trace.parsers.chrome import loader as chrome
from tests.paths import SAMPLES
from tests.trace_compare import trace_differences

SAMPLE = str(SAMPLES / "h200_train_step.json.gz")

_IMPORTS = """
import json, sys
before = set(sys.modules)
from gputop_trace.parsers.chrome.opening import open_trace
print(json.dumps(sorted(set(sys.modules) - before)))
"""

#: the parser's heavy modules: msgspec, the typed structs, the decoders, the column builders, the model builder
HEAVY = (
    "msgspec",
    "gputop_trace.parsers.chrome.structs",
    "gputop_trace.parsers.chrome.decode",
    "gputop_trace.parsers.chrome.fast",
    "gputop_trace.parsers.chrome.lenient",
    "gputop_trace.parsers.chrome.columns",
    "gputop_trace.parsers.chrome.classify",
    "gputop_trace.parsers.chrome.loader",
    "gputop_trace.model.builder",
)


def test_the_opening_imports_none_of_the_heavy_modules() -> None:
    out = subprocess.run([sys.executable, "-c", _IMPORTS], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout)
    assert "gputop_trace.parsers.chrome.scanner" in modules  # (it did import the streamer's side)
    assert not [m for m in modules if m.split(".")[0] == "numpy" or m in HEAVY or m.startswith("msgspec.")], modules


def test_a_load_through_the_opening_gives_the_model_of_a_load_that_opens_the_file_itself() -> None:
    assert not trace_differences(load_paths([SAMPLE], use_cache=False), chrome.load(SAMPLE))[:8]

"""Where things are, for every test wherever its file sits: the checkout, the corpus, the bundled samples."""

from __future__ import annotations

import os
from pathlib import Path

#: the checkout (the folder holding pyproject.toml)
ROOT = Path(__file__).resolve().parents[1]
#: the shared corpus of real profiler output (``GPUTOP_CORPUS`` overrides)
CORPUS = Path(os.environ.get("GPUTOP_CORPUS", ROOT.parent / "shared" / "corpus")).resolve()
#: the sample traces bundled with the package
SAMPLES = ROOT / "gputop_trace" / "sample_traces"

"""Peak memory while loading stays within 1.0 × the uncompressed JSON + 200 MB (performance.md).

Measured as the peak RSS (``VmHWM``) of a fresh child process that loads a ~100 MB Kineto trace built from
the corpus (the GPT trace repeated along time by ``benchmarks/make_large.py``). Not a timing assert: the bound
is on memory, which does not depend on how busy the machine is.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT

SLACK_MB = 200
TARGET_MB = 100


def _make_large() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_large", ROOT / "benchmarks" / "make_large.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_large", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def large_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import CORPUS, require_corpus

    require_corpus()  # a module fixture runs before the per-test corpus gate: fail in CI, skip elsewhere
    ml = _make_large()
    out = tmp_path_factory.mktemp("large") / "kineto_100mb.json"
    ml.write_kineto(CORPUS / "kineto" / "h200_gpt_train_small.json.gz", out, TARGET_MB * 1_000_000)
    ml.write_gzip(out, out.with_name(out.name + ".gz"))
    return out


_CHILD = textwrap.dedent(
    """
    import sys
    from gputop_trace.load.loader import load_paths
    trace = load_paths([sys.argv[1]], use_cache=False)
    peak_kb = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    print(len(trace), trace.meta.properties["decompressed_size"], peak_kb)
    """
)


def _peak_rss_mb(path: Path) -> tuple[float, int, int]:
    """The child's own peak RSS (``VmHWM``: ``wait4``'s ``ru_maxrss`` would include the memory of this test
    process that the child shared between fork and exec)."""
    env = {**os.environ, "GPUTOP_TRACE_NO_CACHE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, env=env, text=True, check=True
    ).stdout
    events, size, peak_kb = (int(x) for x in out.split())
    return peak_kb / 1024, events, size


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc (Linux)")
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_peak_memory_while_loading_100mb_stays_under_the_bound(large_trace: Path, suffix: str) -> None:
    path = large_trace.with_name(large_trace.name + suffix)
    rss_mb, events, size = _peak_rss_mb(path)
    json_mb = size / 1e6
    assert json_mb > 90 and events > 200_000  # the input really is large
    assert rss_mb <= json_mb + SLACK_MB, f"peak RSS {rss_mb:.0f} MB for {json_mb:.0f} MB of JSON"

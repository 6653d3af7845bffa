"""A gzip trace reads the same whether it is inflated on a thread of its own (InflateAhead: machines with cores to
spare) or by the streamer, straight into its window (2-core machines, as CI): every gzip Chrome trace in the
corpus gives the same model both ways."""

from __future__ import annotations

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.model.trace import Trace
from gputop_trace.parsers import inflate_ahead
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome.opening import open_trace
from tests.conftest import CORPUS, require_corpus
from tests.trace_compare import trace_differences

GZ_FILES = sorted(
    str(p.relative_to(CORPUS)) for sub in ("kineto", "jax", "external") for p in (CORPUS / sub).rglob("*.json.gz")
)


def test_the_corpus_holds_gzip_chrome_traces() -> None:
    require_corpus()
    assert len(GZ_FILES) >= 5


@pytest.mark.corpus
@pytest.mark.parametrize("rel", GZ_FILES)
def test_inflated_apart_or_in_the_window_the_model_is_the_same(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(CORPUS / rel)
    got: dict[str, Trace | str] = {}
    for forced in ("1", "0"):
        monkeypatch.setenv(inflate_ahead.ENV, forced)
        opened = open_trace(path)
        assert (opened.ahead is not None) == (forced == "1")
        try:
            got[forced] = chrome.load(path, opened=opened)
        except TraceError as e:  # an execution trace, not a Chrome trace: refused alike both ways
            got[forced] = str(e)
    if isinstance(got["1"], str) or isinstance(got["0"], str):
        assert got["1"] == got["0"]
        return
    assert not trace_differences(got["1"], got["0"]), trace_differences(got["1"], got["0"])[:8]

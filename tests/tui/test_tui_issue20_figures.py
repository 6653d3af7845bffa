"""Issue 20's leftovers in the app, at 80x24 and 160x48 on real corpus traces: JAX memsets show their bytes in the
Transfers panel (14)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from gputop_trace.tui.app import GputopApp
from gputop_trace.units import format_bytes
from tests.conftest import corpus_file
from tests.tui_helpers import press, run, wait_loaded, wait_text

SIZES = [(80, 24), (160, 48)]

pytestmark = pytest.mark.corpus

JAX = corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")


def _jax_gpu_memset_bytes() -> list[int]:
    """``num_bytes`` of every memset on a ``/device:GPU`` process of the JAX trace, read with the stdlib (the
    host's ``Memset`` calls carry the same details string but are CPU events)."""
    with gzip.open(JAX, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu_pids = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("/device:GPU")
    }
    out = []
    for e in events:
        details = (e.get("args") or {}).get("Memset_details")
        if e.get("ph") == "X" and e["pid"] in gpu_pids and details is not None:
            m = re.search(r"num_bytes:(\d+)", details)
            assert m is not None, details
            out.append(int(m.group(1)))
    return out


@pytest.mark.parametrize("size", SIZES)
def test_transfers_panel_shows_the_jax_memsets_bytes(size: tuple[int, int]) -> None:
    """Issue 20.14 in the app: 25 memsets of 4 B each (``Memset_details: "kind:unknown num_bytes:4 async:1"``)
    read ``memset 25× 100 B`` in the panel's summary and ``4 B`` in each memset row; they read 0 B."""
    sizes = _jax_gpu_memset_bytes()
    assert len(sizes) == 25 and set(sizes) == {4}
    summary = f"memset {len(sizes)}× {format_bytes(sum(sizes))}"
    assert summary == "memset 25× 100 B"

    async def body() -> None:
        app = GputopApp([JAX])
        async with app.run_test(size=size) as pilot:
            await wait_loaded(app, pilot)
            await press(pilot, "3")
            text = await wait_text(pilot, app, "copies and memsets")
            assert summary in text, text
            rows = [ln.split() for ln in text.splitlines() if re.match(r"\s*[\d.]+ (?:ns|µs)\s+[\d.]+ (?:ns|µs)\s", ln)]
            memsets = [r for r in rows if r[4] == "memset"]
            assert memsets and all(r[5:7] == ["4", "B"] for r in memsets), rows
            assert "memset 25× 0 B" not in text

    run(body())

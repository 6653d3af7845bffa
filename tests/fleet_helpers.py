"""Fleets for the fleet tests, generated once per session from the corpus DDP pair with
``benchmarks/make_fleet.py`` (import the fixtures into a test module to use them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from tests.conftest import CORPUS, ROOT, require_corpus

if TYPE_CHECKING:
    from gputop_trace.analysis.fleet.rank_summary import RankSummary, SummaryOptions

#: The 256-rank fleet's injected stragglers: rank → host delay per collective (ns, ×0.5–1.5 each time).
STRAGGLERS_256 = {37: 4_000_000, 130: 3_000_000, 201: 6_000_000}
#: The small fleet's straggler.
STRAGGLERS_SMALL = {5: 4_000_000}


def make_fleet_module() -> ModuleType:
    """``benchmarks/make_fleet.py`` as a module."""
    name = "gputop_bench_make_fleet"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "make_fleet.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _need_corpus() -> None:
    require_corpus()  # fail under GPUTOP_REQUIRE_CORPUS=1 (CI), skip elsewhere


@pytest.fixture(scope="session")
def fleet_small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, int]]:
    """12 ranks on 2 hosts (clocks up to ±2 ms apart), rank 5 a straggler; (directory, stragglers)."""
    _need_corpus()
    out = tmp_path_factory.mktemp("fleet12")
    make_fleet_module().make_fleet(out, 12, STRAGGLERS_SMALL, seed=3, corpus=CORPUS)
    return out, dict(STRAGGLERS_SMALL)


@pytest.fixture(scope="session")
def fleet_256(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, int]]:
    """256 ranks on 32 hosts with three stragglers; (directory, stragglers)."""
    _need_corpus()
    out = tmp_path_factory.mktemp("fleet256")
    make_fleet_module().make_fleet(out, 256, STRAGGLERS_256, seed=11, corpus=CORPUS)
    return out, dict(STRAGGLERS_256)


@pytest.fixture(scope="session")
def fleet_parquet(
    fleet_small: tuple[Path, dict[int, int]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[int, int]]:
    """The small fleet analysed by ``gputop-trace fleet --out``; (Parquet path, stragglers)."""
    from gputop_trace.cli.main import main

    out = tmp_path_factory.mktemp("fleetpq") / "fleet.parquet"
    assert main(["fleet", str(fleet_small[0]), "--executor", "local", "--out", str(out)]) == 0
    return out, fleet_small[1]


def summarize_or_die(path: str, default_rank: int, options: SummaryOptions) -> list[RankSummary]:
    """A per-file function whose worker process dies (as if killed for memory) on files named ``*die*``."""
    import os

    from gputop_trace.analysis.fleet.rank_summary import SummaryOptions
    from gputop_trace.fleet.summarize import summarize_file

    if "die" in os.path.basename(path):
        os._exit(9)
    assert isinstance(options, SummaryOptions)
    return summarize_file(path, default_rank, options)

"""Shared fixtures: where the corpus is, and the rule that corpus tests skip on a user's machine without it
but fail in CI (``GPUTOP_REQUIRE_CORPUS=1``, set by ``.ci/run``). Before anything is collected, pytest stops with
one message when the package it would import is not this checkout's editable install (tests/install_check.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.install_check import install_problem
from tests.paths import CORPUS, ROOT, SAMPLES

__all__ = ["CORPUS", "ROOT", "SAMPLES", "corpus_missing_reason"]


def pytest_configure(config: pytest.Config) -> None:
    """Stop at once, with one paragraph saying what is wrong and the command that fixes it, when the package the
    tests would import is not this checkout's editable install (instead of an import error in every test module)."""
    problem = install_problem(ROOT)
    if problem is not None:
        raise pytest.UsageError(problem)


def corpus_missing_reason() -> str | None:
    """Why corpus tests cannot run here (None when they can)."""
    if not (CORPUS / "README.md").is_file():
        return f"the test corpus is not at {CORPUS} (set GPUTOP_CORPUS to its folder)"
    return None


@pytest.fixture(autouse=True, scope="session")
def _private_trace_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests never read or write the user's trace cache (~/.cache/gputop-trace)."""
    old = os.environ.get("GPUTOP_TRACE_CACHE_DIR")
    os.environ["GPUTOP_TRACE_CACHE_DIR"] = str(tmp_path_factory.mktemp("trace-cache"))
    yield
    if old is None:
        os.environ.pop("GPUTOP_TRACE_CACHE_DIR", None)
    else:
        os.environ["GPUTOP_TRACE_CACHE_DIR"] = old


def require_corpus() -> None:
    """Skip (on a user's machine without the corpus) or fail (``GPUTOP_REQUIRE_CORPUS=1``, CI) when the corpus is
    missing; every corpus test and fixture goes through here."""
    reason = corpus_missing_reason()
    if reason is None:
        return
    if os.environ.get("GPUTOP_REQUIRE_CORPUS") == "1":
        pytest.fail(f"GPUTOP_REQUIRE_CORPUS=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def require_compiled(built: bool, what: str, *, module: bool = False) -> None:
    """Skip (a user's machine without a C compiler) or fail (``GPUTOP_REQUIRE_SCANNER=1``, CI, which builds every
    compiled part) when the compiled part ``what`` is not built; ``module``: called at a test module's top, for the
    whole module."""
    if built:
        return
    if os.environ.get("GPUTOP_REQUIRE_SCANNER") == "1":
        pytest.fail(f"GPUTOP_REQUIRE_SCANNER=1 but {what} is not built", pytrace=False)
    pytest.skip(f"{what} is not built here (no C compiler at install)", allow_module_level=module)


@pytest.fixture(autouse=True)
def _corpus_gate(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("corpus") is not None:
        require_corpus()


@pytest.fixture
def corpus() -> Path:
    """The corpus folder (tests using it must carry the ``corpus`` marker)."""
    return CORPUS


def corpus_file(rel: str) -> str:
    """Absolute path of a corpus file (for parametrization at import time)."""
    return str(CORPUS / rel)


FAKE_NCU_DIR = ROOT / "tests" / "fake_ncu"


@pytest.fixture
def fake_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The stand-in ``ncu`` (tests/fake_ncu/ncu, replaying corpus outputs) first on PATH, the user cache dir in
    ``tmp_path``; returns the file where the stand-in logs every argv it receives (one JSON list per line).
    Pick the scenario with ``monkeypatch.setenv("FAKE_NCU_SCENARIO", ...)``. Tests using it need the corpus marker."""
    monkeypatch.setenv("PATH", f"{FAKE_NCU_DIR}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NCU_CORPUS", str(CORPUS / "ncu"))
    argv_log = tmp_path / "ncu-argv.jsonl"
    monkeypatch.setenv("FAKE_NCU_ARGV_LOG", str(argv_log))
    monkeypatch.setenv("GPUTOP_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("GPUTOP_NCU", "FAKE_NCU_SCENARIO", "FAKE_NCU_REPORT", "FAKE_NCU_CHILD_PID", "FAKE_NCU_SLEEP"):
        monkeypatch.delenv(var, raising=False)
    return argv_log


def torch_missing_reason() -> str | None:
    """Why tests that run PyTorch cannot run here (None when they can)."""
    import importlib.util

    return None if importlib.util.find_spec("torch") is not None else "PyTorch is not installed (pip install torch)"


@pytest.fixture
def torch_required() -> None:
    """Skip a test that runs PyTorch where it is not installed; fail instead under ``GPUTOP_REQUIRE_TORCH=1``
    (``.ci/run`` sets it and installs the CPU build)."""
    reason = torch_missing_reason()
    if reason is None:
        return
    if os.environ.get("GPUTOP_REQUIRE_TORCH") == "1":
        pytest.fail(f"GPUTOP_REQUIRE_TORCH=1 but {reason}", pytrace=False)
    pytest.skip(reason)


FAKE_NSYS_DIR = ROOT / "tests" / "fake_nsys"


def process_alive(pid: int) -> bool:
    """Whether a process still runs (a zombie waiting for a parent that never reaps it counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def wait_gone(pid: int, timeout_s: float = 5.0) -> bool:
    """Poll until ``pid`` is gone; True when it went."""
    import time

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not process_alive(pid):
            return True
        time.sleep(0.05)
    return not process_alive(pid)

"""The package as users get it: the built wheel installs and runs from anywhere; import boundaries hold."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.paths import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One wheel for the whole run, built once: pytest-xdist's workers share the folder above their own temporary
    ones, and a lock there keeps two workers from building at once (they would share the checkout's build/)."""
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent
    out = shared / "wheel"
    with open(shared / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(out.glob("gputop_trace-*.whl"))
        if built:
            return built[0]
        out.mkdir(exist_ok=True)
        pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        proc = subprocess.run(
            [*pip, "-w", str(out), str(ROOT)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        (whl,) = out.glob("gputop_trace-*.whl")
        return whl


def test_wheel_holds_the_package_under_its_import_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "gputop_trace/__init__.py" in names
    assert "gputop_trace/parsers/chrome/loader.py" in names
    assert "gputop_trace/parsers/nsys/loader.py" in names
    assert "gputop_trace/analysis/kernels.py" in names
    assert "gputop_trace/tui/view/timeline_math.py" in names
    assert "gputop_trace/model/trace.py" in names
    assert "gputop_trace/sample_traces/h200_train_step.json.gz" in names
    # never top-level modules called parsers / tui / analysis / core
    assert not any(n.split("/")[0] in ("parsers", "tui", "analysis", "core", "tests") for n in names)
    # no test oracle and no GPU recording script in what users install
    assert not [n for n in names if "chrome_reference" in n or "make_samples" in n]


def test_wheel_requires_what_the_product_imports_and_nothing_it_does_not(wheel: Path) -> None:
    """ncu-report is required where NVIDIA ships wheels (so the README's install opens a .ncu-rep); pandas, which
    the product never imports, is not required."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    requires = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    plain = [r for r in requires if "extra ==" not in r]
    names = {r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in plain}
    assert {"textual", "rich", "numpy", "msgspec", "nvtx", "ncu-report"} <= names
    assert "pandas" not in names
    (ncu,) = [r for r in plain if r.lower().startswith("ncu-report")]
    assert 'platform_machine == "x86_64"' in ncu and 'sys_platform == "linux"' in ncu


def test_installed_wheel_runs_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the installed package must win over the checkout: run from a directory outside it, checkout off the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = str(site)
    script = site / "bin" / "gputop-trace"
    assert script.exists()
    ver = subprocess.run(
        [sys.executable, str(script), "--version"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ver.returncode == 0, ver.stderr
    from gputop_trace import __version__

    assert ver.stdout.strip() == f"gputop-trace {__version__}"
    where = subprocess.run(
        [sys.executable, "-c", "import gputop_trace; print(gputop_trace.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert where.stdout.strip().startswith(str(site))
    summ = subprocess.run(
        [sys.executable, str(script), "summary", "--json"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert summ.returncode == 0, summ.stderr
    doc = json.loads(summ.stdout)
    assert doc["source"]["format"] == "kineto"
    assert doc["devices"][0]["name"] == "NVIDIA H200"


def test_parsers_and_analysis_never_import_textual_or_pandas() -> None:
    code = (
        "import sys, gputop_trace.load.loader, gputop_trace.parsers.chrome.loader, gputop_trace.parsers.sniff, "
        "gputop_trace.analysis.kernels, gputop_trace.analysis.busy, gputop_trace.analysis.intervals, "
        "gputop_trace.analysis.enclosing, gputop_trace.cli.main, gputop_trace.report.envelope\n"
        "import pkgutil, importlib, gputop_trace.analysis as a, gputop_trace.parsers as p\n"
        "for pkg in (a, p):\n"
        "    for m in pkgutil.iter_modules(pkg.__path__):\n"
        "        importlib.import_module(pkg.__name__ + '.' + m.name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "", f"textual imported outside tui/: {out.stdout}"


def test_cli_start_up_imports_stay_light() -> None:
    code = (
        "import sys\nfrom gputop_trace.cli.main import build_parser\nbuild_parser()\n"
        "print(','.join(m for m in ('textual', 'pandas', 'numpy', 'msgspec') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == ""


def test_no_unresolved_merge_conflicts_in_tracked_text() -> None:
    """A merge left half-resolved shows its markers to every reader of the README and docs."""
    root = ROOT
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        pytest.skip("git is not installed: the tracked files are unknown")
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the tracked files are unknown")
    marker = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)
    bad = []
    for rel in listed.stdout.splitlines():
        path = root / rel
        if path.suffix not in {".md", ".py", ".toml", ".txt", ".cfg", ".sh", ""} or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        bad += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}" for m in marker.finditer(text)]
    assert not bad, f"merge conflict markers at {bad}"


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    """CI must run exactly what the README tells a user to run (the second command of the quick start)."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme.split("## Quick start", 1)[1].split("\n## ", 1)[0], re.S)
    assert len(blocks) == 2, "the quick start has two commands: open the sample, run the tests"
    test_command = blocks[1].strip()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci, f"{test_command!r} is not a line of .ci/run"
    assert "GPUTOP_REQUIRE_CORPUS=1" in "\n".join(ci)
    # the static gates (ruff, mypy --strict, import-linter) run before the tests, and each is in the gates script
    assert "scripts/gates.sh" in ci and ci.index("scripts/gates.sh") < ci.index(test_command)
    gates = (ROOT / "scripts" / "gates.sh").read_text()
    for gate in ("ruff check", "ruff format --check", "mypy", "-p gputop_trace", "-p tests", "lint-imports"):
        assert gate in gates, gate


def test_docs_keys_is_the_readmes_keys_section() -> None:
    """docs/keys.md is the README's Keys section, word for word: a key documented in one place only drifts."""
    readme = (ROOT / "README.md").read_text()
    section = "## Keys" + readme.split("\n## Keys", 1)[1].split("\n## ", 1)[0]
    assert (ROOT / "docs" / "keys.md").read_text().rstrip() == section.rstrip()

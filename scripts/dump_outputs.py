"""Write every command's output on every corpus input to a folder, to compare two versions of the code.

A restructuring must not change what a user sees. Run this before and after it, then ``diff -r`` the two folders:

    python scripts/dump_outputs.py /tmp/before      # at the old commit
    python scripts/dump_outputs.py /tmp/after       # at the new one
    diff -r /tmp/before /tmp/after && echo identical

Each command runs in-process (``gputop_trace.cli.main.main``) with ``--no-cache`` where it takes it, at a fixed
terminal width (``COLUMNS=160``), once with ``--json`` and once as text. Its exit code and standard error are
written next to its standard output, so a changed error message or exit status shows too. Files are named
``<input>__<command>[.json].txt``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

CORPUS = Path(os.environ.get("GPUTOP_CORPUS", Path(__file__).resolve().parents[1].parent / "shared" / "corpus"))
TRACE_COMMANDS = ("summary", "kernels", "gaps", "transfers", "ranges", "ops", "critical-path", "ranks")
NO_CACHE = {"summary", "kernels", "gaps", "transfers", "ranges", "ops", "critical-path", "ranks"}


def corpus_inputs() -> list[Path]:
    """Every trace file (and rank folder) of the corpus, in a fixed order."""
    found: list[Path] = []
    for sub in ("kineto", "jax", "nsys", "external"):
        for path in sorted((CORPUS / sub).rglob("*")):
            if path.is_file() and path.suffix in (".gz", ".json", ".sqlite"):
                found.append(path)
    found.append(CORPUS / "kineto" / "h200_ddp_2gpu")
    return found


def ncu_inputs() -> list[Path]:
    """The corpus's Nsight Compute reports and CSV pages."""
    return sorted((CORPUS / "ncu").glob("*.ncu-rep")) + sorted((CORPUS / "ncu").glob("*_details.csv"))


def run(argv: list[str]) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``gputop-trace ARGV`` run in this process."""
    from gputop_trace.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def dump(folder: Path, label: str, argv: list[str]) -> None:
    """Run one command and write what it printed to ``folder/label.txt``."""
    code, out, err = run(argv)
    (folder / f"{label}.txt").write_text(f"exit {code}\n--- stderr\n{err}--- stdout\n{out}")


def main(folder: Path) -> None:
    """Write the outputs of every command on every input under ``folder``."""
    os.environ["COLUMNS"] = "160"
    folder.mkdir(parents=True, exist_ok=True)
    for path in corpus_inputs():
        stem = str(path.relative_to(CORPUS)).replace("/", "_")
        for command in TRACE_COMMANDS:
            extra = ["--no-cache"] if command in NO_CACHE else []
            dump(folder, f"{stem}__{command}.json", [command, str(path), "--json", *extra])
            dump(folder, f"{stem}__{command}", [command, str(path), *extra])
    for path in ncu_inputs():
        stem = str(path.relative_to(CORPUS)).replace("/", "_")
        dump(folder, f"{stem}__ncu.json", ["ncu", str(path), "--json"])
        dump(folder, f"{stem}__ncu", ["ncu", str(path)])
    base, test = (
        sorted((CORPUS / "external" / "trace_compare" / "base").glob("*.gz")),
        sorted((CORPUS / "external" / "trace_compare" / "test").glob("*.gz")),
    )
    dump(folder, "trace_compare__diff.json", ["diff", str(base[0]), str(test[0]), "--json"])
    dump(folder, "trace_compare__diff", ["diff", str(base[0]), str(test[0])])
    ddp = CORPUS / "kineto" / "h200_ddp_2gpu"
    dump(folder, "ddp__diff", ["diff", str(ddp / "rank0.pt.trace.json.gz"), str(ddp / "rank1.pt.trace.json.gz")])


if __name__ == "__main__":
    main(Path(sys.argv[1]))

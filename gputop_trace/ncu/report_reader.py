"""Open an Nsight Compute report (``.ncu-rep``, or a saved CSV page) → :class:`~gputop_trace.model.ncu.NcuReport`.

Two readers, tried in this order by :func:`load_report`:

1. the ``ncu-report`` Python package (``import ncu_report``; also found inside an ncu install's
   ``extras/python`` folder, :func:`gputop_trace.ncu.locate.import_ncu_report`): exact values in base units,
   ncu's rule results with their messages;
2. the ncu command line: ``ncu -i REPORT --csv --print-units base --page raw`` for the metrics and
   ``--page details`` for the rule messages (:func:`kernels_from_ncu_cli`), the text parsed by
   :func:`gputop_trace.parsers.ncu.kernels_from_csv`.

The source page (``ncu -i REPORT --csv --page source --print-source sass``: per-SASS-line warp-stall samples)
is read on request (:func:`read_source_page`); a report collected without source counters simply has none.

ncu is found with :func:`gputop_trace.ncu.locate.find_ncu` unless a path is given. ``ncu -i`` runs from an
argument list (never a shell) with a time limit of :data:`NCU_CSV_TIMEOUT_S` seconds per page.
"""

from __future__ import annotations

import subprocess

from gputop_trace.errors import TraceError
from gputop_trace.model.ncu import NcuKernel, NcuReport, NcuSourceLine
from gputop_trace.ncu import locate
from gputop_trace.numpy_env import user_env
from gputop_trace.parsers.ncu import (
    check_report_file,
    kernels_from_csv,
    kernels_from_ncu_report,
    load_csv,
    parse_source_csv,
    with_source,
)

#: Seconds one ``ncu -i ... --csv`` page may take.
NCU_CSV_TIMEOUT_S = 120.0


def _run_ncu_import(ncu: str, path: str, page: str) -> str:
    argv = [ncu, "-i", path, "--csv", "--print-units", "base", "--page", page]
    if page == "source":
        argv += ["--print-source", "sass"]
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=NCU_CSV_TIMEOUT_S,
            check=False,
            env=user_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TraceError(f"Running '{' '.join(argv)}' failed: {e}.", path=path) from None
    if proc.returncode != 0:
        errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("==ERROR==")]
        detail = " ".join(ln.removeprefix("==ERROR==").strip() for ln in errors) or f"exit code {proc.returncode}"
        raise TraceError(f"ncu could not read {path}: {detail}", path=path)
    return proc.stdout


def kernels_from_ncu_cli(ncu: str, path: str) -> list[NcuKernel]:
    """Every kernel of a report, read through ``ncu -i`` (raw page for metrics, details page for rules)."""
    raw = _run_ncu_import(ncu, path, "raw")
    details = _run_ncu_import(ncu, path, "details")
    return kernels_from_csv(raw, details)


def read_source_page(ncu: str, path: str) -> list[tuple[str, list[NcuSourceLine]]]:
    """The SASS source page of every kernel of a report, through ``ncu -i``; empty when ncu cannot print one (a
    report collected without the SourceCounters section)."""
    try:
        return parse_source_csv(_run_ncu_import(ncu, path, "source"))
    except TraceError:
        return []


def attach_source(report: NcuReport, pages: list[tuple[str, list[NcuSourceLine]]]) -> NcuReport:
    """``report`` with each kernel's source lines from ``pages`` (see :func:`~gputop_trace.parsers.ncu.with_source`)."""
    from dataclasses import replace

    return replace(report, kernels=tuple(with_source(list(report.kernels), pages)))


def load_report(path: str, *, ncu_path: str | None = None, reader: str = "auto") -> NcuReport:
    """Read an Nsight Compute report. ``reader``: ``auto`` (the ``ncu_report`` package, then ``ncu -i``),
    ``ncu_report`` or ``ncu-csv`` (only that one). Raises :class:`TraceError` with what to do when the file is
    not a report, holds no kernels, or no reader is available."""
    if path.lower().endswith(".csv"):
        return load_csv(path)
    check_report_file(path)
    errors: list[str] = []
    if reader in ("auto", "ncu_report"):
        module = locate.import_ncu_report(ncu_path)
        if module is not None:
            kernels, warnings = kernels_from_ncu_report(module, path)
            if kernels:
                return NcuReport(path=path, kernels=tuple(kernels), reader="ncu_report", warnings=tuple(warnings))
            if warnings:
                raise TraceError(
                    f"{path} holds no complete kernel results ({'; '.join(warnings)}): the report was probably cut "
                    "short (ncu killed, disk full, an interrupted copy). Re-run the profile.",
                    path=path,
                )
            errors.append(
                "the ncu_report package found no profiled kernel in it (the report is empty, or cut short: ncu "
                "was killed, the disk filled up or a copy was interrupted)"
            )
        else:
            errors.append("the ncu_report package is not installed")
    if reader in ("auto", "ncu-csv"):
        exe = ncu_path or locate.find_ncu()
        if exe:
            kernels = kernels_from_ncu_cli(exe, path)
            if kernels:
                return NcuReport(path=path, kernels=tuple(kernels), reader="ncu-csv")
            errors.append("'ncu -i' printed no kernel rows")
        else:
            errors.append("ncu is not on PATH")
    raise TraceError(
        f"Could not read {path}: {'; '.join(errors)}. Install the reader with 'pip install ncu-report' (no GPU "
        "needed), or put Nsight Compute's ncu on PATH; a report with no kernels means ncu profiled nothing "
        "(see its log for 'No kernels were profiled').",
        path=path,
    )

"""``.nsys-rep`` (and older ``.qdrep``) reports: a closed format, read through ``nsys export --type sqlite``.

When ``nsys`` is on PATH the report is exported once into the user cache folder
(``$XDG_CACHE_HOME/gputop-trace/nsys-export``, else ``~/.cache/...``; ``GPUTOP_CACHE_DIR`` overrides it), under a
name derived from the report's absolute path, size and modification time, so opening it again is instant and a
changed report is exported again. Without ``nsys`` the error says exactly which command to run.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING

from gputop_trace.errors import TraceError
from gputop_trace.numpy_env import user_env

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace
    from gputop_trace.parsers.source import Progress

#: Bump when the way exports are produced changes (invalidates cached exports).
EXPORT_FORMAT_VERSION = 1


def cache_dir() -> str:
    """Folder of cached SQLite exports."""
    root = os.environ.get("GPUTOP_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "gputop-trace")
    return os.path.join(root, "nsys-export")


def cached_export_path(report: str) -> str:
    """Where the SQLite export of ``report`` is (or will be) cached."""
    st = os.stat(report)
    key = f"{os.path.abspath(report)}\0{st.st_size}\0{st.st_mtime_ns}\0{EXPORT_FORMAT_VERSION}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    stem = os.path.basename(report).rsplit(".", 1)[0][:60]
    return os.path.join(cache_dir(), f"{stem}-{digest}.sqlite")


def export_command(report: str, output: str, nsys: str = "nsys") -> list[str]:
    """The argument list that exports ``report`` to ``output`` (never run through a shell)."""
    return [nsys, "export", "--type", "sqlite", "--output", output, report]


def export_report(report: str) -> str:
    """Path of a SQLite export of ``report``: from the cache, or made now with ``nsys``.

    Raises :class:`TraceError` when the report cannot be read, ``nsys`` is not installed (the message gives
    the export command to run), or ``nsys export`` fails (with the end of its output).
    """
    if not os.path.isfile(report):
        raise TraceError(f"No such file: {report}.", path=report)
    if not os.access(report, os.R_OK):
        raise TraceError(f"Permission denied reading {report}.", path=report)
    target = cached_export_path(report)
    if os.path.isfile(target) and os.path.getsize(target) > 0:
        return target
    suggested = report.rsplit(".", 1)[0] + ".sqlite"
    nsys = shutil.which("nsys")
    if nsys is None:
        cmd = " ".join(shlex.quote(a) for a in export_command(report, suggested))
        raise TraceError(
            f"{report} is an Nsight Systems report (.nsys-rep), which only Nsight Systems can read, and nsys is not "
            f"on PATH here. Export it to SQLite with: {cmd} — on any machine with Nsight Systems (the CLI is "
            f"free) — then open {suggested}.",
            path=report,
        )
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".export-", suffix=".sqlite", dir=folder)
        os.close(fd)
        os.unlink(tmp)  # nsys refuses to overwrite an existing file without --force-overwrite
    except OSError as e:
        raise TraceError(
            f"Cannot write the SQLite export of {report} into the cache folder {folder}: {e.strerror or e}. "
            "Set GPUTOP_CACHE_DIR to a writable folder.",
            path=report,
        ) from None
    try:
        proc = subprocess.run(
            export_command(os.path.abspath(report), tmp, nsys),  # absolute: a name like -x.nsys-rep is no option
            stdin=subprocess.DEVNULL,
            env=user_env(),
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
        if proc.returncode != 0 or not os.path.isfile(tmp) or os.path.getsize(tmp) == 0:
            tail = (proc.stderr.strip() or proc.stdout.strip())[-600:] or "no output"
            raise TraceError(
                f"nsys could not export {report} (exit code {proc.returncode}): {tail}. Check that the report is "
                "complete and that this nsys is at least as new as the one that recorded it.",
                path=report,
            )
        os.replace(tmp, target)
    except OSError as e:
        raise TraceError(f"Running {nsys} failed: {e.strerror or e}.", path=report) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def load_report(path: str, *, progress: Progress | None = None, default_rank: int = 0) -> Trace:
    """Load an ``.nsys-rep`` (or ``.qdrep``) report: export it to SQLite with ``nsys`` (cached, see
    :func:`export_report`), then read the export with the nsys parser. The trace names the report as its source."""
    from gputop_trace.parsers.nsys.loader import load

    sqlite_path = export_report(path)
    trace = load(sqlite_path, progress=progress, default_rank=default_rank)
    props = {**trace.meta.properties, "exported_from": path, "export_cache": sqlite_path}
    return trace.with_meta(source=(path,), properties=props)

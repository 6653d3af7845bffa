"""When the cache applies and to what: its settings (folder, size bound, minimum trace size, all from the
environment), the code fingerprint, and the key an entry must match (the source file as it is now, the load
options, the code). Sizes are bytes; times ns."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop_trace import __version__, model

FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 4 << 30
DEFAULT_MIN_SOURCE_BYTES = 16 << 20


# --------------------------------------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------------------------------------
def parse_size(text: str) -> int:
    """``"4G"``, ``"500M"``, ``"64k"``, ``"1000"`` → bytes (powers of 1024)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in "KMGT" else t
    value = float(number)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a size: {text!r}")
    return int(value * mult)


def cache_root() -> Path:
    """The folder holding every entry (not created here)."""
    explicit = os.environ.get("GPUTOP_TRACE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gputop-trace"


def cache_disabled() -> bool:
    """Whether ``GPUTOP_TRACE_NO_CACHE`` turns the cache off."""
    return os.environ.get("GPUTOP_TRACE_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no")


def _size_setting(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return parse_size(text)
    except ValueError:
        return default


def max_bytes() -> int:
    """The cache's size bound (``GPUTOP_TRACE_CACHE_SIZE``)."""
    return _size_setting("GPUTOP_TRACE_CACHE_SIZE", DEFAULT_MAX_BYTES)


def worth_caching(path: str, size: int, min_bytes: int) -> bool:
    """Whether a trace is large enough to cache: judged on what it holds once decompressed (a 3 MB gzip can
    hold 87 MB of JSON that takes seconds to parse), not on its size on disk."""
    if size >= min_bytes:
        return True
    from gputop_trace.load.resources import decompressed_size

    try:
        return decompressed_size(path) >= min_bytes
    except OSError:
        return False


def min_source_bytes() -> int:
    """The smallest trace file worth caching (``GPUTOP_TRACE_CACHE_MIN``)."""
    return _size_setting("GPUTOP_TRACE_CACHE_MIN", DEFAULT_MIN_SOURCE_BYTES)


_FINGERPRINT: list[str] = []


def fingerprint_sources() -> list[tuple[str, Path]]:
    """The source files whose text decides what a loaded trace holds, as (name inside the package, path): the
    loader, every module of the model and every module of the parsers, sub-folders included (``chrome/``,
    ``nsys/``, the C source of the compiled scanner), so that an edit to any of them makes older cache entries stale."""
    from gputop_trace import parsers

    # the loader's file by its place beside this one, not imported: the loader imports the cache
    files = [("load/loader.py", Path(__file__).with_name("loader.py"))]
    for base, folder in (("model", Path(model.__file__).parent), ("parsers", Path(parsers.__file__).parent)):
        found = sorted([*folder.rglob("*.py"), *folder.rglob("*.c")])  # .c: the optional compiled scanner
        files += [(f"{base}/{f.relative_to(folder).as_posix()}", f) for f in found]
    return files


def code_fingerprint() -> str:
    """A hash of everything that decides what a loaded trace holds: package version, this format, and the
    sources of the loader, the model and every parser (:func:`fingerprint_sources`)."""
    if not _FINGERPRINT:
        h = hashlib.sha256(f"{__version__}/{FORMAT_VERSION}".encode())
        for rel, f in fingerprint_sources():
            try:
                h.update(rel.encode() + b"\0" + f.read_bytes())
            except OSError:
                h.update(rel.encode() + b"\0?")
        _FINGERPRINT.append(h.hexdigest()[:32])
    return _FINGERPRINT[0]


# --------------------------------------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceKey:
    """What an entry must match: the source file as it is now, the load options, the code."""

    path: str  # absolute
    size: int
    mtime_ns: int
    options: tuple[tuple[str, Any], ...]
    code: str

    @staticmethod
    def of(path: str, options: Mapping[str, Any]) -> SourceKey:
        """The key of a file now (raises ``OSError`` when it cannot be stat'ed)."""
        p = os.path.abspath(path)
        st = os.stat(p)
        return SourceKey(p, st.st_size, st.st_mtime_ns, tuple(sorted(options.items())), code_fingerprint())

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "options": [[k, v] for k, v in self.options],
            "code": self.code,
        }

    @property
    def family(self) -> str:
        """Name prefix shared by every entry of this file with these options (older states of the file)."""
        return f"{_h(self.path)}-{_h(json.dumps(self.options))}"

    @property
    def name(self) -> str:
        """The entry folder's name."""
        return f"{self.family}-{_h(json.dumps([self.size, self.mtime_ns, self.code]))}"


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

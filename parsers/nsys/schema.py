"""Opening an Nsight Systems SQLite export safely and mapping its schema, version and enums.

Every nsys version writes a different schema (2020.3 to 2026.2 in the corpus): tables come and go, columns are
added, ``ENUM_*`` tables only exist from schema 3.0.0 (nsys 2022.4), the version is only recorded from 2022.1.
So nothing is assumed: :class:`Schema` is built from ``sqlite_master`` and ``PRAGMA table_info``, table names may
carry a ``_V2``-style suffix, and enum values come from the file's ``ENUM_*`` tables when it has them and from
built-in tables (stable since 2022.4, checked against the 2020.x files) when it does not.

The database is opened read-only (``mode=ro`` URI, ``query_only``, ``trusted_schema=OFF``); extensions are
never enabled, views and triggers are never used, and text is decoded with invalid UTF-8 bytes replaced.
"""

from __future__ import annotations

import os
import re
import sqlite3
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field

from gputop_trace.errors import TraceError
from gputop_trace.model.kinds import CopyKind, MemKind

#: Export command shown to users in error messages.
EXPORT_HINT = "nsys export --type sqlite --output report.sqlite report.nsys-rep"

#: Bytes of the database SQLite may memory-map (read-only) per connection.
MMAP_BYTES = 1 << 34

_VERSION_SUFFIX = re.compile(r"^(?P<base>.+?)_V(?P<n>\d+)$", re.IGNORECASE)
_SAFE_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TextDecoder:
    """``sqlite3`` text factory: UTF-8 with invalid bytes replaced, counting how often that happened."""

    def __init__(self) -> None:
        self.replaced = 0

    def __call__(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.replaced += 1
            return raw.decode("utf-8", "replace")


def as_text(v: object) -> str:
    """A TEXT (or mis-stored BLOB) cell as a string; invalid UTF-8 bytes replaced, NULL as ``""``."""
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return "" if v is None else str(v)


def _uri(path: str, *, immutable: bool) -> str:
    quoted = urllib.parse.quote(os.path.abspath(path))
    return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


def connect_readonly(path: str, decoder: TextDecoder | None = None) -> sqlite3.Connection:
    """A read-only connection to ``path`` (never writes, never loads extensions, never trusts the schema).

    A database in WAL mode inside a read-only folder cannot be opened with ``mode=ro`` alone (SQLite wants to
    create its ``-shm`` file); it is then opened ``immutable``. Raises :class:`TraceError` when it cannot be read.
    """
    last: Exception | None = None
    for immutable in (False, True):
        try:
            conn = sqlite3.connect(_uri(path, immutable=immutable), uri=True, check_same_thread=False)
        except sqlite3.Error as e:
            last = e
            continue
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA trusted_schema = OFF")
            # read pages through a read-only memory map: no read() call and no copy per 4 KiB page
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            conn.text_factory = decoder if decoder is not None else TextDecoder()
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except (sqlite3.Error, UnicodeDecodeError) as e:
            conn.close()
            last = e
    raise damaged_error(path, last)


def damaged_error(path: str, err: BaseException | None) -> TraceError:
    """The error for a SQLite file that cannot be read (truncated, corrupt, not a database)."""
    if isinstance(err, UnicodeDecodeError):
        # SQLite's own message quoted bytes of the damaged file that are not text: Python could not decode it
        detail = "malformed database: SQLite's error message about it is not readable text"
    else:
        detail = str(err) if err is not None else "unknown error"
    if "not a database" in detail or "malformed" in detail or "disk image" in detail:
        what = (
            f"{path} is a damaged SQLite file ({detail}): the export was cut short or corrupted, for example "
            "by a full disk or an interrupted copy."
        )
    elif "unable to open" in detail or "readonly" in detail or "read-only" in detail:
        what = f"{path} could not be opened read-only ({detail}). Check that you can read it and its folder."
    else:
        what = f"{path} could not be read as a SQLite database ({detail})."
    return TraceError(f"{what} Export the report again with: {EXPORT_HINT}", path=path)


def check_not_truncated(path: str) -> None:
    """Raise :class:`TraceError` when the file is shorter than the page count its header records.

    SQLite only notices a cut-off file when a query touches a missing page; this check catches it up front.
    The in-header size is only trusted when the header says it is valid (offsets 24 and 92 agree).
    """
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as e:
        raise TraceError(f"Could not read {path}: {e.strerror or e}.", path=path) from None
    if len(header) < 100:
        raise TraceError(
            f"{path} is a truncated SQLite file ({size} bytes, shorter than its 100-byte header). "
            f"Export the report again with: {EXPORT_HINT}",
            path=path,
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    change_counter = header[24:28]
    valid_for = header[92:96]
    if pages and change_counter == valid_for and page_size >= 512 and size < pages * page_size:
        raise TraceError(
            f"{path} is a truncated SQLite file: its header describes {pages * page_size:,} bytes but only "
            f"{size:,} are there. The export (or the copy of it) was cut short. Export the report again with: "
            f"{EXPORT_HINT}",
            path=path,
        )


# ---------------------------------------------------------------------------------------------------------
# schema map
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Schema:
    """Tables (real tables only: views, triggers and indexes are ignored) and their columns.

    Lookups are case-insensitive; a logical name such as ``CUPTI_ACTIVITY_KIND_KERNEL`` also matches
    ``CUPTI_ACTIVITY_KIND_KERNEL_V2`` (the highest version wins when several are present).
    """

    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _by_logical: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def read(conn: sqlite3.Connection) -> Schema:
        """Build the map from ``sqlite_master`` and ``PRAGMA table_info``."""
        names = [
            str(r[0])
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        ]
        schema = Schema()
        best: dict[str, tuple[int, str]] = {}
        for name in names:
            if not _SAFE_IDENT.match(name):
                continue  # a name we would have to quote: no nsys table looks like that
            cols = tuple(str(r[1]) for r in conn.execute(f'PRAGMA table_info("{name}")'))
            schema.columns[name] = cols
            m = _VERSION_SUFFIX.match(name)
            logical, version = (m.group("base"), int(m.group("n"))) if m else (name, 1)
            key = logical.upper()
            if key not in best or version > best[key][0]:
                best[key] = (version, name)
        schema._by_logical = {k: v[1] for k, v in best.items()}
        return schema

    def table(self, logical: str) -> str | None:
        """The real name of a table (``None`` when the export lacks it)."""
        return self._by_logical.get(logical.upper())

    def cols(self, table: str | None) -> frozenset[str]:
        """Columns of a table, lower-cased (empty when absent)."""
        if table is None:
            return frozenset()
        return frozenset(c.lower() for c in self.columns.get(table, ()))

    def column(self, table: str | None, *candidates: str) -> str | None:
        """The first of ``candidates`` that the table has (exact spelling from the file), or ``None``."""
        if table is None:
            return None
        present = {c.lower(): c for c in self.columns.get(table, ())}
        for c in candidates:
            if c.lower() in present:
                return present[c.lower()]
        return None

    def has(self, logical: str) -> bool:
        """Whether the export has the table."""
        return self.table(logical) is not None

    @property
    def table_names(self) -> list[str]:
        """Every table, sorted."""
        return sorted(self.columns)


def row_count(conn: sqlite3.Connection, table: str | None) -> int:
    """Rows in a table (0 when absent)."""
    if table is None:
        return 0
    return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


def rowid_bounds(conn: sqlite3.Connection, table: str) -> tuple[int | None, int | None]:
    """``(min(rowid), max(rowid))`` of a table (``None`` each when empty), in two b-tree descents: SQLite takes
    the min/max shortcut only for a query holding one such aggregate; ``SELECT min(rowid), max(rowid)`` reads
    every page (1.1 s for the 16.8 M-row runtime table of a 1.9 GB export). Raises OperationalError without rowids."""
    lo = conn.execute(f'SELECT min(rowid) FROM "{table}"').fetchone()[0]
    hi = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
    return (None if lo is None else int(lo)), (None if hi is None else int(hi))


def row_span(conn: sqlite3.Connection, table: str | None) -> int:
    """Rows a table may hold, from its first and last rowid (0 when absent): the row count where rowids are dense,
    as nsys writes them, and never less than it. Two b-tree descents, where ``count(*)`` reads every page of the
    table (3.7 s for the 29.5 M rows of a 1.9 GB export); for progress totals. Tables without rowids are counted."""
    if table is None:
        return 0
    try:
        lo, hi = rowid_bounds(conn, table)
    except sqlite3.OperationalError:  # a WITHOUT ROWID table
        return row_count(conn, table)
    return 0 if lo is None or hi is None else hi - lo + 1


# ---------------------------------------------------------------------------------------------------------
# version
# ---------------------------------------------------------------------------------------------------------
#: Tables whose presence marks a file as an Nsight Systems export.
NSYS_MARKER_TABLES = (
    "StringIds",
    "ThreadNames",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
    "OSRT_API",
    "TARGET_INFO_GPU",
    "TARGET_INFO_SESSION_START_TIME",
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
)


@dataclass(frozen=True)
class ExportInfo:
    """What the export says about the nsys that wrote it.

    ``version`` is ``EXPORT_PRODUCT_VERSION`` (``"2024.5.1.113"``) or ``""`` before 2022.1, when the version
    was not recorded; ``estimated`` then describes the nsys generation guessed from the schema.
    """

    version: str = ""
    schema_version: str = ""
    estimated: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def producer(self) -> str:
        """``"Nsight Systems 2024.5.1.113"``, or the estimate when the version is not recorded."""
        if self.version:
            return f"Nsight Systems {self.version}"
        return f"Nsight Systems {self.estimated} (version not recorded in the export)"

    @property
    def year_release(self) -> tuple[int, int]:
        """(year, release) of the version, e.g. (2024, 5); (0, 0) when unknown."""
        m = re.match(r"(\d{4})\.(\d+)", self.version)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def read_export_info(conn: sqlite3.Connection, schema: Schema) -> ExportInfo:
    """Version from ``META_DATA_EXPORT`` (≥ 2023.3) or ``EXPORT_META_DATA`` (2022.1–2023.1), else by features."""
    meta: dict[str, str] = {}
    for logical in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        t = schema.table(logical)
        if t and {"name", "value"} <= schema.cols(t):
            for name, value in conn.execute(f'SELECT name, value FROM "{t}"'):
                if name is not None:
                    meta[str(name)] = "" if value is None else str(value)
    version = meta.get("EXPORT_PRODUCT_VERSION", "")
    schema_version = meta.get("EXPORT_SCHEMA_VERSION", "")
    return ExportInfo(
        version=version,
        schema_version=schema_version,
        estimated="" if version else _estimate_generation(schema),
        metadata=meta,
    )


def _estimate_generation(schema: Schema) -> str:
    """A coarse guess of the nsys generation from tables and columns (exports before 2022.1)."""
    if schema.has("TARGET_INFO_CUDA_GPU"):
        return "2020.x"
    if schema.has("ENUM_CUDA_MEM_KIND"):
        return "2022.4 or later"
    if not schema.has("PROCESSES"):
        return "2021.x"
    return "2021.x–2022.x"


# ---------------------------------------------------------------------------------------------------------
# enums
# ---------------------------------------------------------------------------------------------------------
#: nsys ``ENUM_CUDA_MEMCPY_OPER`` (copyKind): stable since 2022.4 and the same in the 2020.x files.
BUILTIN_COPY_KIND: dict[int, str] = {
    0: "CUDA_MEMCPY_KIND_UNKNOWN",
    1: "CUDA_MEMCPY_KIND_HTOD",
    2: "CUDA_MEMCPY_KIND_DTOH",
    3: "CUDA_MEMCPY_KIND_HTOA",
    4: "CUDA_MEMCPY_KIND_ATOH",
    5: "CUDA_MEMCPY_KIND_ATOA",
    6: "CUDA_MEMCPY_KIND_ATOD",
    7: "CUDA_MEMCPY_KIND_DTOA",
    8: "CUDA_MEMCPY_KIND_DTOD",
    9: "CUDA_MEMCPY_KIND_HTOH",
    10: "CUDA_MEMCPY_KIND_PTOP",
    11: "CUDA_MEMCPY_KIND_UVM_HTOD",
    12: "CUDA_MEMCPY_KIND_UVM_DTOH",
    13: "CUDA_MEMCPY_KIND_UVM_DTOD",
}
#: nsys ``ENUM_CUDA_MEM_KIND`` (srcKind, dstKind, memKind).
BUILTIN_MEM_KIND: dict[int, str] = {
    0: "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE",
    1: "CUDA_MEMOPR_MEMORY_KIND_PINNED",
    2: "CUDA_MEMOPR_MEMORY_KIND_DEVICE",
    3: "CUDA_MEMOPR_MEMORY_KIND_ARRAY",
    4: "CUDA_MEMOPR_MEMORY_KIND_MANAGED",
    5: "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC",
    6: "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC",
    7: "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN",
}
#: nsys ``ENUM_CUPTI_SYNC_TYPE`` (syncType).
BUILTIN_SYNC_TYPE: dict[int, str] = {
    0: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN",
    1: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE",
    2: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT",
    3: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE",
    4: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE",
}
#: nsys ``ENUM_NSYS_EVENT_CLASS`` values the loader cares about.
BUILTIN_EVENT_CLASS: dict[int, str] = {
    0: "TRACE_PROCESS_EVENT_CUDA_RUNTIME",
    1: "TRACE_PROCESS_EVENT_CUDA_DRIVER",
    67: "TRACE_PROCESS_EVENT_CUDABACKTRACE",
}

_COPY_KIND_BY_NAME: dict[str, CopyKind] = {
    "CUDA_MEMCPY_KIND_UNKNOWN": CopyKind.UNKNOWN,
    "CUDA_MEMCPY_KIND_HTOD": CopyKind.HTOD,
    "CUDA_MEMCPY_KIND_DTOH": CopyKind.DTOH,
    "CUDA_MEMCPY_KIND_HTOA": CopyKind.HTOA,
    "CUDA_MEMCPY_KIND_ATOH": CopyKind.ATOH,
    "CUDA_MEMCPY_KIND_ATOA": CopyKind.ATOA,
    "CUDA_MEMCPY_KIND_ATOD": CopyKind.ATOD,
    "CUDA_MEMCPY_KIND_DTOA": CopyKind.DTOA,
    "CUDA_MEMCPY_KIND_DTOD": CopyKind.DTOD,
    "CUDA_MEMCPY_KIND_HTOH": CopyKind.HTOH,
    "CUDA_MEMCPY_KIND_PTOP": CopyKind.PTOP,
    "CUDA_MEMCPY_KIND_UVM_HTOD": CopyKind.UVM_HTOD,
    "CUDA_MEMCPY_KIND_UVM_DTOH": CopyKind.UVM_DTOH,
    "CUDA_MEMCPY_KIND_UVM_DTOD": CopyKind.UVM_DTOD,
}
_MEM_KIND_BY_NAME: dict[str, MemKind] = {
    "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE": MemKind.PAGEABLE,
    "CUDA_MEMOPR_MEMORY_KIND_PINNED": MemKind.PINNED,
    "CUDA_MEMOPR_MEMORY_KIND_DEVICE": MemKind.DEVICE,
    "CUDA_MEMOPR_MEMORY_KIND_ARRAY": MemKind.ARRAY,
    "CUDA_MEMOPR_MEMORY_KIND_MANAGED": MemKind.MANAGED,
    "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC": MemKind.DEVICE_STATIC,
    "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC": MemKind.MANAGED_STATIC,
    "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN": MemKind.UNKNOWN,
}
_SYNC_LABEL_BY_NAME: dict[str, str] = {
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN": "Synchronization",
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE": "Event sync",
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT": "Stream wait event",
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE": "Stream sync",
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE": "Context sync",
}


@dataclass(frozen=True)
class Enums:
    """nsys enum values mapped to this program's enums: ``copy_kind`` nsys copyKind → :class:`CopyKind`,
    ``mem_kind`` nsys memory kind → :class:`MemKind`, ``sync_label`` syncType → a label, ``event_class``
    value → nsys name. ``from_file`` tells whether the file's ``ENUM_*`` tables were used."""

    copy_kind: dict[int, CopyKind]
    mem_kind: dict[int, MemKind]
    sync_label: dict[int, str]
    event_class: dict[int, str]
    from_file: bool

    def copy_kind_lut(self) -> dict[int, int]:
        """nsys copyKind → :class:`CopyKind` value (unknown values map to ``UNKNOWN``)."""
        return {k: int(v) for k, v in self.copy_kind.items()}

    def mem_kind_lut(self) -> dict[int, int]:
        """nsys memory kind → :class:`MemKind` value."""
        return {k: int(v) for k, v in self.mem_kind.items()}

    def event_class_value(self, name: str) -> int | None:
        """The file's value for an nsys event-class name."""
        for k, v in self.event_class.items():
            if v == name:
                return k
        return None


def _read_enum(conn: sqlite3.Connection, schema: Schema, logical: Iterable[str]) -> dict[int, str] | None:
    for name in logical:
        t = schema.table(name)
        if t and {"id", "name"} <= schema.cols(t):
            out: dict[int, str] = {}
            for i, n in conn.execute(f'SELECT id, name FROM "{t}"'):
                if isinstance(i, int) and n is not None:
                    out[i] = str(n)
            return out
    return None


def read_enums(conn: sqlite3.Connection, schema: Schema) -> Enums:
    """Enum maps from the file's ``ENUM_*`` tables, falling back to built-in values per enum."""
    copy_names = _read_enum(conn, schema, ("ENUM_CUDA_MEMCPY_OPER",))
    mem_names = _read_enum(conn, schema, ("ENUM_CUDA_MEM_KIND",))
    sync_names = _read_enum(conn, schema, ("ENUM_CUPTI_SYNC_TYPE",))
    class_names = _read_enum(conn, schema, ("ENUM_NSYS_EVENT_CLASS",))
    from_file = copy_names is not None or mem_names is not None
    copy_names = copy_names or BUILTIN_COPY_KIND
    mem_names = mem_names or BUILTIN_MEM_KIND
    sync_names = sync_names or BUILTIN_SYNC_TYPE
    class_names = class_names or BUILTIN_EVENT_CLASS
    return Enums(
        copy_kind={k: _COPY_KIND_BY_NAME.get(n, CopyKind.UNKNOWN) for k, n in copy_names.items()},
        mem_kind={k: _MEM_KIND_BY_NAME.get(n, MemKind.UNKNOWN) for k, n in mem_names.items()},
        sync_label={k: _SYNC_LABEL_BY_NAME.get(n, n.rsplit("_", 1)[-1].title()) for k, n in sync_names.items()},
        event_class=dict(class_names),
        from_file=from_file,
    )

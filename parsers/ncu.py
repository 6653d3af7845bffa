"""Nsight Compute output → :class:`~gputop_trace.model.ncu.NcuReport`: ncu's CSV pages and the ``ncu_report``
module's report objects, read into plain records. Pure: this module starts no process and looks for no ncu install
(:mod:`gputop_trace.ncu.report_reader` does both and hands the text or the module to the functions here).

- :func:`kernels_from_csv` (:func:`parse_raw_csv`, :func:`parse_details_csv`, :func:`parse_details_rules`): the
  pages ``ncu -i REPORT --csv --print-units base --page raw|details`` prints; :func:`load_csv` reads a saved page.
- :func:`kernels_from_ncu_report`: every kernel of a report opened with the ``ncu_report`` module: exact values in
  base units, ncu's rule results with their messages.

The CSV parsers also accept text captured from a profiling run (``==PROF==`` / ``==WARNING==`` lines and the
program's own output before the CSV), thousands separators (``"3,189,083,820.66"``), human units when
``--print-units base`` was not used (``us``, ``Kbyte``, ``Ghz``: converted to base units), ``n/a`` values, and rule
rows whose metric fields are empty.

Units of :attr:`NcuKernel.metrics`: ncu's base units — time in ns, sizes in bytes, rates per second, clocks in Hz,
percentages 0–100. Nothing here imports Textual or prints.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from gputop_trace.errors import TraceError
from gputop_trace.model.kernel_names import function_name
from gputop_trace.model.ncu import NcuKernel, NcuReport, NcuRule
from gputop_trace.parsers.source import open_checked

#: Columns of the raw page that describe the launch, not a metric.
_RAW_ID_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)
#: ncu rule message types (``ncu_report.MsgType_*``) as the CSV pages spell them.
RULE_TYPES = {0: "NONE", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}
REPORT_MAGIC = b"NVR\x00"


# ---- numbers and units ----------------------------------------------------------------------------------------

_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_TIME_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def parse_number(text: str) -> float | None:
    """A number as ncu's CSV writes it (``"3,189,083,820.66"``, ``"62.41"``, ``"1e+05"``); None for anything
    else (``n/a``, ``""``, ``(256, 1, 1)``)."""
    s = text.strip()
    if not s or not any(c.isdigit() for c in s) or not _NUMBER.match(s):
        return None
    try:
        value = float(s.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # "1e999" is no measurement


def unit_factor(unit: str) -> tuple[float, str]:
    """How to turn a value printed in ``unit`` into ncu's base unit: ``(factor, base unit)``.

    ``us`` → ``(1000, "ns")``, ``Kbyte`` → ``(1000, "byte")``, ``Ghz`` → ``(1e9, "hz")``, ``Mbyte/s`` →
    ``(1e6, "byte/s")``; units without a decimal prefix come back with factor 1.
    """
    u = unit.strip()
    if u in _TIME_NS:
        return _TIME_NS[u], "ns"
    head, sep, tail = u.partition("/")
    factor, base = _prefixed(head)
    if not sep:
        return factor, base
    if tail in _TIME_NS:  # a rate: per us → per second
        return factor * 1e9 / _TIME_NS[tail], f"{base}/s"
    d_factor, d_base = _prefixed(tail)
    # ncu scales a prefixed denominator the same way as a numerator (2.614 %/Kbyte is 2,614 %/byte in its base
    # units, and the ncu_report package agrees), so do as it does
    return factor * d_factor, f"{base}/{d_base}"


def _prefixed(unit: str) -> tuple[float, str]:
    """``Kbyte`` → ``(1000, "byte")``; ``SM``, ``%`` and unprefixed units → ``(1, unit)``."""
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1].islower():
        return _PREFIX[unit[0]], unit[1:]
    return 1.0, unit


# ---- CSV pages ------------------------------------------------------------------------------------------------


def csv_body(text: str) -> str:
    """The CSV part of ncu's output: everything from the first line that starts with ``"ID"`` or ``"Process ID"``
    (ncu's header rows), dropping ``==PROF==``/``==WARNING==``/``==ERROR==`` lines and the program's output."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(('"ID",', '"Process ID",')):
            body = [ln for ln in lines[i:] if ln and not ln.startswith("==")]
            return "\n".join(body) + "\n"
    return ""


def _rows(text: str) -> list[list[str]]:
    body = csv_body(text)
    if not body:
        return []
    return [r for r in csv.reader(io.StringIO(body)) if r]


def _geometry(text: str) -> tuple[int, int, int] | None:
    m = re.match(r"^\(\s*(\d+),\s*(\d+),\s*(\d+)\s*\)$", text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _nvtx_from_cell(text: str) -> tuple[str, ...]:
    """Range names from the raw page's NVTX column: ``3278  "<default domain>:step:none:..." `` → ``("step",)``."""
    names = []
    for m in re.finditer(r'"([^"]*)"', text):
        parts = m.group(1).split(":")
        if len(parts) >= 2 and parts[1]:
            names.append(parts[1])
    return tuple(names)


def parse_raw_csv(text: str) -> list[NcuKernel]:
    """Kernels from ncu's raw page (``--page raw --csv``): a header row of metric names, a row of units, then one
    row per kernel. Values are converted to base units; ``n/a`` and empty cells are left out."""
    rows = _rows(text)
    if len(rows) < 2 or not _is_raw_header(rows[0]):
        return []
    header, units = rows[0], rows[1]
    if len(units) != len(header) or any(parse_number(u) is not None for u in units[:1]):
        units = [""] * len(header)
        data = rows[1:]
    else:
        data = rows[2:]
    factors = [unit_factor(u)[0] for u in units]
    nvtx_cols = [i for i, h in enumerate(header) if "Push/Pop_Range" in h]
    kernels: list[NcuKernel] = []
    for pos, row in enumerate(data):
        if len(row) < len(header):
            continue
        cells = dict(zip(header, row[: len(header)], strict=True))
        metrics: dict[str, float] = {}
        strings: dict[str, str] = {}
        for i, name in enumerate(header):
            if name in _RAW_ID_COLUMNS or i in nvtx_cols or "Domain:" in name:
                continue
            value = row[i].strip()
            if not value or value == "n/a":
                continue
            num = parse_number(value)
            if num is None:
                strings[name] = value
            else:
                metrics[name] = num * factors[i]
        demangled = cells.get("Kernel Name", "")
        idx = parse_number(cells.get("ID", ""))
        nvtx: tuple[str, ...] = ()
        for c in nvtx_cols:
            nvtx += _nvtx_from_cell(row[c])
        kernels.append(
            NcuKernel(
                index=int(idx) if idx is not None else pos,
                name=function_name(demangled),
                demangled=demangled,
                metrics=metrics,
                strings=strings,
                nvtx=nvtx,
                grid=_geometry(cells.get("Grid Size", "")),
                block=_geometry(cells.get("Block Size", "")),
            )
        )
    return kernels


#: Human metric labels of the details page → metric names, for pages printed without ``--print-metric-name name``.
#: Keyed by (label, unit kind) where unit kind is ``%`` for percentages and ``*`` for anything else.
DETAILS_LABELS: dict[tuple[str, str], str] = {
    ("Duration", "*"): "gpu__time_duration.sum",
    ("Compute (SM) Throughput", "%"): "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ("Memory Throughput", "%"): "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    ("DRAM Throughput", "%"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ("Achieved Occupancy", "%"): "sm__warps_active.avg.pct_of_peak_sustained_active",
    ("Theoretical Occupancy", "%"): "sm__maximum_warps_per_active_cycle_pct",
    ("Registers Per Thread", "*"): "launch__registers_per_thread",
    ("Block Limit Registers", "*"): "launch__occupancy_limit_registers",
    ("Block Limit Shared Mem", "*"): "launch__occupancy_limit_shared_mem",
    ("Block Limit Warps", "*"): "launch__occupancy_limit_warps",
    ("Block Limit SM", "*"): "launch__occupancy_limit_blocks",
    ("Block Limit Barriers", "*"): "launch__occupancy_limit_barriers",
    ("L1/TEX Hit Rate", "%"): "l1tex__t_sector_hit_rate.pct",
    ("L2 Hit Rate", "%"): "lts__t_sector_hit_rate.pct",
    ("No Eligible", "%"): "smsp__issue_inst0.avg.pct_of_peak_sustained_active",
    ("# SMs", "*"): "device__attribute_multiprocessor_count",
    ("Threads", "*"): "launch__thread_count",
    ("Waves Per SM", "*"): "launch__waves_per_multiprocessor",
}


#: columns a details page cannot be read without (``Metric Unit`` may be missing: the values are then taken as
#: printed, in base units)
DETAILS_REQUIRED = ("ID", "Metric Name", "Metric Value")


def _is_raw_header(header: list[str]) -> bool:
    return bool(header) and header[0] == "ID" and "Metric Name" not in header


def _cells(header: list[str]) -> Callable[[list[str], str], str]:
    """``cell(row, column)``: the row's value in that column, ``""`` when the page has no such column or the row
    is short (a page cut off mid-row)."""
    col = {h: i for i, h in enumerate(header)}

    def cell(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    return cell


def parse_details_csv(text: str) -> list[NcuKernel]:
    """Kernels from ncu's details page (``--page details --csv``, also what ``--metrics a,b`` prints): one row per
    metric (``Section Name``, ``Metric Name``, ``Metric Unit``, ``Metric Value``) plus rule rows. Metric names
    (``gpu__time_duration.sum``) are kept as they are; the human labels ncu prints by default (``Duration``,
    ``DRAM Throughput`` ...) are mapped through :data:`DETAILS_LABELS`; others are dropped. A page without the
    :data:`DETAILS_REQUIRED` columns gives no kernels; rows cut short are skipped."""
    rows = _rows(text)
    if not rows or rows[0][0] != "ID" or any(c not in rows[0] for c in DETAILS_REQUIRED):
        return []
    header = rows[0]
    cell = _cells(header)
    metrics: dict[int, dict[str, float]] = {}
    strings: dict[int, dict[str, str]] = {}
    first: dict[int, list[str]] = {}
    last_needed = max(header.index(c) for c in DETAILS_REQUIRED)
    for row in rows[1:]:
        if len(row) <= last_needed:
            continue
        kid_f = parse_number(cell(row, "ID"))
        kid = int(kid_f) if kid_f is not None else 0
        first.setdefault(kid, row)
        label = cell(row, "Metric Name").strip()
        if not label:
            continue
        unit = cell(row, "Metric Unit").strip()
        name = label if "__" in label else DETAILS_LABELS.get((label, "%" if unit == "%" else "*"))
        if name is None:
            continue
        raw = cell(row, "Metric Value").strip()
        num = parse_number(raw)
        if num is None:
            if raw and raw != "n/a":
                strings.setdefault(kid, {})[name] = raw
            continue
        metrics.setdefault(kid, {})[name] = num * unit_factor(unit)[0]
    rules = parse_details_rules(text)
    nvtx_cols = [h for h in header if "Push/Pop_Range" in h]
    out = []
    for kid, row in first.items():
        demangled = cell(row, "Kernel Name")
        nvtx: tuple[str, ...] = ()
        for c in nvtx_cols:
            nvtx += _nvtx_from_cell(cell(row, c))
        out.append(
            NcuKernel(
                index=kid,
                name=function_name(demangled),
                demangled=demangled,
                metrics=metrics.get(kid, {}),
                strings=strings.get(kid, {}),
                rules=tuple(rules.get(kid, ())),
                nvtx=nvtx,
                grid=_geometry(cell(row, "Grid Size")),
                block=_geometry(cell(row, "Block Size")),
            )
        )
    return out


def parse_details_rules(text: str) -> dict[int, list[NcuRule]]:
    """Rule messages from ncu's details page (``--page details --csv``), keyed by kernel ID. Rule rows are the
    ones whose metric name is empty and rule name is set."""
    rows = _rows(text)
    if not rows or rows[0][0] != "ID":
        return {}
    header = rows[0]
    need = ("Rule Name", "Rule Type", "Rule Description")
    if any(n not in header for n in need):
        return {}
    cell = _cells(header)
    out: dict[int, list[NcuRule]] = {}
    for row in rows[1:]:
        name = cell(row, "Rule Name").strip()
        if not name or cell(row, "Metric Name").strip() or len(row) <= header.index("Rule Description"):
            continue
        kid = parse_number(cell(row, "ID"))
        speedup = parse_number(cell(row, "Estimated Speedup"))
        stype = cell(row, "Estimated Speedup Type").strip()
        out.setdefault(int(kid) if kid is not None else 0, []).append(
            NcuRule(
                identifier=name,
                name=name,
                section=cell(row, "Section Name").strip(),
                type=cell(row, "Rule Type").strip() or "INF",
                title="",
                text=cell(row, "Rule Description").strip(),
                speedup_pct=speedup,
                speedup_type=stype or None,
            )
        )
    return out


def kernels_from_csv(raw_text: str, details_text: str = "") -> list[NcuKernel]:
    """Kernels from ncu CSV text: metrics from a raw page (or, when ``raw_text`` is a details page, from that),
    with the rules of a details page attached by kernel ID."""
    rows = _rows(raw_text)
    if rows and not _is_raw_header(rows[0]):
        return parse_details_csv(raw_text)
    kernels = parse_raw_csv(raw_text)
    rules = parse_details_rules(details_text) if details_text else {}
    return [_with_rules(k, tuple(rules.get(k.index, ()))) for k in kernels]


def _with_rules(k: NcuKernel, rules: tuple[NcuRule, ...]) -> NcuKernel:
    from dataclasses import replace

    return replace(k, rules=rules) if rules else k


# ---- the ncu-report package ------------------------------------------------------------------------------------

_MARKUP = re.compile(r"@(section|url|metric|table|source):([^@]*)@")


def plain_rule_text(text: str) -> str:
    """ncu's rule-message markup in plain words, as the CSV pages print it: ``@section:Id:Title@`` → ``Title``,
    ``@url:Label:https://...@`` → ``Label (https://...)``."""

    def repl(m: re.Match[str]) -> str:
        kind, body = m.group(1), m.group(2)
        if kind == "url":
            label, _, url = body.partition(":")
            return f"{label} ({url})" if url else label
        _ident, _, title = body.partition(":")
        return title or _ident

    return re.sub(r"\s+", " ", _MARKUP.sub(repl, text)).strip()


def _metric_value(metric: Any) -> tuple[float | None, str | None]:
    try:
        if metric is None or not metric.has_value():
            return None, None
        if metric.kind() == metric.ValueKind_STRING:
            return None, str(metric.as_string())
        value = float(metric.as_double())
        return (value, None) if math.isfinite(value) else (None, None)  # ncu stores NaN for "not available"
    except Exception:
        return None, None


def _rule_from_dict(d: Mapping[str, Any]) -> NcuRule | None:
    msg = d.get("rule_message") or {}
    text = plain_rule_text(str(msg.get("message", "")))
    if not text:
        return None
    sp = d.get("speedup_estimation") or {}
    speed = sp.get("speedup")
    return NcuRule(
        identifier=str(d.get("rule_identifier", "")),
        name=str(d.get("name", "")),
        section=str(d.get("section_identifier", "")),
        type=RULE_TYPES.get(int(msg.get("type", 0)), "INF"),
        title=str(msg.get("title", "")),
        text=text,
        speedup_pct=float(speed) if isinstance(speed, (int, float)) else None,
        speedup_type=_SPEEDUP_TYPES.get(int(sp.get("type", 0))) if sp else None,
    )


def _nvtx_of_action(action: Any) -> tuple[str, ...]:
    try:
        state = action.nvtx_state()
        if state is None:
            return ()
        names: list[str] = []
        for dom_id in state.domains():
            dom = state.domain_by_id(dom_id)
            names.extend(str(n) for n in dom.push_pop_ranges())
            names.extend(str(n) for n in dom.start_end_ranges())
        return tuple(names)
    except Exception:
        return ()


def kernels_from_ncu_report(module: Any, path: str) -> tuple[list[NcuKernel], list[str]]:
    """Every kernel of a report read with the ``ncu_report`` module, and warnings about what was skipped."""
    try:
        ctx = module.load_report(path)
    except Exception as e:
        raise TraceError(
            f"Nsight Compute could not read {path}: {e}. Check that the file is a complete .ncu-rep report "
            "(not truncated by a full disk or a killed ncu); re-run the profile if it is not.",
            path=path,
        ) from None
    kernels: list[NcuKernel] = []
    warnings: list[str] = []
    n = 0
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            action = rng.action_by_idx(ai)
            index = n
            n += 1
            names = list(action.metric_names())
            if not names:
                warnings.append(f"kernel #{index} in the report has no metrics (the file may be truncated); skipped")
                continue
            metrics: dict[str, float] = {}
            strings: dict[str, str] = {}
            for name in names:
                num, text = _metric_value(action.metric_by_name(name))
                if num is not None:
                    metrics[str(name)] = num
                elif text is not None:
                    strings[str(name)] = text
            rules = tuple(r for r in (_rule_from_dict(d) for d in action.rule_results_as_dicts()) if r is not None)
            fn = str(action.name(action.NameBase_FUNCTION) or action.name() or "")
            dem = str(action.name(action.NameBase_DEMANGLED) or fn)
            man = str(action.name(action.NameBase_MANGLED) or "")
            kernels.append(
                NcuKernel(
                    index=index,
                    name=fn or function_name(dem),
                    demangled=dem,
                    mangled=man,
                    metrics=metrics,
                    strings=strings,
                    rules=rules,
                    nvtx=_nvtx_of_action(action),
                    grid=_dims(metrics, "launch__grid_dim"),
                    block=_dims(metrics, "launch__block_dim"),
                )
            )
    return kernels, warnings


def _dims(metrics: Mapping[str, float], prefix: str) -> tuple[int, int, int] | None:
    vals = [metrics.get(f"{prefix}_{a}") for a in "xyz"]
    if any(v is None for v in vals):
        return None
    return (int(vals[0] or 0), int(vals[1] or 0), int(vals[2] or 0))


# ---- files ----------------------------------------------------------------------------------------------------


def check_report_file(path: str) -> None:
    """Refuse, with what to do, a path that is missing, a folder, or not an ``.ncu-rep`` (its first bytes)."""
    if not os.path.exists(path):
        raise TraceError(f"{path} does not exist. Check the path of the Nsight Compute report.", path=path)
    if os.path.isdir(path):
        raise TraceError(f"{path} is a folder; give the path of one .ncu-rep file.", path=path)
    with open_checked(path) as f:  # a pipe or an unreadable file: a clear error, never a hang
        head = f.read(4)
    if head != REPORT_MAGIC:
        raise TraceError(
            f"{path} is not an Nsight Compute report: .ncu-rep files start with the bytes 'NVR', this one does "
            "not. Give the file that 'ncu -o NAME' wrote (NAME.ncu-rep), or a CSV page saved from 'ncu -i ... --csv'.",
            path=path,
        )


def load_csv(path: str) -> NcuReport:
    """A saved ncu CSV page (raw page; a details page adds nothing but rules and is accepted for them)."""
    try:
        with io.TextIOWrapper(open_checked(path), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise TraceError(f"Cannot read {path}: {e.strerror}.", path=path) from None
    warnings: tuple[str, ...] = ()
    if text and not text.endswith(("\n", "\r")):  # ncu ends every line: the file was cut in its last line
        text = text[: max(text.rfind("\n"), text.rfind("\r")) + 1]
        warnings = ("The CSV page ends in the middle of a line: the file was cut short; its last line was left out.",)
    kernels = kernels_from_csv(text, text)
    if not kernels:
        rows = _rows(text)
        header = rows[0] if rows else []
        missing = [c for c in DETAILS_REQUIRED if c not in header] if "Metric Name" in header else []
        why = (
            f"its details-page header has no {', '.join(repr(c) for c in missing)} column"
            if missing
            else "neither raw-page nor details-page rows"
        )
        raise TraceError(
            f"{path} holds no ncu metrics ({why}). Save them with "
            f"'ncu -i REPORT.ncu-rep --csv --print-units base --page raw > {os.path.basename(path)}'.",
            path=path,
        )
    return NcuReport(path=path, kernels=tuple(kernels), reader="csv", warnings=warnings)

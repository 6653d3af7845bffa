"""Exporting the findings (``e``): the same document ``gputop-trace summary --json`` prints, as JSON or as a
Markdown report, written to a file the user names. No Textual."""

from __future__ import annotations

import os
from typing import Any

from gputop_trace.model.trace import Trace
from gputop_trace.presentation.kernel_labels import kernel_display_name
from gputop_trace.report.envelope import dumps
from gputop_trace.units import format_ns

DEFAULT_EXPORT = "gputop-findings.md"


def export_path(text: str, *, cwd: str | None = None) -> tuple[str, str]:
    """The absolute file to write and its format (``"json"`` or ``"markdown"``) from what the user typed.

    Empty text means :data:`DEFAULT_EXPORT` in ``cwd``; a directory gets that name inside it; ``.json`` selects
    JSON, anything else Markdown (``.md`` is added when the name has no extension).
    """
    base = cwd or os.getcwd()
    raw = os.path.expanduser(text.strip()) or DEFAULT_EXPORT
    path = raw if os.path.isabs(raw) else os.path.join(base, raw)
    if os.path.isdir(path):
        path = os.path.join(path, DEFAULT_EXPORT)
    ext = os.path.splitext(path)[1]
    if not ext:
        path += ".md"
        ext = ".md"
    return os.path.abspath(path), ("json" if ext.lower() == ".json" else "markdown")


def findings_document(trace: Trace, paths: list[str], analyses: Any = None) -> dict[str, Any]:
    """The summary document (JSON contract, command ``summary``) with its findings; ``analyses`` (a
    ``report.summary.Analyses``) avoids running them again."""
    from gputop_trace.report.summary import summary_document

    return summary_document(trace, paths, analyses)


def _md_escape(text: str) -> str:
    from gputop_trace.safe_text import clean

    return clean(str(text)).replace("|", "\\|")


def findings_markdown(doc: dict[str, Any]) -> str:
    """A Markdown report of a summary document: source, findings (in the document's order, most time at stake first,
    each with that time), GPU busy time, top kernels, warnings."""
    src = doc.get("source", {})
    path = src.get("path")
    shown = ", ".join(path) if isinstance(path, list) else str(path)
    lines = [
        "# gputop-trace findings",
        "",
        f"- source: `{_md_escape(shown)}` ({src.get('format', '?')}; {_md_escape(src.get('producer', ''))})",
        f"- span: {format_ns(doc.get('span_ns', 0))}",
        "",
        "## What to fix first",
        "",
    ]
    findings = doc.get("findings") or []
    if findings:
        multi = len((doc.get("source") or {}).get("ranks") or []) > 1
        for i, f in enumerate(findings, 1):
            gpu = f.get("gpu") or {}
            where = f" (rank {gpu['rank']}, GPU {gpu['device']})" if multi and gpu.get("rank") is not None else ""
            stake = f", {format_ns(f['time_ns'])} at stake" if f.get("time_ns") else ""
            lines.append(f"{i}. **{_md_escape(f.get('title', ''))}**{where}{stake} — {_md_escape(f.get('detail', ''))}")
    else:
        lines.append("No findings were reported for this trace.")
    lines += ["", "## GPU busy time", ""]
    devices = doc.get("devices") or []
    if devices:
        lines += ["| rank | GPU | busy | idle | busy % | active span |", "|---:|---:|---:|---:|---:|---:|"]
        for d in devices:
            lines.append(
                f"| {d['rank']} | {d['device']} | {format_ns(d['busy_ns'])} | {format_ns(d['idle_ns'])} | "
                f"{d['busy_pct']:.1f} | {format_ns(d['span_ns'])} |"
            )
    else:
        lines.append("No GPU activity in this profile.")
    kernels = doc.get("top_kernels") or []
    if kernels:
        lines += ["", "## Top kernels", "", "| % | total | count | mean | kernel |", "|---:|---:|---:|---:|---|"]
        for k in kernels:
            lines.append(
                f"| {k['pct']:.1f} | {format_ns(k['total_ns'])} | {k['count']:,} | {format_ns(k['mean_ns'])} | "
                f"`{_md_escape(kernel_display_name(k['name']))}` |"
            )
    warnings = doc.get("warnings") or []
    if warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {_md_escape(w)}" for w in warnings]
    return "\n".join(lines) + "\n"


def write_export(path: str, fmt: str, doc: dict[str, Any]) -> int:
    """Write the document; returns the number of bytes written. Raises ``OSError`` on failure."""
    text = dumps(doc) + "\n" if fmt == "json" else findings_markdown(doc)
    data = text.encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)
    return len(data)

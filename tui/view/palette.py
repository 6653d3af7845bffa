"""Colours and glyph styles of the timeline: one style id per kind of thing drawn (kernel family, copy direction,
CPU event kind, utilization, idle gap), resolved into Rich styles for a colour or a monochrome terminal.

In colour, a wide event is a box filled with its colour and labelled in black or white (whichever reads
better); a dense cell is a block glyph in the colour. With ``NO_COLOR`` nothing has a colour: boxes are drawn
as their label followed by ``─``, and selection is reverse video, so everything stays legible.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
from rich.color import Color
from rich.style import Style

from gputop_trace.model.arrays import I32, U8
from gputop_trace.model.kinds import CopyKind, Kind
from gputop_trace.presentation.kernel_labels import Family


class Sid(IntEnum):
    """Style ids of what a cell shows."""

    EMPTY = 0
    K_OTHER = 10
    K_GEMM = 11
    K_ATTENTION = 12
    K_ELEMENTWISE = 13
    K_REDUCTION = 14
    K_COLLECTIVE = 15
    K_TRITON = 16
    COPY_HTOD = 20
    COPY_DTOH = 21
    COPY_DTOD = 22
    COPY_OTHER = 23
    MEMSET = 24
    UVM = 25
    GRAPH = 26
    API = 30
    SYNC = 31
    CPU_OP = 32
    RANGE = 33
    GPU_RANGE = 34
    PYTHON = 35
    OSRT = 36
    MARKER = 37
    OTHER = 38
    UTIL = 50
    GAP = 51
    RULE = 52
    MEMORY = 53


#: kernel family -> style id
FAMILY_SID: dict[Family, Sid] = {
    Family.OTHER: Sid.K_OTHER,
    Family.GEMM: Sid.K_GEMM,
    Family.ATTENTION: Sid.K_ATTENTION,
    Family.ELEMENTWISE: Sid.K_ELEMENTWISE,
    Family.REDUCTION: Sid.K_REDUCTION,
    Family.COLLECTIVE: Sid.K_COLLECTIVE,
    Family.TRITON: Sid.K_TRITON,
}

#: event kind -> style id (kernels and copies are refined by family and direction)
KIND_SID = np.full(256, int(Sid.OTHER), dtype=np.uint8)
for _k, _s in {
    Kind.KERNEL: Sid.K_OTHER,
    Kind.MEMCPY: Sid.COPY_OTHER,
    Kind.MEMSET: Sid.MEMSET,
    Kind.API: Sid.API,
    Kind.SYNC: Sid.SYNC,
    Kind.CPU_OP: Sid.CPU_OP,
    Kind.RANGE: Sid.RANGE,
    Kind.GPU_RANGE: Sid.GPU_RANGE,
    Kind.PYTHON: Sid.PYTHON,
    Kind.GRAPH: Sid.GRAPH,
    Kind.MARKER: Sid.MARKER,
    Kind.OSRT: Sid.OSRT,
    Kind.UVM: Sid.UVM,
}.items():
    KIND_SID[int(_k)] = int(_s)

#: copy direction -> style id
COPY_SID = np.full(256, int(Sid.COPY_OTHER), dtype=np.uint8)
COPY_SID[int(CopyKind.HTOD)] = int(Sid.COPY_HTOD)
COPY_SID[int(CopyKind.DTOH)] = int(Sid.COPY_DTOH)
COPY_SID[int(CopyKind.DTOD)] = int(Sid.COPY_DTOD)

COLOURS: dict[Sid, str] = {
    Sid.K_OTHER: "#8e9aaf",
    Sid.K_GEMM: "#4c8bf5",
    Sid.K_ATTENTION: "#b07ce8",
    Sid.K_ELEMENTWISE: "#5fb760",
    Sid.K_REDUCTION: "#e0a63b",
    Sid.K_COLLECTIVE: "#e05d5d",
    Sid.K_TRITON: "#3fbfbf",
    Sid.COPY_HTOD: "#d98e4a",
    Sid.COPY_DTOH: "#c47ac0",
    Sid.COPY_DTOD: "#b8a16a",
    Sid.COPY_OTHER: "#a89070",
    Sid.MEMSET: "#9a8c7a",
    Sid.UVM: "#c0a040",
    Sid.GRAPH: "#6a8fd0",
    Sid.API: "#7f9c5a",
    Sid.SYNC: "#d0504a",
    Sid.CPU_OP: "#6c7fb0",
    Sid.RANGE: "#5e8fa8",
    Sid.GPU_RANGE: "#5e8fa8",
    Sid.PYTHON: "#7a7a7a",
    Sid.OSRT: "#a07850",
    Sid.MARKER: "#d0d060",
    Sid.OTHER: "#808080",
    Sid.UTIL: "#76b900",
    Sid.GAP: "#e05d5d",
    Sid.RULE: "#505050",
    Sid.MEMORY: "#b07cc6",
}

#: What each style id means, for the legend in the help screen.
LEGEND: dict[Sid, str] = {
    Sid.K_GEMM: "GEMM kernel",
    Sid.K_ATTENTION: "attention kernel",
    Sid.K_ELEMENTWISE: "elementwise kernel",
    Sid.K_REDUCTION: "reduction kernel",
    Sid.K_COLLECTIVE: "collective (NCCL) kernel",
    Sid.K_TRITON: "Triton kernel",
    Sid.K_OTHER: "other kernel",
    Sid.COPY_HTOD: "copy host→device",
    Sid.COPY_DTOH: "copy device→host",
    Sid.COPY_DTOD: "copy device→device",
    Sid.MEMSET: "memset",
    Sid.RANGE: "annotation range",
    Sid.CPU_OP: "CPU operator",
    Sid.API: "CUDA API call",
    Sid.SYNC: "host waits for GPU",
    Sid.PYTHON: "Python frame",
    Sid.UTIL: "GPU busy (height = busy fraction)",
    Sid.GAP: "idle gap found by the gap detector",
    Sid.MEMORY: "GPU memory allocated (height = share of the peak)",
}


class Role(IntEnum):
    """How a cell is drawn."""

    BLANK = 0
    DENSE = 1  # a block glyph: busy fraction of the cell
    BOX = 2  # part of an event wide enough to be drawn as a box
    LABEL = 3  # gutter or ruler text


class Overlay(IntEnum):
    """Highlights drawn over a cell."""

    NONE = 0
    SELECTED = 1
    PARTNER = 2
    CURSOR = 3
    MATCH = 4
    PATH = 5  # a segment of the critical path shown with p
    PATH_IDLE = 6  # idle time on the critical path


def style_key(sid: int, role: int, overlay: int = 0) -> int:
    """One int encoding what a cell shows and how (for run grouping and style lookup)."""
    return (overlay << 16) | (role << 8) | sid


def _text_colour(hex_bg: str) -> str:
    c = Color.parse(hex_bg).get_truecolor()
    lum = 0.2126 * c.red + 0.7152 * c.green + 0.0722 * c.blue
    return "#101010" if lum > 110 else "#f0f0f0"


class Palette:
    """Resolves style keys into Rich styles, in colour or monochrome."""

    def __init__(self, *, mono: bool = False) -> None:
        self.mono = mono
        self.box_fill = "─" if mono else " "
        self._cache: dict[int, Style] = {}

    def style(self, key: int) -> Style:
        """The Rich style of a style key (cached)."""
        st = self._cache.get(key)
        if st is None:
            st = self._cache[key] = self._make(key)
        return st

    def _make(self, key: int) -> Style:
        overlay, role, sid = key >> 16, (key >> 8) & 0xFF, key & 0xFF
        base = Style()
        colour = COLOURS.get(Sid(sid)) if sid in Sid._value2member_map_ else None
        if not self.mono and colour:
            if role == Role.BOX:
                base = Style(color=_text_colour(colour), bgcolor=colour)
            elif role == Role.DENSE or (role == Role.LABEL and sid == Sid.RULE) or sid == Sid.GAP:
                base = Style(color=colour)
        elif self.mono and sid == Sid.RULE:
            base = Style(dim=True)
        if sid == Sid.GAP and role == Role.BOX and not self.mono:
            base = Style(color="#ffd0d0", bgcolor="#5a1e1e")
        if sid in (Sid.COPY_HTOD, Sid.COPY_DTOH, Sid.COPY_DTOD, Sid.COPY_OTHER, Sid.MEMSET) and self.mono:
            base += Style(underline=True)
        if overlay == Overlay.SELECTED:
            base += Style(reverse=True, bold=True)
        elif overlay == Overlay.PARTNER:
            base += Style(reverse=True, underline=True) if self.mono else Style(bgcolor="#ffd75f", color="#101010")
        elif overlay == Overlay.CURSOR:
            base += Style(underline=True, bold=True) if role != Role.BLANK else Style(reverse=True, dim=True)
        elif overlay == Overlay.MATCH:
            base += Style(underline=True, bold=True)
        elif overlay == Overlay.PATH:
            base += Style(underline=True, bold=True) if self.mono else Style(bgcolor="#ff5fd7", color="#101010")
        elif overlay == Overlay.PATH_IDLE:
            base += Style(underline=True, dim=True) if self.mono else Style(bgcolor="#6a2a60", color="#ffc8f0")
        return base

    def sample(self, sid: Sid) -> Style:
        """A legend swatch for a style id."""
        return self.style(style_key(int(sid), int(Role.BOX)))


#: family value -> style id, as an array
FAMILY_SID_ARRAY = np.array([int(FAMILY_SID[f]) for f in Family], dtype=np.uint8)


def event_sids(kind: U8, name: I32, name_family: U8, copy_dir: U8 | None = None) -> U8:
    """Style id of events given their kinds, name ids, the family of every name id and (for copies) directions."""
    out = KIND_SID[kind]
    is_k = kind == int(Kind.KERNEL)
    if is_k.any():
        out = np.where(is_k, FAMILY_SID_ARRAY[name_family[name]], out).astype(np.uint8)
    if copy_dir is not None:
        is_c = kind == int(Kind.MEMCPY)
        out = np.where(is_c, COPY_SID[copy_dir], out).astype(np.uint8)
    return out

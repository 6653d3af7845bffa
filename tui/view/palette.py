"""Colours and glyph styles of the timeline: one style id per kind of thing drawn (kernel family, copy direction,
CPU event kind, utilization, idle gap), resolved into Rich styles for a colour or a monochrome terminal.

In colour, a wide event is a box filled with its colour and labelled in black or white (whichever reads
better); a dense cell is a block glyph in the colour. With ``NO_COLOR`` nothing has a colour: boxes are drawn
as their label followed by ``─``, and selection is reverse video, so everything stays legible.
"""

from __future__ import annotations

from collections.abc import Mapping
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

#: The palette's own colours, by the name of the theme variable that carries each: tui/theme.py makes them the
#: variables of the app's Textual themes (``$gputop-kernel-gemm`` in its CSS); this is their Textual-free source.
#: Hex colours are exact RGB; the named ones are the terminal's own (ANSI) colours.
THEME_COLOURS: dict[str, str] = {
    "gputop-kernel-other": "#8e9aaf",
    "gputop-kernel-gemm": "#4c8bf5",
    "gputop-kernel-attention": "#b07ce8",
    "gputop-kernel-elementwise": "#5fb760",
    "gputop-kernel-reduction": "#e0a63b",
    "gputop-kernel-collective": "#e05d5d",
    "gputop-kernel-triton": "#3fbfbf",
    "gputop-copy-htod": "#d98e4a",
    "gputop-copy-dtoh": "#c47ac0",
    "gputop-copy-dtod": "#b8a16a",
    "gputop-copy-other": "#a89070",
    "gputop-memset": "#9a8c7a",
    "gputop-uvm": "#c0a040",
    "gputop-graph": "#6a8fd0",
    "gputop-api": "#7f9c5a",
    "gputop-sync": "#d0504a",
    "gputop-cpu-op": "#6c7fb0",
    "gputop-range": "#5e8fa8",
    "gputop-gpu-range": "#5e8fa8",
    "gputop-python": "#7a7a7a",
    "gputop-osrt": "#a07850",
    "gputop-marker": "#d0d060",
    "gputop-other": "#808080",
    "gputop-util": "#76b900",
    "gputop-gap": "#e05d5d",
    "gputop-rule": "#505050",
    "gputop-memory": "#b07cc6",
    # an idle gap drawn as a box: light text on dark red
    "gputop-gap-box-text": "#ffd0d0",
    "gputop-gap-box": "#5a1e1e",
    # a box's label: dark on a light fill, light on a dark one
    "gputop-label-dark": "#101010",
    "gputop-label-light": "#f0f0f0",
    # the flow partner of the selection
    "gputop-partner": "#ffd75f",
    # the critical path (p): its segments in pink, idle time on it in dark pink
    "gputop-path": "#ff5fd7",
    "gputop-path-idle": "#6a2a60",
    "gputop-path-idle-text": "#ffc8f0",
    # the Diff view's stacking: the header of each run
    "gputop-base-run": "magenta",
    "gputop-test-run": "cyan",
    # ranks side by side: a rank late at the step's collective; a plot's message (nothing to draw)
    "gputop-late": "yellow",
    "gputop-message": "yellow",
    # the fleet screen: its heat strip (step time vs the median rank's, level 0 fastest … 4 slowest), and a
    # straggler rank or a rank that could not be read
    "gputop-heat-0": "#4c8bf5",
    "gputop-heat-1": "#5fb760",
    "gputop-heat-2": "#e0c040",
    "gputop-heat-3": "#e08a3b",
    "gputop-heat-4": "#e05d5d",
    "gputop-straggler": "red",
    # the Diff view's verdict: TEST faster, slower, or a change within the noise
    "gputop-verdict-faster": "green",
    "gputop-verdict-slower": "red",
    "gputop-verdict-unclear": "yellow",
}
#: the theme variable saying that the theme is monochrome (``NO_COLOR``): its value is ``"true"`` there
MONO_VARIABLE = "gputop-mono"

#: style id -> the theme variable of its colour
SID_VARIABLES: dict[Sid, str] = {
    Sid.K_OTHER: "gputop-kernel-other",
    Sid.K_GEMM: "gputop-kernel-gemm",
    Sid.K_ATTENTION: "gputop-kernel-attention",
    Sid.K_ELEMENTWISE: "gputop-kernel-elementwise",
    Sid.K_REDUCTION: "gputop-kernel-reduction",
    Sid.K_COLLECTIVE: "gputop-kernel-collective",
    Sid.K_TRITON: "gputop-kernel-triton",
    Sid.COPY_HTOD: "gputop-copy-htod",
    Sid.COPY_DTOH: "gputop-copy-dtoh",
    Sid.COPY_DTOD: "gputop-copy-dtod",
    Sid.COPY_OTHER: "gputop-copy-other",
    Sid.MEMSET: "gputop-memset",
    Sid.UVM: "gputop-uvm",
    Sid.GRAPH: "gputop-graph",
    Sid.API: "gputop-api",
    Sid.SYNC: "gputop-sync",
    Sid.CPU_OP: "gputop-cpu-op",
    Sid.RANGE: "gputop-range",
    Sid.GPU_RANGE: "gputop-gpu-range",
    Sid.PYTHON: "gputop-python",
    Sid.OSRT: "gputop-osrt",
    Sid.MARKER: "gputop-marker",
    Sid.OTHER: "gputop-other",
    Sid.UTIL: "gputop-util",
    Sid.GAP: "gputop-gap",
    Sid.RULE: "gputop-rule",
    Sid.MEMORY: "gputop-memory",
}

#: style id -> its colour in the default palette
COLOURS: dict[Sid, str] = {sid: THEME_COLOURS[name] for sid, name in SID_VARIABLES.items()}

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


def _text_colour(hex_bg: str, dark: str, light: str) -> str:
    """The label colour that reads better on ``hex_bg``: ``dark`` on a light fill, ``light`` on a dark one."""
    c = Color.parse(hex_bg).get_truecolor()
    lum = 0.2126 * c.red + 0.7152 * c.green + 0.0722 * c.blue
    return dark if lum > 110 else light


#: copies and memsets: underlined in monochrome (their colour tells them apart otherwise)
_COPY_SIDS = frozenset({Sid.COPY_HTOD, Sid.COPY_DTOH, Sid.COPY_DTOD, Sid.COPY_OTHER, Sid.MEMSET})


class Palette:
    """Resolves style keys into Rich styles, in colour or monochrome. ``colours`` maps theme variable names to
    colours (:data:`THEME_COLOURS`, the default); a Textual theme's palette is :meth:`from_variables`."""

    def __init__(self, *, mono: bool = False, colours: Mapping[str, str] | None = None) -> None:
        self.mono = mono
        self.colours: dict[str, str] = {**THEME_COLOURS, **(colours or {})}
        self._sid_colours = {sid: self.colours[name] for sid, name in SID_VARIABLES.items()}
        self.box_fill = "─" if mono else " "
        self._cache: dict[int, Style] = {}

    def same_as(self, other: Palette) -> bool:
        """Whether ``other`` draws exactly as this one (same colours, both monochrome or both not)."""
        return self.mono == other.mono and self.colours == other.colours

    @classmethod
    def from_variables(cls, variables: Mapping[str, str]) -> Palette:
        """The palette a theme's variables describe: its ``gputop-*`` colours (any missing one from
        :data:`THEME_COLOURS`), monochrome when :data:`MONO_VARIABLE` is ``"true"``."""
        colours = {name: variables[name] for name in THEME_COLOURS if name in variables}
        return cls(mono=variables.get(MONO_VARIABLE) == "true", colours=colours)

    def colour(self, name: str) -> Style:
        """A foreground of the named colour (a key of :data:`THEME_COLOURS`); no colour in monochrome."""
        return Style() if self.mono else Style(color=self.colours[name])

    def text_style(self, name: str, *, bold: bool = False) -> str:
        """A style string in the named colour (``"bold red"``; no colour in monochrome) for text that a Textual
        widget shows: Textual reads a string's colour names as its own (``red`` is ``#ff0000``), unlike the
        terminal's colours of a Rich :class:`Style` (:meth:`colour`), so text drawn with a string keeps one."""
        words = (["bold"] if bold else []) + ([] if self.mono else [self.colours[name]])
        return " ".join(words)

    def style(self, key: int) -> Style:
        """The Rich style of a style key (cached)."""
        st = self._cache.get(key)
        if st is None:
            st = self._cache[key] = self._make(key)
        return st

    def _make(self, key: int) -> Style:
        overlay, role, sid = key >> 16, (key >> 8) & 0xFF, key & 0xFF
        return self._base(sid, role) + self._overlay(overlay, role)

    def _base(self, sid: int, role: int) -> Style:
        """What a cell of style id ``sid`` drawn as ``role`` looks like, before any highlight."""
        c = self.colours
        base = Style()
        colour = self._sid_colours.get(Sid(sid)) if sid in Sid._value2member_map_ else None
        if not self.mono and colour:
            if role == Role.BOX:
                base = Style(
                    color=_text_colour(colour, c["gputop-label-dark"], c["gputop-label-light"]), bgcolor=colour
                )
            elif role == Role.DENSE or (role == Role.LABEL and sid == Sid.RULE) or sid == Sid.GAP:
                base = Style(color=colour)
        elif self.mono and sid == Sid.RULE:
            base = Style(dim=True)
        if sid == Sid.GAP and role == Role.BOX and not self.mono:
            base = Style(color=c["gputop-gap-box-text"], bgcolor=c["gputop-gap-box"])
        if sid in _COPY_SIDS and self.mono:
            base += Style(underline=True)
        return base

    def _overlay(self, overlay: int, role: int) -> Style:
        """The highlight ``overlay`` adds to a cell drawn as ``role``."""
        c = self.colours
        if overlay == Overlay.SELECTED:
            return Style(reverse=True, bold=True)
        if overlay == Overlay.PARTNER:
            if self.mono:
                return Style(reverse=True, underline=True)
            return Style(bgcolor=c["gputop-partner"], color=c["gputop-label-dark"])
        if overlay == Overlay.CURSOR:
            return Style(underline=True, bold=True) if role != Role.BLANK else Style(reverse=True, dim=True)
        if overlay == Overlay.MATCH:
            return Style(underline=True, bold=True)
        if overlay == Overlay.PATH:
            if self.mono:
                return Style(underline=True, bold=True)
            return Style(bgcolor=c["gputop-path"], color=c["gputop-label-dark"])
        if overlay == Overlay.PATH_IDLE:
            if self.mono:
                return Style(underline=True, dim=True)
            return Style(bgcolor=c["gputop-path-idle"], color=c["gputop-path-idle-text"])
        return Style()

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

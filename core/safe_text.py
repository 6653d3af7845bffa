"""Untrusted text from traces made safe for a terminal: no escape sequences, no control characters.

Names and args come from other people's files. Before anything reaches the screen, ANSI CSI/OSC/DCS escape
sequences and C0/C1 control characters are removed (tabs and newlines become spaces). Rich markup is never
interpreted: callers wrap the result in ``rich.text.Text``, never in a markup string.
"""

from __future__ import annotations

import re

# CSI ... final byte, OSC ... BEL/ST, DCS/SOS/PM/APC ... ST, and lone ESC + one char
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x9d[^\x07\x9c]*(?:\x07|\x9c)?"
    r"|\x1b[@-_]?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_WHITESPACE_CONTROL = re.compile(r"[\t\n\r]")


def clean(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (tabs/newlines → spaces)."""
    if text.isprintable():
        return text
    text = _ESCAPES.sub("", text)
    text = _WHITESPACE_CONTROL.sub(" ", text)
    return _CONTROL.sub("", text)

"""Untrusted text from traces made safe for a terminal: no escape sequences, no control characters.

Names and args come from other people's files. Before anything reaches the screen:

- ANSI CSI/OSC/DCS/SOS/PM/APC escape sequences (7-bit ``ESC [``, ``ESC ]`` ... and 8-bit ``\\x9b``, ``\\x9d``) are
  removed with their parameters, so a name can neither colour the screen, move the cursor, set the window title,
  write the clipboard (OSC 52) nor make a hyperlink (OSC 8);
- the remaining C0/C1 control characters and DEL are removed; tab, newline, carriage return, vertical tab, form
  feed and the Unicode line/paragraph separators become spaces (a name stays on one line);
- Unicode format characters (category Cf: bidi embeddings, overrides and isolates such as U+202E, zero-width
  spaces and joiners, the BOM, soft hyphens, tag characters) are removed: they are invisible or reorder what is
  shown, so a name could display as something other than what it is; lone surrogates become U+FFFD;
- other non-ASCII spaces become plain spaces; every other character (wide CJK, emoji, private use) is kept.

Rich markup is never interpreted: callers wrap the result in ``rich.text.Text``, never in a markup string.
For machine-readable output, :func:`escape_for_json` and :func:`escape_for_csv` keep the exact text but write
these characters as visible escapes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

# CSI ... final byte, OSC ... BEL/ST, DCS/SOS/PM/APC ... ST, the 8-bit forms, and lone ESC + one char
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x90\x98\x9e\x9f][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
#: anything outside printable ASCII (the slow path looks at these one by one)
_NOT_PLAIN = re.compile(r"[^ -~]")
_SPACES = frozenset("\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85")


@lru_cache(maxsize=4096)
def _replacement(ch: str) -> str:
    """What one character outside printable ASCII becomes on screen."""
    if ch in _SPACES:
        return " "
    cat = unicodedata.category(ch)
    if cat in {"Cc", "Cf"}:
        return ""
    if cat == "Cs":
        return "\ufffd"
    if cat in ("Zs", "Zl", "Zp"):
        return " "
    return ch


def _replace(m: re.Match[str]) -> str:
    return _replacement(m.group())


def clean(text: str) -> str:
    """``text`` without terminal escape sequences, control and format characters (see the module docstring)."""
    if text.isprintable():
        return text
    text = _ESCAPES.sub("", text)
    return _NOT_PLAIN.sub(_replace, text)


def is_clean(text: str) -> bool:
    """Whether ``text`` is unchanged by :func:`clean` (nothing in it can act on a terminal)."""
    return clean(text) == text


@lru_cache(maxsize=4096)
def _needs_escape(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")


#: DEL and everything above it, written as the complement of ``\x00-\x7e``: the same set, but compiled in
#: 0.05 ms where the range ``[\x7f-\U0010ffff]`` took 3 ms of every command's start-up
_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def escape_for_json(text: str) -> str:
    r"""JSON text (as ``json.dumps(ensure_ascii=False)`` writes it) with the characters a terminal could act on
    written as ``\uXXXX`` escapes: DEL, C1 controls, bidi and zero-width format characters, line separators and
    lone surrogates. A JSON parser reads back exactly the same strings; C0 controls are escaped by ``json``."""
    if text.isascii() and "\x7f" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        ch = m.group()
        if not _needs_escape(ch):
            return ch
        n = ord(ch)
        if n < 0x10000:
            return f"\\u{n:04x}"
        hi, lo = divmod(n - 0x10000, 0x400)  # a UTF-16 surrogate pair, as JSON writes characters above U+FFFF
        return f"\\u{0xD800 + hi:04x}\\u{0xDC00 + lo:04x}"

    return _NON_ASCII.sub(one, text)


def escape_for_csv(text: str) -> str:
    r"""A CSV cell with control, format and separator characters written as visible ``\xNN`` / ``\uXXXX`` /
    ``\UXXXXXXXX`` escapes (CSV has no escapes of its own; anything else is kept as it is)."""
    if text.isprintable():
        return text

    def one(m: re.Match[str]) -> str:
        ch = m.group()
        if not _needs_escape(ch):
            return ch
        n = ord(ch)
        return f"\\x{n:02x}" if n < 0x100 else (f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")

    return _NOT_PLAIN.sub(one, text)


def shell_quote(arg: str) -> str:
    r"""One argument written for a POSIX shell so that it shows exactly what will run and pastes back exactly.

    Plain text is quoted as ``shlex.quote`` does. An argument holding control, format or separator characters
    (which would be invisible, or act on the terminal, if shown raw) is written in ANSI-C quoting (``$'...'``,
    bash/zsh/ksh) with those characters as the ``\xNN`` escapes of their UTF-8 bytes (the bytes ``execvp``
    passes), so nothing in it can act on a terminal and pasting it into bash gives the same argument.
    """
    import shlex

    if is_clean(arg) and "\x00" not in arg:
        return shlex.quote(arg)
    out = ["$'"]
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable() and not _needs_escape(ch):
            out.append(ch)
        else:
            data = (
                ch.encode("utf-8", "surrogateescape") if "\udc80" <= ch <= "\udcff" else ch.encode("utf-8", "replace")
            )
            out.append("".join(f"\\x{b:02x}" for b in data))
    out.append("'")
    return "".join(out)


def shell_join(argv: Sequence[str]) -> str:
    """An argument list as one line for display and copying (see :func:`shell_quote`); it is never run."""
    return " ".join(shell_quote(a) for a in argv)

"""Shortening C++ kernel signatures, shared by the kernel table, the app and the ncu name filter."""

from __future__ import annotations


def qualified_name(signature: str) -> str:
    """The qualified function name of a demangled signature: no return type, anonymous-namespace parts,
    template arguments or parameters. ``void at::native::(anonymous namespace)::k<4>(int)`` →
    ``at::native::k``; a name that is not a C++ signature comes back stripped of surrounding space."""
    s = signature.strip().replace("(anonymous namespace)::", "").replace("{anonymous}::", "")
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            if ch == "(" and "".join(out).strip():
                break
            out.append(ch)
    core = "".join(out).strip()
    if " " in core and ("(" in s or "<" in s or "::" in s):  # a return type before a C++ signature
        core = core.rsplit(" ", 1)[-1]
    return core or signature.strip()


def function_name(signature: str) -> str:
    """The bare function name (the last component of :func:`qualified_name`), as ncu's
    ``--kernel-name-base function`` matches it: ``vectorized_elementwise_kernel``."""
    core = qualified_name(signature)
    return core.rsplit("::", 1)[-1] if "::" in core else core

"""Shortening C++ kernel signatures (kernel table, app, ncu name filter) and the name two runs of one kernel share
(the run comparison)."""

from __future__ import annotations

import re


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


#: Triton's specialization suffix (``_0d1d2d3de`` : argument indices with their divisibility flags) and a
#: trailing hexadecimal hash of at least 8 digits holding a digit (``_5f3a9c1e``): both change from one compile to
#: the next while the kernel stays the same.
_TRITON_SIGNATURE = re.compile(r"_(?:\d+(?:de|d|c|e)){2,}\d*$")
_HEX_HASH = re.compile(r"_(?=[0-9a-f]*\d)[0-9a-f]{8,}$")


def normalized_kernel_name(name: str) -> str:
    """The name two runs of the same kernel share: :func:`qualified_name` (no return type, template arguments or
    parameters) without a Triton specialization suffix or a trailing hash. ``void k<128, float>(float*)`` →
    ``k``; ``_attn_fwd_0d1d2d3de4de`` → ``_attn_fwd``; ``fused_mm_3a9c1e5f77`` → ``fused_mm``. Inductor's kernel
    index (``triton_poi_fused_add_0``) is kept: it tells different kernels of one graph apart."""
    core = qualified_name(name)
    for pattern in (_TRITON_SIGNATURE, _HEX_HASH):
        cut = pattern.sub("", core)
        if cut:
            core = cut
    return core

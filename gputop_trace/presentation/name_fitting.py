"""Names cut to fit a width and still read differently: a long name keeps its head and its tail (where kernel
names differ most), or its head alone (lane names); names that would read alike once cut show where they part
(``nvjet_sm90_ts…_bz_coopA_NNT``, ``Hos…ads/554`` / ``Hos…ads/631``), and as a last resort a number (``…#2``).
Widths are terminal columns, one a character. Pure string functions: the app's tables, lanes and timeline, and the
command line's tables cut their names with :func:`fit_names`."""

from __future__ import annotations

import re
from itertools import pairwise


def _cut(name: str, width: int, start: int) -> str:
    """``name`` in ``width`` columns: its head, ``…``, then the part from ``start`` (cut at the end with ``…``
    when it still does not fit)."""
    head = min(start, max(1, (width - 1) // 3))
    rest = name[max(start, head) :]
    room = width - head - 1
    if len(rest) > room:
        rest = rest[: max(1, room - 1)] + "…"
    return name[:head] + "…" + rest


def _cut_at(name: str, width: int, points: list[int]) -> str:
    """``name`` in ``width`` columns showing each of ``points`` (sorted places where it differs from another
    name): its head, then after ``…`` a stretch of the name around each point further on (stretches that meet
    are joined); one point further on is :func:`_cut` a few characters before it."""
    most = max(1, (width - 1) // 3)
    inside = points[0] < most  # a difference within the head shows there
    points = [p for p in points if p >= most]
    if not points:
        return name[: width - 1] + "…"
    if len(points) == 1:
        return _cut(name, width, max(most if inside else 0, points[0] - 4))
    head = most if inside else min(most, max(0, points[0] - 4))
    seg = max(2, (width - head - 1) // len(points) - 1)  # one column kept for the final …
    ctx = 0 if seg < 6 else min(4, seg // 3)  # in a short stretch, the differing characters themselves
    out, end = name[:head], head
    for p in points:
        start = max(p - ctx, end)
        out += ("…" if start > end else "") + name[start : start + seg]
        end = start + seg
    out += "…" if end < len(name) else ""
    return out if len(out) <= width else out[: width - 1] + "…"


def fit_names(names: list[str], width: int, *, keep_head: bool = False) -> list[str]:
    """Each name in at most ``width`` columns, cut so that names that differ still read differently: a name that
    is too long keeps its head and its tail (``nvjet_sm90_ts…_bz_coopA_NNT``, where kernel names differ most;
    ``keep_head``: its head alone, as lane names read best, ``Stream #14(C…``); a label led by its hint
    (``add·vectorized_elementwise_kernel``) keeps the hint and is cut at the end; names that still collide show,
    after the head, a stretch at each place where they part from the other cut names (``Hos…ads/554``,
    ``Hos…ads/631``; ``sm80_…tn…64…ke…``, ``sm80_…tn…64…sp…`` for the plain and the split_k GEMM)."""
    if width < 4:
        return [n[:width] for n in names]

    def first_cut(n: str) -> str:
        if len(n) <= width:
            return n
        if "·" in n or keep_head:
            return n[: width - 1] + "…"
        return _cut(n, width, len(n) - (width - 1 - max(1, (width - 1) // 3)))

    out = [first_cut(n) for n in names]
    for label, members in _collisions(names, out).items():
        # names cut alike: show what sets them apart, token by token (``cutlass…128x128_32x3_nt_align1``)
        apart = sorted(n for n in members if "·" not in n) if not keep_head else []
        fixed = _cut_apart(apart, width) if len(apart) > 1 else {}
        out = [fixed.get(n, o) if o == label else o for n, o in zip(names, out, strict=True)]
    left = _collisions(names, out)
    if left and not keep_head:  # the groups' cuts met: cut all the names still alike apart as one group
        apart = sorted({n for members in left.values() for n in members if "·" not in n})
        fixed = _cut_apart(apart, width) if len(apart) > 1 else {}
        out = [fixed.get(n, o) if o in left else o for n, o in zip(names, out, strict=True)]
    parting: dict[str, list[int]] | None = None
    for label, members in _collisions(names, out).items():
        if parting is None:  # a cut name must still differ from every other cut name, not only its group's
            parting = _parting_points(sorted({n for n in names if len(n) > width}))
        fixed = {}
        for n in members:
            # every place this name parts from another one (``tilesize64…`` / ``tilesize128…``, and further on
            # ``execute_kernel`` / ``execute_split_k_kernel``), not only where the group does
            fixed[n] = _cut_at(n, width, parting.get(n) or [0]) if len(n) > width else n
        out = [fixed.get(n, o) if o == label else o for n, o in zip(names, out, strict=True)]
    k = 0
    for label, members in _collisions(names, out).items():
        # the last resort, so that no two rows ever read alike: a number after the cut (``…#2``), counted over
        # the whole table so that two groups cannot end alike
        for n in sorted(members):
            k += 1
            tag = f"…#{k}"
            numbered = label[: max(0, width - len(tag))] + tag
            out = [numbered if (m == n and o == label) else o for m, o in zip(names, out, strict=True)]
    return out


def _collisions(names: list[str], out: list[str]) -> dict[str, set[str]]:
    """The cut names that stand for more than one of ``names``, each with the names it stands for."""
    groups: dict[str, set[str]] = {}
    for n, label in zip(names, out, strict=True):
        groups.setdefault(label, set()).add(n)
    return {label: members for label, members in groups.items() if len(members) > 1}


_TOKEN = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")


def _cut_apart(names: list[str], width: int) -> dict[str, str]:
    """Names that read alike once cut, each in ``width`` columns showing the words (runs of letters and digits)
    where they differ: before that stretch a head of the name, ``…`` and as much of what comes just before the
    stretch as fits; after it what they share at the end, while it fits (it tells the group from other names), else
    ``…``. When the stretch is still too long, the words that every name of the group has at the same place in it
    become ``…`` (``cutlass…128x128_32x3_nt_align1``, ``…256x128_32x3_nt_align1``). A name whose stretch does not
    fit even so is left out of the answer."""
    toks = [_TOKEN.findall(n) for n in names]
    shortest = min(len(t) for t in toks)
    p = 0
    while p < shortest and all(t[p] == toks[0][p] for t in toks):
        p += 1
    s = 0
    while s < shortest - p and all(t[-1 - s] == toks[0][-1 - s] for t in toks):
        s += 1
    mids = [t[p : len(t) - s] for t in toks]
    got: dict[str, str] = {}
    for n, t, mid, short in zip(names, toks, mids, _squeeze(mids), strict=True):
        for middle in ("".join(mid), short):
            pick = _join_apart("".join(t[:p]), middle, "".join(t[len(t) - s :]), width)
            if pick is not None:
                got[n] = pick
                break
    return got


def _join_apart(before: str, middle: str, after: str, width: int) -> str | None:
    """``middle`` whole in ``width`` columns, after as much of ``before`` as fits (its head, ``…``, its end) and
    followed by ``after`` whole or, when that does not fit, ``…``; None when the middle does not fit."""
    most = max(1, (width - 1) // 3)
    for right in dict.fromkeys((after, "…" if after else "")):
        room = width - len(middle) - len(right)
        if room >= len(before):
            return before + middle + right
        if room < 1:
            continue
        head = min(most, room - 1)
        head = head if head >= 4 else 0  # a head of one to three letters says nothing
        end = room - 1 - head
        return before[:head] + "…" + (before[len(before) - end :] if end else "") + middle + right
    return None


def _squeeze(mids: list[list[str]]) -> list[str]:
    """The differing stretches (lists of words and separators), with the runs of words that all of them have at
    the same place shown as one ``…`` (only where the stretches have as many parts; otherwise as they are)."""
    if len({len(m) for m in mids}) != 1 or not mids[0]:
        return ["".join(m) for m in mids]
    same = [all(m[i] == mids[0][i] for m in mids) for i in range(len(mids[0]))]
    out = []
    for m in mids:
        # a shared word becomes ``…``, a separator stays unless it touches one (``128x128…nt``, not ``128…128``)
        text = "".join(tok if not same[i] or not tok[0].isalnum() else "…" for i, tok in enumerate(m))
        out.append(_ELLIPSIS_RUN.sub("…", text))
    return out


_ELLIPSIS_RUN = re.compile(r"[^A-Za-z0-9…]*…(?:[^A-Za-z0-9…]*…)*[^A-Za-z0-9…]*")


def _parting_points(names: list[str]) -> dict[str, list[int]]:
    """For each of the sorted, distinct ``names``, the lengths of the prefixes it shares with the others, sorted:
    going away from it in sorted order these are the running minima of the neighbours' shared prefixes, reached
    by jumping to the nearest smaller one (linear, not quadratic, in the number of names)."""
    a = [len(_common_prefix([x, y])) for x, y in pairwise(names)]
    prev, nxt = [-1] * len(a), [len(a)] * len(a)
    stack: list[int] = []
    for order, out in ((range(len(a)), prev), (range(len(a) - 1, -1, -1), nxt)):
        stack.clear()
        for k in order:
            while stack and a[stack[-1]] >= a[k]:
                stack.pop()
            out[k] = stack[-1] if stack else out[k]
            stack.append(k)
    got: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        pts, j, k = set(), i - 1, i
        while j >= 0:
            pts.add(a[j])
            j = prev[j]
        while k < len(a):
            pts.add(a[k])
            k = nxt[k]
        got[n] = sorted(pts)
    return got


def _common_prefix(names: list[str]) -> str:
    first, last = names[0], names[-1]  # sorted: the common prefix of the extremes is everyone's
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]

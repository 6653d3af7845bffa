"""Pairing B/E events (per thread, as a stack) and async b/e events (per process, category and id) into slices,
after streaming; a begin that never ends runs to the end of the trace."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from gputop_trace.parsers.chrome.classify import append_events
from gputop_trace.parsers.chrome.state import PH_ASYNC, PH_ASYNC_I, PH_BE, State


def match_begin_end(st: State, end_of_trace: int) -> None:
    if not st.be:
        return
    rows = sorted(st.be, key=lambda r: (r[0], r[1], r[2]))
    out_start: list[int] = []
    out_dur: list[int] = []
    out_src: list[int] = []
    out_cat: list[int] = []
    out_name: list[int] = []
    stacks: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    orphan_e = 0
    for src, ts, _seq, name, cat, ph in rows:
        if ph == "B":
            stacks[src].append((ts, name, cat))
        elif stacks[src]:
            b_ts, b_name, b_cat = stacks[src].pop()
            out_start.append(b_ts)
            out_dur.append(max(0, ts - b_ts))
            out_src.append(src)
            out_cat.append(b_cat)
            out_name.append(b_name)
        else:
            orphan_e += 1
    open_b = 0
    for src, stack in stacks.items():
        for b_ts, b_name, b_cat in stack:
            open_b += 1
            out_start.append(b_ts)
            out_dur.append(max(0, end_of_trace - b_ts))
            out_src.append(src)
            out_cat.append(b_cat)
            out_name.append(b_name)
    if orphan_e:
        st.builder.warn(f"{orphan_e} end (E) events had no matching begin (B) and were ignored.")
    if open_b:
        st.builder.warn(
            f"{open_b} begin (B) events were never ended (no E); they are shown running to the end of the trace."
        )
    n = len(out_start)
    if n:
        append_events(
            st,
            np.array(out_start, dtype=np.int64),
            np.array(out_dur, dtype=np.int64),
            np.array(out_src, dtype=np.int32),
            np.array(out_cat, dtype=np.int16),
            np.array(out_name, dtype=np.int32),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int32),
            np.full(n, PH_BE, dtype=np.uint8),
        )


def match_async(st: State, end_of_trace: int) -> None:
    if not st.asyncs:
        return
    rows = sorted(st.asyncs, key=lambda r: (r[4], r[6]))
    stacks: dict[tuple[Any, ...], list[tuple[int, str]]] = defaultdict(list)
    starts: list[int] = []
    durs: list[int] = []
    srcs: list[int] = []
    names: list[int] = []
    cats: list[int] = []
    phcs: list[int] = []
    unmatched = 0
    for ph, pid, cat, ident, ts, name, _seq in rows:
        key = (pid, cat, ident)
        src = st.src_id(pid, ("async", cat))
        if ph == "b":
            stacks[key].append((ts, name))
        elif ph == "e":
            if stacks[key]:
                b_ts, b_name = stacks[key].pop()
                starts.append(b_ts)
                durs.append(max(0, ts - b_ts))
                srcs.append(src)
                names.append(st.builder.names.intern(b_name))
                cats.append(st.cat_id(cat))
                phcs.append(PH_ASYNC)
            else:
                unmatched += 1
        else:
            starts.append(ts)
            durs.append(0)
            srcs.append(src)
            names.append(st.builder.names.intern(name))
            cats.append(st.cat_id(cat))
            phcs.append(PH_ASYNC_I)
    for (pid, cat, _ident), stack in stacks.items():
        for b_ts, b_name in stack:
            unmatched += 1
            starts.append(b_ts)
            durs.append(max(0, end_of_trace - b_ts))
            srcs.append(st.src_id(pid, ("async", cat)))
            names.append(st.builder.names.intern(b_name))
            cats.append(st.cat_id(cat))
            phcs.append(PH_ASYNC)
    if unmatched:
        st.builder.warn(f"{unmatched} async (b/e) events had no partner; open ones run to the end of the trace.")
    n = len(starts)
    if n:
        append_events(
            st,
            np.array(starts, dtype=np.int64),
            np.array(durs, dtype=np.int64),
            np.array(srcs, dtype=np.int32),
            np.array(cats, dtype=np.int16),
            np.array(names, dtype=np.int32),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int32),
            np.array(phcs, dtype=np.uint8),
        )

"""The allocator tuning of load/heap.py: on glibc, memory freed while a trace loads is reused rather than mapped
afresh (a page fault per page on first touch), the switch turns it off, and elsewhere nothing happens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: what a gzip load does: a thread makes pieces of about 1 MiB (sizes vary) that wait in a short queue, another
#: frees each once it has read it; print the page faults that cost
_CHURN = """
import json, queue, resource, threading
from gputop_trace.load import heap
tuned = heap.keep_freed_memory()
q = queue.Queue(4)
def produce():
    for i in range(80):
        q.put(bytearray((1 << 20) + (i % 7) * 40_000))  # zeroed: every page touched
    q.put(None)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t = threading.Thread(target=produce)
t.start()
while q.get() is not None:
    pass
t.join()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
heap.give_back_free_memory()
print(json.dumps({"tuned": tuned, "faults": faults}))
"""


def _run(code: str, env_off: bool) -> dict[str, object]:
    env = {"GPUTOP_KEEP_HEAP": "0"} if env_off else {}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    got: dict[str, object] = json.loads(out.stdout)
    return got


def _churn(env_off: bool) -> dict[str, object]:
    return _run(_CHURN, env_off)


def _glibc_version() -> str | None:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):  # not a glibc system
        return None


def test_freed_memory_is_reused_while_loading_and_the_switch_turns_it_off() -> None:
    on, off = _churn(env_off=False), _churn(env_off=True)
    assert off["tuned"] is False
    glibc = sys.platform.startswith("linux") and _glibc_version() is not None
    assert on["tuned"] is glibc  # tuned exactly where the C library is glibc; elsewhere nothing is done
    assert isinstance(on["faults"], int) and isinstance(off["faults"], int)
    if glibc:  # glibc alone maps fresh pages for many of the pieces (5,000 faults here); tuned, it reuses them (2,000)
        assert on["faults"] * 2 < off["faults"], (on, off)


#: where a new thread's malloc lands: in the main heap (the "[heap]" mapping, grown with brk), or in an arena of
#: its own (a mapping elsewhere)
_THREAD_MALLOC = """
import ctypes, json, threading
from gputop_trace.load import heap
tuned = heap.keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
got = {}
def alloc():
    got["at"] = libc.malloc(4000)  # below every mmap threshold: from the thread's arena
t = threading.Thread(target=alloc)
t.start()
t.join()
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[heap]"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        break
else:
    lo = hi = 0
print(json.dumps({"tuned": tuned, "main_heap": lo <= got["at"] < hi}))
libc.free(got["at"])
"""


def test_the_threads_of_a_load_share_the_main_arena_and_the_switch_turns_it_off() -> None:
    if not (sys.platform.startswith("linux") and _glibc_version() is not None):
        out = _run(_THREAD_MALLOC, env_off=False)
        assert out["tuned"] is False
        return
    on, off = _run(_THREAD_MALLOC, env_off=False), _run(_THREAD_MALLOC, env_off=True)
    # tuned, a new thread allocates from the main heap, whose freed memory every thread reuses; untuned, glibc
    # gives it an arena of its own
    assert on == {"tuned": True, "main_heap": True}, on
    assert off == {"tuned": False, "main_heap": False}, off


_GC_DURING_LOAD = """
import gc, json, sys
from gputop_trace.load.loader import load_paths
seen = set()
load_paths([sys.argv[1]], use_cache=False, progress=lambda done, total, events: seen.add(gc.isenabled()))
print(json.dumps({"during": sorted(seen), "after": gc.isenabled()}))
"""


def test_the_garbage_collector_is_paused_while_a_file_loads_and_the_switch_leaves_it_alone(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    events = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(2000)]
    trace.write_text(json.dumps({"traceEvents": events}))
    on, off = (
        _run(_GC_DURING_LOAD.replace("sys.argv[1]", repr(str(trace))), env_off=switch) for switch in (False, True)
    )
    assert on == {"during": [False], "after": True}, on
    assert off == {"during": [True], "after": True}, off

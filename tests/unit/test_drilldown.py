"""From a kernel in a trace to the exact ncu argument list: escaping, name base, launch counting, NVTX ranges,
the remembered target command."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputop_trace.errors import TraceError
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.ncu.drilldown import (
    DrilldownRequest,
    TargetCommand,
    build_ncu_command,
    cache_root,
    command_for_request,
    escape_ncu_regex,
    kernel_filter,
    load_target,
    nvtx_filter,
    request_for_event,
    run_files,
    save_target,
    split_command,
)
from tests.paths import SAMPLES

SAMPLE = str(SAMPLES / "h200_train_step.json.gz")
COMPILED = str(SAMPLES / "h200_compiled.json.gz")

NASTY = "operator()<int>[2]$|^.*+?{}\\ x 'q' \"dq\" ;rm -rf / $(touch pwned) `id` & >out"


def test_escape_every_regex_metacharacter_and_nothing_else() -> None:
    assert escape_ncu_regex("operator()<int>[2]$|^.*+?{}\\") == r"operator\(\)<int>\[2\]\$\|\^\.\*\+\?\{\}\\"
    # word-boundary escapes (\<, \>) in some engines: < and > are left alone
    assert escape_ncu_regex("a<b>c d;e") == "a<b>c d;e"


@given(st.text(min_size=1, max_size=40))
def test_escaped_name_matches_itself_exactly(name: str) -> None:
    pattern = "^" + escape_ncu_regex(name) + "$"
    assert re.fullmatch(pattern, name, flags=re.DOTALL)
    assert not re.fullmatch(pattern, name + "x", flags=re.DOTALL)


def test_exact_argument_list_with_hostile_names_and_target() -> None:
    target = ["python3", "-c", "print('hi'); import os", "; rm -rf ~", "$(touch pwned)", "a b"]
    # a raw (mangled) name keeps every character, so the regex escaping is visible in the argument
    raw = "_Z3k$(touch${IFS}PWNED)`id`;x|y.*+?[2]{3}^\\"
    cmd = build_ncu_command(
        raw,
        target,
        launch_skip=7,
        nvtx_range="step 3",
        section_set="detailed",
        report_base="/tmp/r base/k",
        log_path="/tmp/r base/k.log",
        ncu="/opt/ncu",
        clock_control="none",
    )
    assert cmd.argv == (
        "/opt/ncu",
        "--config-file",
        "off",
        "--target-processes",
        "all",
        "--kernel-name-base",
        "mangled",
        "-k",
        r"regex:^_Z3k\$\(touch\$\{IFS\}PWNED\)`id`;x\|y\.\*\+\?\[2\]\{3\}\^\\$",
        "-s",
        "7",
        "-c",
        "1",
        "--set",
        "detailed",
        "-f",
        "-o",
        "/tmp/r base/k",
        "--log-file",
        "/tmp/r base/k.log",
        "--nvtx",
        "--nvtx-include",
        "step 3/",
        "--clock-control",
        "none",
        "--",
        *target,
    )
    assert cmd.report_path == "/tmp/r base/k.ncu-rep"
    assert cmd.target == tuple(target)
    # the display form is for copying into a shell: it round-trips through shell quoting
    import shlex

    assert tuple(shlex.split(cmd.display())) == cmd.argv


def test_demangled_names_reduce_to_the_function_name() -> None:
    cmd = build_ncu_command(f"void ns::{NASTY}(int)", ["./app"], report_base="r", log_path="r.log")
    assert cmd.argv[cmd.argv.index("-k") + 1] == "regex:^operator$"
    cmd = build_ncu_command(
        "void at::native::k<int, (anonymous namespace)::F>(int)", ["./a"], report_base="r", log_path="r"
    )
    assert cmd.argv[cmd.argv.index("--kernel-name-base") + 1 : cmd.argv.index("-k") + 2] == (
        "function",
        "-k",
        "regex:^k$",
    )


def test_mangled_raw_names_use_the_mangled_base() -> None:
    assert kernel_filter("_Z5saxpyIfEviT_PKS0_PS0_") == ("mangled", "_Z5saxpyIfEviT_PKS0_PS0_")
    assert kernel_filter("void saxpy<float>(int, float, float const*, float*)") == ("function", "saxpy")
    assert kernel_filter("demo::fma_heavy(float*, int)") == ("function", "fma_heavy")
    assert kernel_filter("triton_poi_fused_add_0") == ("function", "triton_poi_fused_add_0")
    cmd = build_ncu_command("_ZN4demo9fma_heavyEPfi", ["./app"], report_base="r", log_path="r.log")
    assert cmd.argv[cmd.argv.index("--kernel-name-base") + 1] == "mangled"
    assert cmd.argv[cmd.argv.index("-k") + 1] == "regex:^_ZN4demo9fma_heavyEPfi$"
    assert "--nvtx" not in cmd.argv and "--clock-control" not in cmd.argv


def test_nvtx_names_ncu_cannot_express_are_left_out_with_a_note() -> None:
    assert nvtx_filter("step_2") == ("step_2/", "")
    for bad in ("dom@range", "a/b", "[x", "y]", "regex:foo"):
        include, note = nvtx_filter(bad)
        assert include is None and "left out" in note
    cmd = build_ncu_command("k", ["./app"], nvtx_range="a/b", report_base="r", log_path="r.log")
    assert "--nvtx" not in cmd.argv and cmd.notes


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": []}, "target command is empty"),
        ({"launch_skip": -1}, "0 or more"),
        ({"section_set": "bogus"}, "unknown ncu section set"),
        ({"clock_control": "max"}, "base or none"),
    ],
)
def test_invalid_commands_are_refused(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"target": ["./app"], "report_base": "r", "log_path": "r.log"}
    args.update(kwargs)
    target = args.pop("target")
    with pytest.raises(ValueError, match=message):
        build_ncu_command("k", target, **args)


def test_split_command() -> None:
    assert split_command("python3 train.py --name 'a b' \"c d\"") == ["python3", "train.py", "--name", "a b", "c d"]
    with pytest.raises(ValueError, match="without a shell"):
        split_command("python3 train.py | tee log")
    with pytest.raises(ValueError, match="quotes"):
        split_command("python3 'unclosed")
    with pytest.raises(ValueError, match="empty"):
        split_command("   ")


def test_target_command_is_remembered_in_the_user_cache_not_next_to_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUTOP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    trace = trace_dir / "run.json"
    trace.write_text("{}")
    assert load_target(str(trace)) is None
    written = save_target(str(trace), TargetCommand(("python3", "train.py", "--steps", "3"), "/work"))
    assert written is not None and written.startswith(str(tmp_path / "xdg" / "gputop-trace" / "targets"))
    assert sorted(os.listdir(trace_dir)) == ["run.json"]
    assert load_target(str(trace)) == TargetCommand(("python3", "train.py", "--steps", "3"), "/work")
    assert load_target(str(trace_dir / "other.json")) is None
    assert cache_root() == str(tmp_path / "xdg" / "gputop-trace")
    base, log = run_files("void at::native::foo<int>(int)", 3, str(trace), now=0)
    assert base.startswith(cache_root()) and os.path.basename(base).startswith("foo-launch3-")
    assert log == base + ".log"


def test_broken_target_file_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTOP_CACHE_DIR", str(tmp_path))
    save_target("/x/t.json", TargetCommand(("a",), "/"))
    (f,) = (tmp_path / "targets").iterdir()
    f.write_text("{not json")
    assert load_target("/x/t.json") is None


def _brute_force_launch(t: Trace, event: int) -> int:
    """The launch count the slow way: every kernel of the rank, one at a time."""
    mine = kernel_filter(t.event_name(event))
    n = 0
    for e in t.of_kind(Kind.KERNEL).tolist():
        if t.event_rank[e] != t.event_rank[event] or kernel_filter(t.event_name(e)) != mine:
            continue
        s, s0 = t.start_ns[e], t.start_ns[event]
        if s < s0 or (s == s0 and e < event):
            n += 1
    return n


def test_launch_count_matches_a_brute_force_count_on_the_sample_trace() -> None:
    t = load_paths([SAMPLE])
    kernels = t.of_kind(Kind.KERNEL)
    order = kernels[np.argsort(t.start_ns[kernels], kind="stable")]
    for e in order[:: max(1, len(order) // 25)].tolist():
        r = request_for_event(t, e, SAMPLE)
        assert r.launch == _brute_force_launch(t, e)
        assert r.filter == kernel_filter(t.event_name(e))


def test_ranges_and_suggested_nvtx_range_on_the_sample_trace() -> None:
    t = load_paths([SAMPLE])
    kernels = t.of_kind(Kind.KERNEL)
    order = kernels[np.argsort(t.start_ns[kernels], kind="stable")]
    step2 = next(int(i) for i in t.of_kind(Kind.RANGE) if t.event_name(int(i)) == "step_2")
    s0, s1 = t.start_ns[step2], t.start_ns[step2] + t.dur_ns[step2]
    # kernels launched from the main thread inside step_2
    inside = [
        int(e)
        for e in order
        if t.launch_of[e] >= 0 and s0 <= t.start_ns[t.launch_of[e]] < s1 and t.lane[t.launch_of[e]] == t.lane[step2]
    ]
    assert len(inside) > 20
    seen: dict[tuple[str, str], int] = {}
    for e in inside:
        r = request_for_event(t, e, SAMPLE)
        key = kernel_filter(t.event_name(e))
        # step_i ranges occur once each: the suggestion is the step, and the count restarts inside it
        assert r.nvtx_range == "step_2"
        assert r.launch_in_range == seen.get(key, 0) == r.skip_in_range("step_2")
        seen[key] = seen.get(key, 0) + 1
        names = [n for n, _ in r.ranges]
        assert names[0] == "step_2" and not any(n.startswith("ProfilerStep#") for n in names)
        assert r.nvtx_default is False  # Kineto ranges are NVTX only when annotated with NVTX
    r = request_for_event(t, inside[-1], SAMPLE)
    cmd = command_for_request(r, ["python3", "train.py"], use_nvtx=True)
    assert cmd.argv[cmd.argv.index("-s") + 1] == str(r.launch_in_range)
    assert cmd.nvtx_include == "step_2/"
    plain = command_for_request(r, ["python3", "train.py"], use_nvtx=False)
    assert plain.argv[plain.argv.index("-s") + 1] == str(r.launch) and plain.nvtx_include is None
    other = r.ranges[-1][0]
    chosen = command_for_request(r, ["python3"], use_nvtx=True, nvtx_range=other)
    assert chosen.nvtx_include == f"{other}/" and chosen.launch_skip == dict(r.ranges)[other]


def test_compiled_sample_marks_triton_kernels() -> None:
    t = load_paths([COMPILED])
    for e in t.of_kind(Kind.KERNEL).tolist()[:40]:
        r = request_for_event(t, e)
        assert r.compiled == t.event_name(e).startswith("triton_")


def test_only_kernels_can_be_profiled() -> None:
    t = load_paths([SAMPLE])
    with pytest.raises(TraceError, match="Select a kernel"):
        request_for_event(t, int(t.of_kind(Kind.RANGE)[0]))


def test_request_skip_in_range() -> None:
    r = DrilldownRequest("k", "k", launch=9, nvtx_range="s", launch_in_range=2, ranges=(("s", 2), ("f", 5)))
    assert (r.skip_in_range(None), r.skip_in_range("s"), r.skip_in_range("f"), r.skip_in_range("zz")) == (9, 2, 5, 9)

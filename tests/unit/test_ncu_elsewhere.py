"""The drill-down's commands for a machine with ncu (issue 20.6): the gputop-trace ncu command parses back to the
same kernel, launch and NVTX range with the command line's own parser; the ncu command profiles that launch and
writes its report in the current folder under a name that does not change from one showing to the next."""

from __future__ import annotations

import shlex

from gputop_trace.cli.main import build_parser
from gputop_trace.ncu.drilldown import DrilldownRequest
from gputop_trace.ncu.elsewhere import PLACEHOLDER_TARGET, commands_elsewhere

REQUEST = DrilldownRequest(
    kernel_name="void gemm<128>(float*, int)",
    raw_name="_Z4gemmILi128EEvPfi",
    launch=51,
    nvtx_range="step 2",
    launch_in_range=3,
    nvtx_default=True,
)


def test_the_gputop_trace_command_parses_back_to_the_same_launch() -> None:
    cmds = commands_elsewhere(REQUEST, ["python3", "train.py", "--name", "a b"], section_set="basic")
    argv = shlex.split(cmds.gputop_trace)
    assert argv[0] == "gputop-trace"
    args = build_parser().parse_args(argv[1:])
    assert args.kernel == "_Z4gemmILi128EEvPfi" and args.launch == 3 and args.nvtx == "step 2"
    assert args.section_set == "basic"
    assert args.args == ["python3", "train.py", "--name", "a b"]
    assert not cmds.placeholder


def test_the_ncu_command_profiles_that_launch_here_and_reads_the_same_each_time() -> None:
    a = commands_elsewhere(REQUEST, None, now=0.0)
    b = commands_elsewhere(REQUEST, None, now=1e9)
    assert a == b and a.placeholder
    argv = shlex.split(a.ncu)
    assert argv[0] == "ncu" and argv[argv.index("-s") + 1] == "3"
    assert argv[argv.index("--nvtx-include") + 1].startswith("step 2")
    out = argv[argv.index("-o") + 1]
    assert "/" not in out and a.report == out + ".ncu-rep" and out.endswith("-launch3")
    assert argv[-2:] == list(PLACEHOLDER_TARGET)


def test_without_the_nvtx_default_the_plain_launch_count_is_used() -> None:
    plain = DrilldownRequest(kernel_name="k", raw_name="k", launch=7, nvtx_range="step 2", launch_in_range=1)
    argv = shlex.split(commands_elsewhere(plain, ["run"]).gputop_trace)
    assert "--nvtx" not in argv and argv[argv.index("--launch") + 1] == "7"

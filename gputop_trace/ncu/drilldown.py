"""From a kernel in a trace to the exact ``ncu`` command that profiles that one launch.

**Which name and which name base.** ncu's ``--kernel-name-base`` decides what ``-k`` is matched against
(ncu --help): ``function`` is the bare function name (``saxpy``, ``fma_heavy`` for ``demo::fma_heavy(float*, int)``),
``demangled`` the full demangled signature *as ncu prints it* (ncu simplifies it: ``void saxpy<float>(int, T1,
const T1 *, T1 *)``), ``mangled`` the linker symbol (``_Z5saxpyIfEviT_PKS0_PS0_``). The choice per source:

- the raw name is mangled (``_Z...``, nsys exports keep it as the kernel's raw name): ``--kernel-name-base mangled``
  and an exact regex on it — unique even across template instantiations;
- otherwise (Kineto/CUPTI demangled names, ``extern "C"`` and Triton kernels, nvjet/cuBLAS names):
  ``--kernel-name-base function`` and an exact regex on the bare function name. CUPTI's demangled form differs
  from ncu's simplified one (``char*`` vs ``char *``, ``T1`` for parameters), so matching demangled names exactly
  fails (the corpus' ``namebase.txt`` shows it); the function name is the same in both.

**Which launch.** ``-s`` counts only launches that pass the filters, so the skip count is the number of earlier
launches (in time order, same rank) whose *filter name* is the same — every template instantiation of
``vectorized_elementwise_kernel`` counts, because they share the function name. With an NVTX filter the count is
taken only over launches whose launch call lies inside a range of that name. The count is exact when the trace
covers the program from its start; a trace of later steps only (a profiler schedule) undercounts, and the
drill-down lets the user edit it.

**Escaping.** ``-k regex:^...$``: every regex metacharacter (``\\ ^ $ . | ? * + ( ) [ ] { }``) is escaped with a
backslash, nothing else (ncu's engine may read ``\\<`` as a word boundary, so ``<`` stays as it is). The command
is an argument list for ``execvp``; no shell ever parses it.

The target command (how to rerun the workload) is remembered per trace in the user cache directory
(``$XDG_CACHE_HOME/gputop-trace/targets``), never next to the trace; reports and logs go to
``$XDG_CACHE_HOME/gputop-trace/ncu/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputop_trace.errors import TraceError
from gputop_trace.model.arrays import distinct
from gputop_trace.model.kernel_names import function_name

if TYPE_CHECKING:
    import numpy as np

    from gputop_trace.model.trace import Trace

SECTION_SETS = ("full", "detailed", "basic")
_REGEX_META = re.compile(r"([\\^$.|?*+()\[\]{}])")
#: Characters with a meaning in ncu's NVTX filter syntax (domain@range, push/pop '/', stack position '[' ']').
_NVTX_SYNTAX = re.compile(r"[@/\[\]\\]")
_SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "2>", "2>&1", "&>"}
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


def escape_ncu_regex(name: str) -> str:
    """``name`` with every regex metacharacter escaped, for ``-k regex:^<escaped>$``."""
    return _REGEX_META.sub(r"\\\1", name)


def kernel_filter(raw_name: str) -> tuple[str, str]:
    """``(kernel-name-base, name)`` to match a kernel whose raw name (mangled or demangled) is ``raw_name``."""
    name = raw_name.strip()
    if re.match(r"^_Z\w", name) and " " not in name:
        return "mangled", name
    return "function", function_name(name)


def nvtx_filter(range_name: str | None) -> tuple[str | None, str]:
    """``(argument for --nvtx-include, note)``: ``"range/"`` selects a push/pop range of the default domain.
    Names that ncu's filter syntax cannot express literally (``@ / [ ] \\``, a ``regex:`` prefix) give ``None``
    and a note saying the filter was left out."""
    if not range_name:
        return None, ""
    if _NVTX_SYNTAX.search(range_name) or range_name.startswith("regex:") or not range_name.strip():
        return None, (
            f"NVTX filter left out: the range name {range_name!r} contains characters ncu's --nvtx-include syntax "
            "gives a meaning to (@ / [ ] \\)."
        )
    return f"{range_name}/", ""


@dataclass(frozen=True)
class DrilldownRequest:
    """A kernel launch to profile, as the timeline or the Kernels panel knows it.

    ``kernel_name`` is the name shown in the trace; ``raw_name`` the raw/mangled name used for the ncu filter (the
    same as ``kernel_name`` when the trace has no other); ``launch`` the number of earlier launches with the same
    filter name (the ``-s`` value); ``nvtx_range`` the innermost annotation range around the launch call (or
    None) and ``launch_in_range`` the skip count among launches inside ranges of that name; ``ranges`` every
    enclosing range (outermost first) with its skip count; ``nvtx_default`` whether the NVTX filter starts on;
    ``trace_path`` the trace file (key of the remembered target command); ``compiled`` marks torch.compile /
    CUDA-graph kernels; ``duration_ns`` the traced duration of this launch.
    """

    kernel_name: str
    raw_name: str
    launch: int = 0
    nvtx_range: str | None = None
    launch_in_range: int | None = None
    trace_path: str | None = None
    compiled: bool = False
    duration_ns: int = 0
    device: int = -1
    ranges: tuple[tuple[str, int], ...] = ()
    nvtx_default: bool = False

    def skip_in_range(self, name: str | None) -> int:
        """The ``-s`` value with an NVTX filter on range ``name`` (the plain launch count without one)."""
        if name is None:
            return self.launch
        if name == self.nvtx_range and self.launch_in_range is not None:
            return self.launch_in_range
        return dict(self.ranges).get(name, self.launch)

    @property
    def filter(self) -> tuple[str, str]:
        """``(kernel-name-base, name)`` ncu matches."""
        return kernel_filter(self.raw_name or self.kernel_name)


@dataclass(frozen=True)
class NcuCommand:
    """The exact command to run: ``argv`` (``argv[0]`` is ncu), where the report and the log will be written,
    the launch skip used, and notes about choices made (e.g. an NVTX filter left out)."""

    argv: tuple[str, ...]
    report_path: str
    log_path: str
    launch_skip: int
    kernel_base: str
    kernel_name: str
    nvtx_include: str | None = None
    notes: tuple[str, ...] = ()
    launch_count: int = 1

    def display(self) -> str:
        """The command as a shell would need it typed (for showing and copying only; it is never run this way).
        Arguments with control characters (a kernel name from a trace may hold any) are written as ``$'...'``
        escapes, so what is shown is exactly what runs and nothing in it acts on the terminal."""
        from gputop_trace.safe_text import shell_join

        return shell_join(self.argv)

    target_argv: tuple[str, ...] = ()

    @property
    def target(self) -> tuple[str, ...]:
        """The workload's command line (what follows ``--``)."""
        return self.target_argv


def build_ncu_command(
    raw_name: str,
    target: Sequence[str],
    *,
    launch_skip: int = 0,
    nvtx_range: str | None = None,
    section_set: str = "full",
    report_base: str,
    log_path: str,
    ncu: str = "ncu",
    clock_control: str | None = None,
    extra_args: Sequence[str] = (),
    separator: bool = True,
    launch_count: int = 1,
    kernel_regex: str | None = None,
) -> NcuCommand:
    """The ncu argument list that profiles ``launch_count`` launches from launch ``launch_skip`` on (0-based,
    counted among matching launches) of the kernel ``raw_name`` in ``target`` — or, with ``kernel_regex``, of every
    kernel whose function name matches that regular expression (a kernel family: ``-k regex:REGEX`` as given,
    ``raw_name`` unused). ``report_base`` is the report path without ``.ncu-rep``; ``separator`` puts ``--``
    between ncu's options and the target. Raises ValueError for an empty target, a negative skip, a launch count
    under 1, an invalid regex or an unknown set."""
    _check_options(target, launch_skip, section_set, clock_control, launch_count)
    base, name, pattern = _kernel_match(raw_name, kernel_regex)
    include, note = nvtx_filter(nvtx_range)
    argv = [
        ncu,
        "--config-file",
        "off",
        "--target-processes",
        "all",
        "--kernel-name-base",
        base,
        "-k",
        f"regex:{pattern}",
        "-s",
        str(int(launch_skip)),
        "-c",
        str(int(launch_count)),
        "--set",
        section_set,
        "-f",
        "-o",
        report_base,
        "--log-file",
        log_path,
    ]
    if include is not None:
        argv += ["--nvtx", "--nvtx-include", include]
    if clock_control is not None:
        argv += ["--clock-control", clock_control]
    argv += list(extra_args)
    argv += ["--"] if separator else []
    argv += [str(a) for a in target]
    report = report_base if report_base.endswith(".ncu-rep") else report_base + ".ncu-rep"
    return NcuCommand(
        argv=tuple(argv),
        report_path=report,
        log_path=log_path,
        launch_skip=int(launch_skip),
        kernel_base=base,
        kernel_name=name,
        nvtx_include=include,
        notes=(note,) if note else (),
        launch_count=int(launch_count),
        target_argv=tuple(str(a) for a in target),
    )


def _check_options(
    target: Sequence[str], launch_skip: int, section_set: str, clock_control: str | None, launch_count: int
) -> None:
    """ValueError for an empty target, a negative skip, an unknown set or clock control, a launch count under 1."""
    if not target or not str(target[0]).strip():
        raise ValueError("the target command is empty: give the command that reruns the workload")
    if launch_skip < 0:
        raise ValueError(f"the launch number must be 0 or more, not {launch_skip}")
    if section_set not in SECTION_SETS:
        raise ValueError(f"unknown ncu section set {section_set!r}; use one of {', '.join(SECTION_SETS)}")
    if clock_control not in (None, "base", "none"):
        raise ValueError(f"--clock-control must be base or none, not {clock_control!r}")
    if launch_count < 1:
        raise ValueError(f"the launch count must be 1 or more, not {launch_count}")


def _kernel_match(raw_name: str, kernel_regex: str | None) -> tuple[str, str, str]:
    """ncu's kernel name base, the name (or regex) and the ``-k regex:`` pattern that select the kernel
    ``raw_name``, or every kernel whose function name matches ``kernel_regex``; ValueError for an empty name or an
    empty or invalid regex."""
    if kernel_regex is not None:
        if not kernel_regex.strip():
            raise ValueError("the kernel regex is empty")
        try:
            re.compile(kernel_regex)
        except re.error as e:
            raise ValueError(f"the kernel regex {kernel_regex!r} is not valid: {e}") from None
        base, name, pattern = "function", kernel_regex, kernel_regex
    else:
        base, name = kernel_filter(raw_name)
        pattern = f"^{escape_ncu_regex(name)}$"
    if not name:
        raise ValueError("the kernel name is empty")
    return base, name, pattern


# ---- where things are kept -------------------------------------------------------------------------------------


def cache_root() -> str:
    """The user cache directory of gputop-trace: ``$GPUTOP_CACHE_DIR``, else ``$XDG_CACHE_HOME/gputop-trace``,
    else ``~/.cache/gputop-trace``."""
    explicit = os.environ.get("GPUTOP_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gputop-trace")


def trace_key(trace_path: str | None) -> str:
    """A short stable key for a trace path (its absolute path hashed); ``adhoc`` without a trace."""
    if not trace_path:
        return "adhoc"
    return hashlib.sha256(os.path.abspath(trace_path).encode("utf-8", "surrogateescape")).hexdigest()[:20]


def run_files(kernel_name: str, launch: int, trace_path: str | None, *, now: float | None = None) -> tuple[str, str]:
    """``(report base without .ncu-rep, log path)`` for a new profiling run, in the cache directory."""
    folder = os.path.join(cache_root(), "ncu", trace_key(trace_path))
    stamp = time.strftime("%Y%m%d-%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", function_name(kernel_name) or "kernel").strip("._")[:60] or "kernel"
    stem = f"{safe}-launch{launch}-{stamp}"
    return os.path.join(folder, stem), os.path.join(folder, stem + ".log")


@dataclass(frozen=True)
class TargetCommand:
    """How to rerun a trace's workload: the argument list and the working directory."""

    argv: tuple[str, ...]
    cwd: str

    def display(self) -> str:
        """The command as one line a user can edit (shell quoting, for display and editing only)."""
        return shlex.join(self.argv)


def split_command(text: str) -> list[str]:
    """A command line the user typed → an argument list (shell-style quoting; no shell runs it). Raises ValueError
    with a one-line explanation for unbalanced quotes or shell operators, which would reach the program as
    arguments."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise ValueError(f"cannot split the command: {e} (check the quotes)") from None
    if not argv:
        raise ValueError("the command is empty")
    ops = [a for a in argv if a in _SHELL_OPERATORS]
    if ops:
        raise ValueError(
            f"the command runs without a shell, so {ops[0]!r} would be passed to the program as an argument; "
            "if you need a pipe or redirection, wrap it: bash -c '...'"
        )
    return argv


def _target_file(trace_path: str) -> str:
    return os.path.join(cache_root(), "targets", trace_key(trace_path) + ".json")


def load_target(trace_path: str | None) -> TargetCommand | None:
    """The target command remembered for a trace, or None."""
    if not trace_path:
        return None
    try:
        with open(_target_file(trace_path), encoding="utf-8") as f:
            doc: Any = json.load(f)
    except (OSError, ValueError):
        return None
    argv = doc.get("argv") if isinstance(doc, dict) else None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    cwd = doc.get("cwd")
    return TargetCommand(tuple(argv), cwd if isinstance(cwd, str) and cwd else os.getcwd())


def save_target(trace_path: str | None, target: TargetCommand) -> str | None:
    """Remember the target command of a trace (atomically); returns the file written, or None without a trace."""
    if not trace_path:
        return None
    path = _target_file(trace_path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    doc = {"trace": os.path.abspath(trace_path), "argv": list(target.argv), "cwd": target.cwd, "saved": time.time()}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
    return path


# ---- from a trace event to a request ----------------------------------------------------------------------------


def _raw_name_of(trace: Trace, event: int) -> str:
    row = trace.kernel_row(event)
    if row >= 0 and len(trace.kernels):
        rn = int(trace.kernels.raw_name[row])
        if rn >= 0:
            return trace.names[rn]
    return trace.event_name(event)


def _filter_keys(trace: Trace, kernels: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Filter-name id per kernel event (equal ids ⇔ the same ncu filter name)."""
    import numpy as np

    raw_ids = trace.name[kernels].astype(np.int64)
    if len(trace.kernels):
        rows = np.searchsorted(trace.kernels.event, kernels)
        rows_c = np.minimum(rows, len(trace.kernels) - 1)
        has = (rows < len(trace.kernels)) & (trace.kernels.event[rows_c] == kernels)
        rn = np.where(has, trace.kernels.raw_name[rows_c], -1)
        raw_ids = np.where(rn >= 0, rn, raw_ids)
    uniq, inverse = np.unique(raw_ids, return_inverse=True)
    key_of: dict[tuple[str, str], int] = {}
    mapped = np.array(
        [key_of.setdefault(kernel_filter(trace.names[int(u)]), len(key_of)) for u in uniq.tolist()], dtype=np.int64
    )
    return mapped[np.asarray(inverse).reshape(-1)]


def _inside_named_range(trace: Trace, lanes: np.ndarray[Any, Any], times: np.ndarray[Any, Any], name: str) -> Any:
    """For each (lane, time): is it inside any annotation range called ``name`` on that lane?"""
    import numpy as np

    from gputop_trace.model.kinds import Kind

    out = np.zeros(len(lanes), dtype=bool)
    name_id = trace.name_ids.get(name)
    if name_id is None:
        return out
    ranges = np.flatnonzero((trace.kind == int(Kind.RANGE)) & (trace.name == name_id))
    for lane in distinct(trace.lane[ranges]).tolist():
        r = ranges[trace.lane[ranges] == lane]
        order = np.argsort(trace.start_ns[r], kind="stable")
        starts = trace.start_ns[r][order]
        ends = np.maximum.accumulate((trace.start_ns[r] + trace.dur_ns[r])[order])
        q = np.flatnonzero(lanes == lane)
        pos = np.searchsorted(starts, times[q], side="right") - 1
        ok = pos >= 0
        hit = np.zeros(len(q), dtype=bool)
        hit[ok] = ends[pos[ok]] > times[q][ok]
        out[q] = hit
    return out


def enclosing_ranges(trace: Trace, lane: int, time_ns: int) -> list[int]:
    """Annotation ranges (``Kind.RANGE``) on ``lane`` that contain ``time_ns``, outermost first."""
    import numpy as np

    from gputop_trace.model.kinds import Kind

    sl = trace.lane_slice(lane)
    kinds = trace.kind[sl]
    starts = trace.start_ns[sl]
    ends = starts + trace.dur_ns[sl]
    hit = np.flatnonzero((kinds == int(Kind.RANGE)) & (starts <= time_ns) & (ends > time_ns)) + sl.start
    order = np.lexsort((-trace.dur_ns[hit], trace.start_ns[hit]))
    return [int(i) for i in hit[order]]


def request_for_event(trace: Trace, event: int, trace_path: str | None = None) -> DrilldownRequest:
    """The drill-down request for one kernel event of a trace.

    - raw name: the kernel table's raw/mangled name when the parser kept one, else the event name;
    - launch: earlier launches (time order, same rank) with the same ncu filter name;
    - ranges: every annotation range around the launch call (``ProfilerStep#N`` left out: Kineto's own, never
      NVTX), each with the launch count among launches inside ranges of that name;
    - suggested range: the outermost one whose name occurs once in the trace (``step_3``: counting inside it does not
      depend on what ran before the trace started), else the innermost;
    - NVTX filter on by default only for nsys exports, whose ranges are NVTX; a Kineto ``record_function`` range is
      NVTX too only when made with :func:`gputop_trace.annotate` or ``torch.cuda.nvtx``, which the trace cannot tell.
    """
    import numpy as np

    from gputop_trace.analysis.roofline.verdict import is_compiled_kernel
    from gputop_trace.model.kinds import Kind

    if not 0 <= event < len(trace) or int(trace.kind[event]) != int(Kind.KERNEL):
        raise TraceError("Select a kernel (a GPU kernel event) to profile it with Nsight Compute.")
    kernels = trace.of_kind(Kind.KERNEL)
    rank = int(trace.event_rank[event])
    kernels = kernels[trace.event_rank[kernels] == rank]
    keys = _filter_keys(trace, kernels)
    mine = int(keys[int(np.searchsorted(kernels, event))])
    same = kernels[keys == mine]
    starts = trace.start_ns[same]
    s0 = int(trace.start_ns[event])
    before = (starts < s0) | ((starts == s0) & (same < event))
    launch = int(np.count_nonzero(before))
    api = int(trace.launch_of[event])
    ranges: list[tuple[str, int]] = []
    suggested: str | None = None
    if api >= 0:
        names = [trace.event_name(e) for e in enclosing_ranges(trace, int(trace.lane[api]), int(trace.start_ns[api]))]
        names = [n for n in names if not PROFILER_STEP.match(n)]
        apis = trace.launch_of[same]
        known = apis >= 0
        for n in dict.fromkeys(names):
            inside = np.zeros(len(same), dtype=bool)
            inside[known] = _inside_named_range(
                trace, trace.lane[apis[known]].astype(np.int64), trace.start_ns[apis[known]], n
            )
            ranges.append((n, int(np.count_nonzero(before & inside))))
        if names:
            counts = _range_name_counts(trace, names, rank)
            unique = [n for n in names if counts.get(n, 0) == 1 and nvtx_filter(n)[0] is not None]
            usable = [n for n in names if nvtx_filter(n)[0] is not None]
            suggested = unique[0] if unique else (usable[-1] if usable else None)
    raw = _raw_name_of(trace, event)
    row = trace.kernel_row(event)
    graph = row >= 0 and len(trace.kernels) and int(trace.kernels.graph_id[row]) >= 0
    name = trace.event_name(event)
    in_range = dict(ranges).get(suggested) if suggested else None
    return DrilldownRequest(
        kernel_name=name,
        raw_name=raw,
        launch=launch,
        nvtx_range=suggested,
        launch_in_range=in_range,
        trace_path=trace_path,
        compiled=bool(graph) or is_compiled_kernel(name),
        duration_ns=int(trace.dur_ns[event]),
        device=int(trace.event_device[event]),
        ranges=tuple(ranges),
        nvtx_default=trace.meta.format == "nsys" and suggested is not None,
    )


def _range_name_counts(trace: Trace, names: Sequence[str], rank: int) -> dict[str, int]:
    import numpy as np

    from gputop_trace.model.kinds import Kind

    out: dict[str, int] = {}
    is_range = (trace.kind == int(Kind.RANGE)) & (trace.event_rank == rank)
    for n in names:
        nid = trace.name_ids.get(n)
        out[n] = int(np.count_nonzero(is_range & (trace.name == nid))) if nid is not None else 0
    return out


def command_for_request(
    request: DrilldownRequest,
    target: Sequence[str],
    *,
    use_nvtx: bool = True,
    section_set: str = "full",
    ncu: str = "ncu",
    clock_control: str | None = None,
    launch_skip: int | None = None,
    nvtx_range: str | None = None,
    now: float | None = None,
) -> NcuCommand:
    """The ncu command for a request: with ``use_nvtx``, an NVTX filter on ``nvtx_range`` (default: the request's
    suggested range), the skip count that goes with it (or ``launch_skip`` when given); report and log files in
    the cache directory."""
    rng = (nvtx_range if nvtx_range is not None else request.nvtx_range) if use_nvtx else None
    include, _ = nvtx_filter(rng)
    if launch_skip is None:
        launch_skip = request.skip_in_range(rng if include is not None else None)
    report_base, log_path = run_files(request.raw_name or request.kernel_name, launch_skip, request.trace_path, now=now)
    return build_ncu_command(
        request.raw_name or request.kernel_name,
        target,
        launch_skip=launch_skip,
        nvtx_range=rng,
        section_set=section_set,
        report_base=report_base,
        log_path=log_path,
        ncu=ncu,
        clock_control=clock_control,
    )

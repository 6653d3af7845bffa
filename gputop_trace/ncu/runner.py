"""Run ncu asynchronously and turn what went wrong into guidance a user can act on.

:class:`NcuRunner` starts the command with ``asyncio.create_subprocess_exec`` (an argument list, never a shell) in
a new session, so it and the workload it launches form their own process group: cancel and timeout kill the whole
group (SIGTERM, then SIGKILL after a grace period). While it runs, every line is handed to a callback as
``(source, line)``: ``"ncu"`` for ncu's own log (the ``--log-file``, followed as it grows) and ``"app"`` for the
workload's stdout/stderr. The result carries the exit code, the log, the tail of the program's output, the report
path when one was written, and — when the run failed — a :class:`Guidance`: what happened and what to do,
classified from ncu's messages (:func:`classify_run`), since ncu exits 0 for "No kernels were profiled".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gputop_trace.ncu.drilldown import NcuCommand
from gputop_trace.numpy_env import user_env

#: ``on_line(source, line)``: source is ``"ncu"`` (its log) or ``"app"`` (the workload's output).
LineCallback = Callable[[str, str], None]

DEFAULT_TIMEOUT_S = 1800.0
KILL_GRACE_S = 3.0
TAIL_LINES = 40
MAX_LOG_LINES = 20_000

INSTALL_HELP = (
    "Nsight Compute ships with the CUDA toolkit (/usr/local/cuda/bin/ncu) and as a standalone package: "
    "'apt install nsight-compute-2025.3.1' (or the newest nsight-compute-* in NVIDIA's CUDA apt repository), or the "
    "installer from https://developer.nvidia.com/nsight-compute. Put its folder on PATH, or point GPUTOP_NCU at the "
    "ncu executable. Reading an existing .ncu-rep needs no GPU: 'pip install ncu-report'."
)


@dataclass(frozen=True)
class Guidance:
    """Why a profiling run gave no result, in words a user can act on.

    ``kind``: ``not_installed``, ``permission``, ``no_kernels``, ``unsupported_gpu``, ``counters_busy``,
    ``report_exists``, ``target_not_found``, ``target_failed``, ``timeout``, ``cancelled``,
    ``driver_incompatible``, ``no_report`` or ``failed``. ``text`` is one paragraph; ``details`` are supporting
    lines (ncu's error lines, the program's last output lines); ``available_kernels`` what ncu listed when no
    kernel matched; ``exit_code`` the workload's or ncu's exit code when known.
    """

    kind: str
    title: str
    text: str
    details: tuple[str, ...] = ()
    available_kernels: tuple[str, ...] = ()
    exit_code: int | None = None


@dataclass(frozen=True)
class NcuRunResult:
    """What a run produced. ``report_path`` is set when the report file exists; ``failure`` when there is nothing to
    show (a run can have a report *and* warnings, e.g. the program failed after the kernel was profiled)."""

    command: NcuCommand
    returncode: int | None
    elapsed_s: float
    log_lines: tuple[str, ...]
    output_tail: tuple[str, ...]
    report_path: str | None
    failure: Guidance | None
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """A report to open."""
        return self.failure is None and self.report_path is not None


def not_installed() -> Guidance:
    """The guidance when ncu cannot be found."""
    return Guidance("not_installed", "Nsight Compute (ncu) is not installed", f"ncu was not found. {INSTALL_HELP}")


_AVAILABLE = re.compile(r"^\s*\d+\.\s+(.+?)\s*$")


def available_kernels(log: Sequence[str]) -> list[str]:
    """The kernel names ncu lists after "No kernels were profiled" ("Available Kernels:" then "1. name")."""
    out: list[str] = []
    active = False
    for line in log:
        if line.strip().startswith("Available Kernels:"):
            active = True
            continue
        if active:
            m = _AVAILABLE.match(line)
            if not m:
                if line.strip():
                    active = False
                continue
            out.append(m.group(1))
    return out


def _errors(lines: Sequence[str]) -> list[str]:
    return [ln.strip() for ln in lines if ln.startswith("==ERROR==")]


def classify_run(
    log: Sequence[str],
    output: Sequence[str],
    returncode: int | None,
    *,
    report_exists: bool,
    timed_out: bool = False,
    cancelled: bool = False,
    timeout_s: float | None = None,
    used_nvtx: bool = False,
) -> tuple[Guidance | None, list[str]]:
    """``(failure or None, warnings)`` for a finished run, from ncu's log, the program's output and exit code.

    ncu's messages decide, not only its exit code (it exits 0 when no kernel matched). A failing program after a
    profiled kernel still gives a report: that is a warning, not a failure. The checks, in order: the run was
    stopped (:func:`_stopped`), the machine refused (:func:`_system_failure`), the command was wrong
    (:func:`_command_failure`), then what the run produced (:func:`_missing_result`)."""
    text_lines = [*log, *output]
    blob = "\n".join(text_lines)
    errors = tuple(_errors(text_lines))
    tail = tuple(ln for ln in output if ln.strip())[-TAIL_LINES:]
    warnings: list[str] = []
    if "Running with unmodified GPU clocks" in blob:
        warnings.append(
            "ncu ran with unlocked GPU clocks (--clock-control none): numbers follow the boost clock and vary more "
            "from run to run."
        )
    failure = (
        _stopped(cancelled, timed_out, timeout_s, tail)
        or _system_failure(blob, errors)
        or _command_failure(blob, errors)
    )
    if failure is not None:
        return failure, warnings
    m = re.search(r"The application returned an error code \((-?\d+)\)", blob)
    app_code = int(m.group(1)) if m else None
    no_kernels = "No kernels were profiled" in blob
    if report_exists and not no_kernels:
        if app_code is not None:
            warnings.append(
                f"The workload exited with code {app_code} after the kernel was profiled; the report is complete."
            )
        return None, warnings
    return _missing_result(
        log,
        text_lines,
        tail,
        errors,
        returncode,
        app_code=app_code,
        no_kernels=no_kernels,
        report_exists=report_exists,
        used_nvtx=used_nvtx,
    ), warnings


def _stopped(cancelled: bool, timed_out: bool, timeout_s: float | None, tail: tuple[str, ...]) -> Guidance | None:
    """The run was cancelled or ran out of time."""
    if cancelled:
        return Guidance("cancelled", "Profiling cancelled", "The run was cancelled; ncu and the workload were stopped.")
    if timed_out:
        limit = f" ({timeout_s:.0f} s)" if timeout_s else ""
        return Guidance(
            "timeout",
            "ncu ran out of time",
            f"ncu did not finish within the time limit{limit} and was stopped with the workload. With --set full "
            "ncu replays the kernel dozens of times; try --set detailed or basic, a shorter workload (fewer "
            "steps), or a longer timeout. Collective kernels (NCCL) can hang under replay: profile a "
            "single-GPU run.",
            details=tail,
        )
    return None


def _system_failure(blob: str, errors: tuple[str, ...]) -> Guidance | None:
    """The machine would not let ncu profile: counter permission, GPU support, counters in use, driver mismatch."""
    if "ERR_NVGPUCTRPERM" in blob:
        return Guidance(
            "permission",
            "No permission to read GPU performance counters (ERR_NVGPUCTRPERM)",
            "The driver lets only administrators read the GPU performance counters. On bare metal: run ncu as "
            "root (sudo, keeping your environment: sudo -E env PATH=$PATH ...), or allow all users once as "
            "root with 'echo options nvidia NVreg_RestrictProfilingToAdminUsers=0 > "
            "/etc/modprobe.d/nvidia-profiling.conf', then rebuild the initramfs (update-initramfs -u or dracut "
            "-f) and reboot. In a container the host decides: start it with --cap-add=SYS_ADMIN (Kubernetes: "
            "securityContext.capabilities.add: [SYS_ADMIN]) on a host that allows profiling. Details: "
            "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
            details=errors,
        )
    if re.search(
        r"Profiling is not supported on (this )?device|is not supported by (this version of )?Nsight Compute", blob
    ):
        return Guidance(
            "unsupported_gpu",
            "This GPU is not supported by this ncu",
            "This version of Nsight Compute cannot profile this GPU. Nsight Compute 2025 supports Turing and "
            "newer (compute capability 7.5+); Maxwell, Pascal and Volta need an older Nsight Compute (2024.x "
            "or earlier supports Volta). 'ncu --list-chips' lists what this ncu supports. Under WSL2, profiling "
            "needs Windows 11 and a recent driver.",
            details=errors,
        )
    if "driver resource was unavailable" in blob or "ERR_NVGPUCTRBUSY" in blob:
        return Guidance(
            "counters_busy",
            "The GPU's performance counters are in use by another tool",
            "Another profiler holds the counters: usually DCGM (dcgm-exporter, nv-hostengine), or another "
            "ncu / nsys --gpu-metrics run. The lock is system-wide, whatever GPU you chose. Pause DCGM's "
            "profiling while you profile: 'dcgmi profile --pause' (and '--resume' after), or ask the admin to "
            "stop nvidia-dcgm / the dcgm-exporter pod on this node; then rerun.",
            details=errors,
        )
    if "not compatible with Nsight Compute" in blob:
        return Guidance(
            "driver_incompatible",
            "The CUDA driver and this ncu do not match",
            "This Nsight Compute is too new or too old for the installed driver. Use the ncu that came with the "
            "CUDA toolkit matching the driver (nvidia-smi shows the driver's CUDA version), or update the "
            "driver.",
            details=errors,
        )
    return None


def _command_failure(blob: str, errors: tuple[str, ...]) -> Guidance | None:
    """The command was wrong: the report exists, this ncu refuses ``--``, or the program was not found."""
    if "already exists. Use '-f'" in blob:
        return Guidance(
            "report_exists",
            "The report file already exists",
            "ncu refused to overwrite an existing report. gputop-trace passes -f; if you edited the command, "
            "add -f back or choose another output name.",
            details=errors,
        )
    m = re.search(r"==ERROR== '(.*)' does not exist or is not an executable", blob)
    if m and m.group(1) == "--":
        return Guidance(
            "failed",
            "This ncu does not accept '--' before the program",
            "This version of ncu took '--' for the program to run. Build the command without the separator "
            "(gputop_trace.ncu.drilldown.build_ncu_command(..., separator=False)) or update Nsight Compute.",
            details=errors,
        )
    if m:
        return Guidance(
            "target_not_found",
            "The workload's program was not found",
            f"ncu could not start {m.group(1)!r}: it does not exist or is not executable. Fix the target "
            "command: give the program's absolute path (or run from the directory it expects), e.g. "
            "'python3 train.py' or '/path/to/app'.",
            details=errors,
        )
    return None


def _missing_result(
    log: Sequence[str],
    text_lines: Sequence[str],
    tail: tuple[str, ...],
    errors: tuple[str, ...],
    returncode: int | None,
    *,
    app_code: int | None,
    no_kernels: bool,
    report_exists: bool,
    used_nvtx: bool,
) -> Guidance | None:
    """Why a run that was not stopped and not refused gave no report to show (None: it did)."""
    if app_code is not None:
        return Guidance(
            "target_failed",
            f"The workload failed (exit code {app_code})",
            f"The target command exited with code {app_code} before the kernel was profiled. Its last output "
            "lines are below. Check that it runs on its own (same directory, same environment), then rerun.",
            details=tail,
            exit_code=app_code,
        )
    if no_kernels:
        names = available_kernels(text_lines)
        hint = (
            " The NVTX filter may be why: a torch.profiler record_function range is an NVTX range only when made with "
            "gputop_trace.annotate or torch.cuda.nvtx — try again without the NVTX filter."
            if used_nvtx
            else ""
        )
        listed = " ncu saw these kernels; pick one to profile instead." if names else ""
        return Guidance(
            "no_kernels",
            "No kernel matched",
            "ncu ran the workload but no launch matched the kernel filter: the name differs in this run, the "
            "launch number is higher than the launches it made, or the workload stopped early." + hint + listed,
            details=tail,
            available_kernels=tuple(names),
        )
    if errors:
        return Guidance(
            "failed",
            "ncu reported an error",
            " ".join(e.removeprefix("==ERROR==").strip() for e in errors),
            details=tail,
        )
    if returncode not in (0, None):
        return Guidance(
            "failed",
            f"ncu exited with code {returncode}",
            f"ncu stopped with exit code {returncode} and wrote no report. Its last lines are below.",
            details=tail or tuple(log[-TAIL_LINES:]),
            exit_code=returncode,
        )
    if not report_exists:
        return Guidance(
            "no_report",
            "ncu wrote no report",
            "ncu finished without an error message but the report file is missing. Check its log below.",
            details=tuple(log[-TAIL_LINES:]),
        )
    return None


@dataclass
class _State:
    log: list[str] = field(default_factory=list)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    log_pos: int = 0
    log_partial: str = ""


class NcuRunner:
    """One ncu run. ``await runner.run()`` returns an :class:`NcuRunResult`; ``runner.cancel()`` (from any thread)
    stops it. ``timeout_s`` is wall-clock seconds; ``on_line(source, line)`` receives the log and output lines as
    they appear (on the event loop's thread)."""

    def __init__(
        self,
        command: NcuCommand,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_line: LineCallback | None = None,
        poll_s: float = 0.1,
    ) -> None:
        self.command = command
        self.cwd = cwd
        self.env = dict(env) if env is not None else user_env()  # (the user's, without our BLAS setting)
        self.timeout_s = timeout_s
        self.on_line = on_line
        self.poll_s = poll_s
        self.started_at: float | None = None
        self.pid: int | None = None
        self._cancel: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel_requested = False

    @property
    def elapsed_s(self) -> float:
        """Seconds since the run started (0 before)."""
        return time.monotonic() - self.started_at if self.started_at is not None else 0.0

    def cancel(self) -> None:
        """Stop the run (ncu and the workload); safe to call from any thread, before or during the run."""
        self._cancel_requested = True
        loop, event = self._loop, self._cancel
        if loop is None or event is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            event.set()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    def _emit(self, source: str, line: str) -> None:
        if self.on_line is not None:
            self.on_line(source, line)

    def _read_log(self, st: _State) -> None:
        try:
            with open(self.command.log_path, "rb") as f:
                f.seek(st.log_pos)
                chunk = f.read()
        except OSError:
            return
        if not chunk:
            return
        st.log_pos += len(chunk)
        text = st.log_partial + chunk.decode("utf-8", "replace")
        lines = text.split("\n")
        st.log_partial = lines.pop()
        for ln in lines:
            ln = ln.rstrip("\r")
            if len(st.log) < MAX_LOG_LINES:
                st.log.append(ln)
            self._emit("ncu", ln)

    async def _follow_log(self, st: _State, done: asyncio.Event) -> None:
        while not done.is_set():
            self._read_log(st)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(done.wait(), self.poll_s)
        self._read_log(st)
        if st.log_partial:
            st.log.append(st.log_partial)
            self._emit("ncu", st.log_partial)
            st.log_partial = ""

    async def _read_output(self, stream: asyncio.StreamReader, st: _State) -> None:
        while True:
            raw = await stream.readline()
            if not raw:
                return
            ln = raw.decode("utf-8", "replace").rstrip("\r\n")
            st.tail.append(ln)
            self._emit("app", ln)

    def _kill_group(self, sig: int) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def run(self) -> NcuRunResult:
        """Run ncu to the end (or until cancelled / timed out) and classify the outcome."""
        self._loop = asyncio.get_running_loop()
        self._cancel = asyncio.Event()
        if self._cancel_requested:
            self._cancel.set()
        cmd = self.command
        st = _State()
        for p in (cmd.report_path, cmd.log_path):
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
        with contextlib.suppress(OSError):
            os.remove(cmd.log_path)
        self.started_at = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except FileNotFoundError:
            return self._result(None, st, not_installed(), [])
        except OSError as e:
            g = Guidance("failed", "ncu could not be started", f"Starting {cmd.argv[0]} failed: {e.strerror or e}.")
            return self._result(None, st, g, [])
        self.pid = proc.pid
        done = asyncio.Event()
        assert proc.stdout is not None
        reader = asyncio.ensure_future(self._read_output(proc.stdout, st))
        follower = asyncio.ensure_future(self._follow_log(st, done))
        waiter = asyncio.ensure_future(proc.wait())
        canceller = asyncio.ensure_future(self._cancel.wait())
        timed_out = cancelled = False
        try:
            finished, _ = await asyncio.wait(
                {waiter, canceller}, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if waiter not in finished:
                cancelled = canceller in finished
                timed_out = not cancelled
                await self._stop(waiter)
        except asyncio.CancelledError:
            await asyncio.shield(self._stop(waiter))
            raise
        finally:
            canceller.cancel()
            if not waiter.done():
                self._kill_group(signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(reader), 5.0)
            done.set()
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(follower), 5.0)
            # the workload may have left children in the group (a DataLoader worker ...): they go too
            self._kill_group(signal.SIGKILL)
        rc = proc.returncode
        report_exists = os.path.isfile(cmd.report_path)
        failure, warnings = classify_run(
            st.log,
            list(st.tail),
            rc,
            report_exists=report_exists,
            timed_out=timed_out,
            cancelled=cancelled,
            timeout_s=self.timeout_s,
            used_nvtx=cmd.nvtx_include is not None,
        )
        return self._result(rc, st, failure, warnings)

    async def _stop(self, waiter: asyncio.Future[int]) -> None:
        self._kill_group(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), KILL_GRACE_S)
        except asyncio.TimeoutError:
            self._kill_group(signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(waiter), KILL_GRACE_S)

    def _result(self, rc: int | None, st: _State, failure: Guidance | None, warnings: list[str]) -> NcuRunResult:
        report = self.command.report_path if os.path.isfile(self.command.report_path) else None
        return NcuRunResult(
            command=self.command,
            returncode=rc,
            elapsed_s=self.elapsed_s,
            log_lines=tuple(st.log),
            output_tail=tuple(st.tail)[-TAIL_LINES:],
            report_path=report,
            failure=failure,
            warnings=tuple(warnings),
        )

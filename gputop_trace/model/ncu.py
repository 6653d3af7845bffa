"""Nsight Compute records: what one report holds (kernels, their metrics and ncu's rule messages).

Plain frozen dataclasses, numpy-free, filled by :mod:`gputop_trace.parsers.ncu` and read by the analyses
(:mod:`gputop_trace.analysis.roofline.verdict`). Units of :attr:`NcuKernel.metrics`: ncu's base units — time in
ns, sizes in bytes, rates per second, clocks in Hz, percentages 0–100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NcuRule:
    """One message of one of ncu's rules (a row of the "Rule" part of the details page).

    ``identifier`` is ncu's rule id (``SOLBottleneck``), ``type`` ``OPT`` (optimisation), ``INF`` (information),
    ``WRN`` or ``ERR``; ``speedup_pct`` ncu's estimated speedup in percent, ``speedup_type`` ``local`` or ``global``.
    """

    identifier: str
    name: str
    section: str
    type: str
    title: str
    text: str
    speedup_pct: float | None = None
    speedup_type: str | None = None


@dataclass(frozen=True)
class NcuSourceLine:
    """One line of a kernel's source page (``ncu -i REPORT --page source --print-source sass``): its ``address``
    (SASS) or line number, the text, and the warp-stall ``samples`` (all, and not-issued) and warp-level
    ``instructions`` executed there."""

    address: str
    source: str
    samples: float = 0.0
    not_issued_samples: float = 0.0
    instructions: float = 0.0


@dataclass(frozen=True)
class NcuKernel:
    """One profiled kernel launch.

    ``index`` is its position in the report (ncu's ``ID``); ``name`` the function name (what
    ``--kernel-name-base function`` matches), ``demangled``/``mangled`` the full names when the reader knows them.
    ``metrics`` are numbers in ncu's base units (see the module docstring), ``strings`` the text-valued metrics
    (device name, cache configuration ...). ``nvtx`` lists the NVTX push/pop ranges open at the launch
    (outermost first). ``grid``/``block`` are the launch geometry when known; ``source`` the lines of its source
    page when the report was read with one.
    """

    index: int
    name: str
    demangled: str = ""
    mangled: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)
    strings: Mapping[str, str] = field(default_factory=dict)
    rules: tuple[NcuRule, ...] = ()
    nvtx: tuple[str, ...] = ()
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    source: tuple[NcuSourceLine, ...] = ()

    def metric(self, name: str) -> float | None:
        """A metric's value in base units, or None when the report does not hold it."""
        return self.metrics.get(name)

    @property
    def device_name(self) -> str:
        """The GPU's marketing name (``NVIDIA H200``), or ``""``."""
        return self.strings.get("device__attribute_display_name", "")

    @property
    def duration_ns(self) -> float | None:
        """GPU time of the launch (ns)."""
        return self.metrics.get("gpu__time_duration.sum")


@dataclass(frozen=True)
class NcuReport:
    """Everything read from one report. ``reader`` says how: ``ncu_report`` (the Python package) or ``ncu-csv``
    (``ncu -i ... --csv``) or ``csv`` (CSV text given directly)."""

    path: str
    kernels: tuple[NcuKernel, ...]
    reader: str
    warnings: tuple[str, ...] = ()

"""The first screen's answer to "where did the time go": the GPUs' busy/idle split, the step time and the top
findings (time at stake first), shown in the details pane until something is selected. Textual-free."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from gputop_trace.analysis.busy import DeviceBusy
from gputop_trace.analysis.profiler_ranges import RANGE_PROFILER_TITLE
from gputop_trace.report.summary import RankSteps
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.analysis_views import FindingItem
from gputop_trace.units import format_ns, format_range, plural

TOP_FINDINGS = 5


@dataclass(frozen=True)
class Overview:
    """What the overview needs: per-GPU busy summaries, per-rank step statistics (``report.summary.rank_steps``,
    times in ns) and the findings in the analysis's order."""

    busy: list[DeviceBusy]
    steps: list[RankSteps]
    findings: list[FindingItem]


def busy_line(busy: list[DeviceBusy], multi_rank: bool) -> Text:
    """``GPU 0 busy 68% · idle 32% of its 109 ms active span``; several GPUs: the range of busy shares
    (``2 GPUs busy 99%`` when both ends round alike)."""
    if not busy:
        return Text("No GPU work in this trace.")
    if len(busy) == 1:
        d = busy[0]
        label = d.label or f"GPU {d.device}"
        who = f"rank {d.rank} {label}" if multi_rank else label
        line = Text(f"{who} busy ")
        line.append(f"{d.busy_pct:.0f}%", style="bold")
        line.append(f" · idle {100 - d.busy_pct:.0f}% ({format_ns(d.idle_ns)}) of its {format_ns(d.span_ns)} span")
        return line
    pcts = [d.busy_pct for d in busy]
    idle = sum(d.idle_ns for d in busy)
    nouns = {(d.label or "GPU").rsplit(" ", 1)[0] for d in busy}
    line = Text(f"{len(busy)} {nouns.pop() if len(nouns) == 1 else 'device'}s busy ")
    lo, hi = f"{min(pcts):.0f}", f"{max(pcts):.0f}"
    line.append(format_range(lo, hi, unit="%"), style="bold")
    if lo != hi:  # when the ends read alike, so does the mean: said once is enough
        line.append(f" (mean {sum(pcts) / len(pcts):.0f}%)")
    line.append(f" · idle {format_ns(idle)} in all")
    return line


def step_line(steps: list[RankSteps]) -> Text | None:
    """``step time 12.3 ms mean over 5 steps (min …, max …)``; ranks beyond the first are summarised."""
    if not steps:
        return None
    s = steps[0]
    who = f"rank {s.rank} " if len(steps) > 1 else ""
    line = Text(f"{who}step time ")
    line.append(format_ns(s.mean_ns), style="bold")
    line.append(f" mean over {plural(s.count, 'step')}")
    if s.count > 1:
        line.append(f" (min {format_ns(s.min_ns)}, max {format_ns(s.max_ns)})")
    cut = sum(len(x.cut) for x in steps)
    if cut:
        line.append(f" ({plural(cut, 'step')} cut to the recording)", style="yellow")
    if len(steps) > 1:
        means = [x.mean_ns for x in steps]
        line.append(f"; {len(steps)} ranks {format_range(format_ns(min(means)), format_ns(max(means)))}")
    return line


def overview_text(view: Overview, *, multi_rank: bool, width: int = 0, limit: int = TOP_FINDINGS) -> Text:
    """The busy split and step time, then one line per top finding (``1. 95.2 ms  title``, cut with … to
    ``width`` columns when ``width`` > 0) with a click action that jumps to its evidence
    (``screen.open_finding(i)``), then how to see them all."""
    text = Text("Where the time went: ", style="bold")
    profiled = next((f for f in view.findings if f.title.startswith(RANGE_PROFILER_TITLE)), None)
    if not view.busy and profiled is not None:  # no activity to time: say what the trace holds instead
        text.append(clean(profiled.detail))
    else:
        text.append_text(busy_line(view.busy, multi_rank))
    steps = step_line(view.steps)
    if steps is not None:
        text.append(" · ")
        text.append_text(steps)
    found = [f for f in view.findings if f.priority > 0]
    if not found:
        text.append("\nNo findings: nothing stands out.", style="dim")
        return text
    for i, f in enumerate(found[:limit]):
        row = Text(f"{i + 1}. ")
        row.append(f"{format_ns(f.time_ns):>9}" if f.time_ns else " " * 9, style="bold")
        row.append("  ")
        row.append(clean(f.title))
        if width > 0:
            row.truncate(width, overflow="ellipsis")
        row.stylize(Style.on(click=f"screen.open_finding({i})"))
        text.append("\n")
        text.append_text(row)
    more = f" (all {len(found)})" if len(found) > limit else ""
    text.append(f"\n6 lists the findings{more}; Enter there, or a click here, shows the evidence.", style="dim")
    return text

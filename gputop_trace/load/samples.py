"""The sample traces bundled with the package (recorded on a real GPU by sample_traces/make_samples.py)."""

from __future__ import annotations

from importlib import resources

from gputop_trace.errors import TraceError

DEFAULT_SAMPLE = "h200_train_step.json.gz"


def sample_path(name: str) -> str:
    """Filesystem path of a bundled sample trace."""
    ref = resources.files("gputop_trace.sample_traces").joinpath(name)
    if not ref.is_file():
        raise TraceError(f"The bundled sample {name} is missing from this installation; reinstall gputop-trace.")
    return str(ref)


def default_sample() -> str:
    """The sample that ``view`` and ``summary`` open when no PATH is given."""
    return sample_path(DEFAULT_SAMPLE)

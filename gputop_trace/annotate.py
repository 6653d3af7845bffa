"""One annotation, visible to every profiler: ``with annotate("step_3"):`` / ``@annotate("forward")``.

It opens an NVTX push/pop range (through the ``nvtx`` package: seen by Nsight Systems and by Nsight Compute's
``--nvtx --nvtx-include "step_3/"``) and, when PyTorch is in use, a ``torch.profiler.record_function`` of the same
name (seen in Kineto traces as a ``user_annotation`` range). So the range a user selects in a Kineto trace in
gputop-trace is the same NVTX range ncu can filter on — the drill-down counts launches inside it.

PyTorch is used only when the program has already imported it (``"torch" in sys.modules``): a torch.profiler
session needs torch imported anyway, and a program without torch does not pay seconds of import time. Without the
``nvtx`` package the NVTX range comes from ``torch.cuda.nvtx`` (default domain) when torch is loaded, else it is
skipped. With no profiler attached a range costs about 1–2 µs (a third of it the
nvtx package itself). Ranges are per thread (NVTX push/pop semantics); nesting works, and a decorated function may
recurse or run on several threads at once.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])

_NVTX: dict[str, Any] = {}


def _nvtx() -> Any:
    """The ``nvtx`` module (imported on first use), or None when it is not installed."""
    if "module" not in _NVTX:
        try:
            import nvtx

            _NVTX["module"] = nvtx
        except Exception:
            _NVTX["module"] = None
    return _NVTX["module"]


class _Range:
    """A context manager for one named range; re-entrant and thread-safe (a stack per thread)."""

    def __init__(self, name: str, color: str | None = None, domain: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("annotate() needs a non-empty range name")
        self.name = name
        self.color = color
        self.domain = domain
        self._local = threading.local()

    def _stack(self) -> list[tuple[str, Any]]:
        stack: list[tuple[str, Any]] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = []
            self._local.stack = stack
        return stack

    def __enter__(self) -> _Range:
        nv = _nvtx()
        torch = sys.modules.get("torch")
        pushed: str = ""
        if nv is not None:
            try:
                nv.push_range(message=self.name, color=self.color, domain=self.domain)
                pushed = "nvtx"
            except Exception:
                pushed = ""
        elif torch is not None and self.domain is None:
            try:  # no nvtx package: PyTorch's own NVTX binding (default domain only)
                torch.cuda.nvtx.range_push(self.name)
                pushed = "torch"
            except Exception:
                pushed = ""
        rf = None
        if torch is not None:
            try:
                rf = torch.profiler.record_function(self.name)
                rf.__enter__()
            except Exception:
                rf = None
        self._stack().append((pushed, rf))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack = self._stack()
        if not stack:
            return
        pushed, rf = stack.pop()
        if rf is not None:
            try:
                rf.__exit__(exc_type, exc, tb)
            except Exception:
                pass
        try:
            if pushed == "nvtx":
                _nvtx().pop_range(domain=self.domain)
            elif pushed == "torch":
                sys.modules["torch"].cuda.nvtx.range_pop()
        except Exception:
            pass

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


@overload
def annotate(name: str, *, color: str | None = None, domain: str | None = None) -> _Range: ...
@overload
def annotate(name: F) -> F: ...


def annotate(name: Any, *, color: str | None = None, domain: str | None = None) -> Any:
    """A named range for every profiler: NVTX (nsys, ncu ``--nvtx-include "name/"``) plus, when torch is imported,
    ``torch.profiler.record_function`` (Kineto).

    Use it as a context manager (``with annotate("step_3"):``), a decorator with a name (``@annotate("fwd")``) or a
    bare decorator (``@annotate``: the function's qualified name). ``domain`` puts the NVTX range in a domain
    (then ncu needs ``--nvtx-include "domain@name/"``); ``color`` is an NVTX colour name.
    """
    if callable(name) and not isinstance(name, str):
        return _Range(getattr(name, "__qualname__", getattr(name, "__name__", "function")))(name)
    return _Range(name, color=color, domain=domain)

"""Accelerator kinds and the words a device is called by.

Every device lane of a :class:`~gputop_trace.model.trace.Trace` carries the kind of accelerator it belongs to
(:attr:`~gputop_trace.model.tables.Lane.accelerator`): a CUDA GPU, a ROCm (HIP) GPU, a Meta MTIA, an Intel XPU, a
Habana HPU, or another accelerator. The parsers decide it from what the producer wrote (Kineto categories,
``deviceProperties``, the runtime calls' names, the device process' name); every analysis and view then calls a
device by its own name (``GPU 0``, ``MTIA 9``, ``device 3``) and gives advice only where it applies (CUDA graphs
and ``cudaMallocHost`` on CUDA, HIP graphs and ``hipHostMalloc`` on ROCm, nothing vendor-specific elsewhere).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: An NVIDIA GPU driven through CUDA (the default: a device lane whose producer wrote nothing else)
CUDA = "cuda"
#: An AMD GPU driven through ROCm/HIP (Kineto writes the CUDA categories, with ``hip*`` call names)
ROCM = "rocm"
#: A Meta MTIA accelerator (Kineto ``mtia_*`` categories, device process ``MTIA <n>``)
MTIA = "mtia"
#: An Intel GPU through SYCL/Level Zero (Kineto ``xpu_*`` categories)
XPU = "xpu"
#: A Habana Gaudi (Kineto ``hpu_*`` categories)
HPU = "hpu"
#: Any other accelerator (PrivateUse1 backends, Glow, ...)
OTHER = "other"

ACCELERATORS: tuple[str, ...] = (CUDA, ROCM, MTIA, XPU, HPU, OTHER)

#: Name of the lane that holds CUPTI range-profiler ranges (one per profiled kernel, Kineto category
#: ``cuda_profiler_range``), and the prefix of the counter series that hold each range's hardware counters
#: (one sample per range, at the range's start): see :mod:`gputop_trace.analysis.profiler_ranges`.
PROFILER_LANE = "CUPTI range profiler"
PROFILER_SERIES = "cupti_range:"

_NOUN = {CUDA: "GPU", ROCM: "GPU", MTIA: "MTIA", XPU: "XPU", HPU: "HPU", OTHER: "device"}
_RUNTIME = {CUDA: "CUDA", ROCM: "HIP"}
_COLLECTIVES = {CUDA: "NCCL", ROCM: "RCCL"}
_GPU_WORD = re.compile(r"\bGPU(s?)\b")


@dataclass(frozen=True)
class DeviceWords:
    """How text names one kind of accelerator and which vendor-specific advice applies to it."""

    accelerator: str = CUDA

    @property
    def noun(self) -> str:
        """``GPU`` for CUDA and ROCm GPUs, the accelerator's own name (``MTIA``, ``XPU``, ``HPU``), else
        ``device``."""
        return _NOUN.get(self.accelerator, "device")

    @property
    def is_gpu(self) -> bool:
        """Whether the device is a GPU (CUDA or ROCm)."""
        return self.noun == "GPU"

    def label(self, device: int) -> str:
        """``GPU 0``, ``MTIA 9``, ``device 3``."""
        return f"{self.noun} {device}"

    def say(self, text: str) -> str:
        """Text that names the device with the word ``GPU`` (``GPUs``, ``GPU-side``), said of this device:
        unchanged for a GPU, with the accelerator's own noun otherwise (``MTIA-side``, ``devices``). Advice that
        names a vendor's API is chosen with :attr:`runtime`, :attr:`graphs` ..., never rewritten here."""
        if self.is_gpu:
            return text
        return _GPU_WORD.sub(lambda m: self.noun + m.group(1), text)

    def kind_words(self, words: tuple[str, str]) -> tuple[str, str]:
        """An event kind's words (:data:`~gputop_trace.model.kinds.KIND_WORDS`) said of this device: ``CUDA API
        call`` is ``HIP API call`` on ROCm and ``runtime API call`` where the runtime is neither."""
        runtime = self.runtime or "runtime"
        return (self.say(words[0].replace("CUDA", runtime)), self.say(words[1].replace("CUDA", runtime)))

    @property
    def runtime(self) -> str | None:
        """``CUDA`` or ``HIP``; ``None`` where the runtime is not one of these two."""
        return _RUNTIME.get(self.accelerator)

    @property
    def graphs(self) -> str | None:
        """``CUDA graph``/``HIP graph`` (capture and replay of a whole step), ``None`` where there is none."""
        return f"{self.runtime} graph" if self.runtime else None

    @property
    def collective_library(self) -> str:
        """``NCCL`` on CUDA, ``RCCL`` on ROCm, ``""`` elsewhere (as in "NCCL collectives")."""
        return _COLLECTIVES.get(self.accelerator, "")

    @property
    def pinned_alloc(self) -> str:
        """The allocator of page-locked host memory, as advice names it."""
        return {CUDA: "cudaHostAlloc", ROCM: "hipHostMalloc"}.get(self.accelerator, "the runtime's pinned allocator")


def words_for(accelerator: str) -> DeviceWords:
    """The words of one accelerator kind (an empty or unknown kind is a CUDA GPU, see :data:`CUDA`)."""
    return DeviceWords(accelerator if accelerator in ACCELERATORS else CUDA)


def common_words(accelerators: set[str] | frozenset[str]) -> DeviceWords:
    """The words for several devices at once: theirs when they are all of one kind, else the generic
    ``device`` (with no vendor-specific advice)."""
    kinds = {words_for(a).accelerator for a in accelerators} or {CUDA}
    if len(kinds) == 1:
        return DeviceWords(next(iter(kinds)))
    return DeviceWords(OTHER)

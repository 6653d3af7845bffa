"""Devices by their own name (issue 14, item 1): on the MTIA, AMD (ROCm) and Triton (CUDA) traces of
``external/``, every command's text and JSON words call a device what it is (``MTIA 9``, ``GPU 2``) and give
vendor-specific advice only where it applies: nothing of CUDA (CUDA graphs, CUDA_MODULE_LOADING, cudaHostAlloc,
torch.cuda.Stream, NVTX, NCCL) on MTIA or ROCm, and no "GPU" at all on MTIA. Names from the trace itself (kernel
names such as ``direct_copy_kernel_cuda``) are data and are not checked."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.paths import CORPUS

pytestmark = pytest.mark.corpus

AMD = "external/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
TRITON = "external/triton_example/triton_example.json.gz"
MTIA = "external/mtia_trace_single_rank/mtia_rank_0.json.gz"
COMMANDS = ("summary", "kernels", "gaps", "transfers", "ranges", "ranks", "ops")
#: JSON keys whose strings are our words (everything else is a name or a figure from the trace)
WORD_KEYS = ("title", "detail", "fix", "label", "cause_label", "note", "verdict")
CUDA_WORDS = re.compile(r"CUDA|cuda[A-Z_]|torch\.cuda|NVTX|NCCL|cudaHostAlloc")
GPU_WORD = re.compile(r"\bGPUs?\b")


def _words(x: Any, key: str = "") -> list[str]:
    if isinstance(x, dict):
        return [w for k, v in x.items() for w in _words(v, k)]
    if isinstance(x, list):
        return [w for v in x for w in _words(v, key)]
    return [x] if isinstance(x, str) and key in WORD_KEYS else []


def _outputs(rel: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str]]:
    """Every command's text (with trace names removed: lines of tables are ours, but kernel and range names in
    them are the file's) and the words of every command's JSON."""
    texts, words = [], []
    for cmd in COMMANDS:
        code, out, err = run_cli(capsys, cmd, str(CORPUS / rel))
        assert code == 0, err
        texts.append(out)
        code, out, err = run_cli(capsys, cmd, "--json", str(CORPUS / rel))
        assert code == 0, err
        words += _words(json.loads(out))
    return "\n".join(texts), words


def test_mtia_is_called_mtia_and_gets_no_cuda_advice(capsys: pytest.CaptureFixture[str]) -> None:
    text, words = _outputs(MTIA, capsys)
    flat = " ".join(text.split())
    assert "MTIA 9:" in flat and "MTIA busy time" in flat
    assert not GPU_WORD.search(text), [ln for ln in text.splitlines() if GPU_WORD.search(ln)][:5]
    assert not CUDA_WORDS.search(text), [ln for ln in text.splitlines() if CUDA_WORDS.search(ln)][:5]
    bad = [w for w in words if GPU_WORD.search(w) or CUDA_WORDS.search(w)]
    assert words and not bad, bad[:5]
    # the advice that remains is the generic form of the CUDA advice, not nothing
    assert "torch.compile, less Python per kernel" in flat and "Fix: warm up before profiling." in flat
    code, out, _ = run_cli(capsys, "summary", "--json", str(CORPUS / MTIA))
    assert code == 0
    (dev,) = json.loads(out)["devices"]
    assert (dev["label"], dev["accelerator"]) == ("MTIA 9", "mtia")
    code, _, err = run_cli(capsys, "gaps", "--device", "3", str(CORPUS / MTIA))
    assert code == 2 and "this trace has no MTIA 3; its MTIAs are 9." in " ".join(err.split())


def test_rocm_is_a_gpu_with_hip_advice_and_no_cuda_words(capsys: pytest.CaptureFixture[str]) -> None:
    text, words = _outputs(AMD, capsys)
    flat = " ".join(text.split())
    ours = [ln for ln in text.splitlines() if CUDA_WORDS.search(ln) and "at::native" not in ln]
    assert not ours, ours[:5]
    bad = [w for w in words if CUDA_WORDS.search(w)]
    assert not bad, bad[:5]
    assert "GPU 2:" in flat and "HIP graphs" in flat and "HIP_ENABLE_DEFERRED_LOADING=0" in flat
    assert "hipStreamWaitEvent" in flat and "(104 CUs)" in flat
    code, out, _ = run_cli(capsys, "summary", "--json", str(CORPUS / AMD))
    assert code == 0
    (dev,) = json.loads(out)["devices"]
    assert (dev["label"], dev["accelerator"]) == ("GPU 2", "rocm")


def test_triton_on_an_nvidia_gpu_stays_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    """The Triton example ran on an A100 through CUDA: its device is a CUDA GPU and keeps the CUDA words."""
    code, out, _ = run_cli(capsys, "summary", "--json", str(CORPUS / TRITON))
    assert code == 0
    (dev,) = json.loads(out)["devices"]
    assert (dev["label"], dev["accelerator"]) == ("GPU 0", "cuda")
    _code, out, _ = run_cli(capsys, "summary", str(CORPUS / TRITON))
    assert "GPU busy time" in out and "GPUs: GPU 0: NVIDIA A100" in " ".join(out.split())

#!/usr/bin/env python3
"""Record reference traces together with PyTorch's own answers, for tests that compare ours with PyTorch's.

    python3 scripts/record_references.py --out DIR [--which ops|compiled|all] [--device cuda|cpu]

Writes, into DIR:
- ``ops_<device>.json.gz``: a small GPT-style training loop (embedding, 2 blocks of LayerNorm + attention through
  ``scaled_dot_product_attention`` + MLP, cross-entropy, AdamW) for 3 steps under ``torch.profiler`` with
  ``record_shapes``, ``profile_memory``, ``with_stack`` and ``with_flops``, each step in ``record_function("step_i")``.
- ``ops_<device>_key_averages.json``: what ``prof.key_averages()`` says for that same profile, one row per key
  (count, CPU total/self, device total/self, memory columns, FLOPs; times in µs as PyTorch gives them), and the same
  for ``key_averages(group_by_input_shape=True)``; plus the text of ``key_averages().table()``.
- ``compiled_cudagraphs_<device>.json.gz`` (``--which compiled``): an MLP under ``torch.compile(mode=
  "reduce-overhead")`` (CUDA graphs on CUDA) with a graph break in the middle of the forward, so each step runs two
  compiled regions; 6 inference steps, the last two with a new batch size (a recompilation inside the profile).
- ``compiled_cudagraphs_<device>_inductor.tar.gz``: the ``TORCH_COMPILE_DEBUG=1`` output of that run (the
  generated ``output_code.py`` files), for ``--inductor-dir``.
- ``references_env.json``: the recording machine (GPU, driver, CUDA, PyTorch).

The trace files are gzip-compressed Kineto JSON exactly as ``torch.profiler`` wrote them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import tarfile
import tempfile
import time
from typing import Any


def _gzip_to(src: str, dst: str) -> None:
    with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)


def _num(v: Any) -> Any:
    """A JSON-safe copy of one key_averages value."""
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_num(x) for x in v]
    return str(v)


#: FunctionEventAvg attributes copied into the reference JSON (all µs or bytes, as PyTorch reports them)
_AVG_FIELDS = (
    "key",
    "count",
    "cpu_time_total",
    "self_cpu_time_total",
    "device_time_total",
    "self_device_time_total",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "device_memory_usage",
    "self_device_memory_usage",
    "flops",
    "input_shapes",
    "device_type",
    "is_legacy",
    "node_id",
)


def _avg_rows(avgs: Any) -> list[dict[str, Any]]:
    rows = []
    for e in avgs:
        row: dict[str, Any] = {}
        for f in _AVG_FIELDS:
            if hasattr(e, f):
                row[f] = _num(getattr(e, f))
        # older PyTorch names the device columns cuda_*
        for old, new in (("cuda_time_total", "device_time_total"), ("self_cuda_time_total", "self_device_time_total")):
            if new not in row and hasattr(e, old):
                row[new] = _num(getattr(e, old))
        rows.append(row)
    return rows


def _env(device: str) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "recorded": time.strftime("%Y-%m-%d"),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, sm_count=props.multi_processor_count, cuda=torch.version.cuda)
    return env


def ops_reference(out: str, device: str, steps: int = 3) -> list[str]:
    """Record the operator-view reference; returns the written paths."""
    import torch
    from torch import nn
    from torch.nn import functional as nnf
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)
    dev = torch.device(device)
    d, heads, layers, vocab, batch, seq = 256, 4, 2, 4096, 4, 128

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            a = nnf.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.head = nn.Linear(d, vocab)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            x = self.emb(idx)
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    model = Model().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(i: int) -> None:
        with record_function(f"step_{i}"):
            idx = torch.randint(0, vocab, (batch, seq)).to(dev)
            logits = model(idx)
            loss = nnf.cross_entropy(logits.view(-1, vocab), idx.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            _ = loss.item()

    for i in range(2):
        step(-1 - i)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts, record_shapes=True, profile_memory=True, with_stack=True, with_flops=True) as prof:
        for i in range(steps):
            step(i)
        if device == "cuda":
            torch.cuda.synchronize()
    stem = os.path.join(out, f"ops_{device}")
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        _gzip_to(raw, stem + ".json.gz")
    ref = {
        "torch": torch.__version__,
        "device": device,
        "units": "times in µs, memory in bytes, as key_averages() gives them",
        "key_averages": _avg_rows(prof.key_averages()),
        "key_averages_by_shape": _avg_rows(prof.key_averages(group_by_input_shape=True)),
        "table": prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=-1, max_name_column_width=200),
    }
    with open(stem + "_key_averages.json", "w") as f:
        json.dump(ref, f, indent=1)
    return [stem + ".json.gz", stem + "_key_averages.json"]


def compiled_reference(out: str, device: str, steps: int = 6) -> list[str]:
    """Record the torch.compile + CUDA graphs reference (and its Inductor debug output); returns written paths."""
    debug_root = tempfile.mkdtemp(prefix="inductor_")
    os.environ["TORCH_COMPILE_DEBUG"] = "1"
    os.environ["TORCH_COMPILE_DEBUG_DIR"] = debug_root
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)
    dev = torch.device(device)
    width = 1024

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
            self.a2 = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
            self.b = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.LayerNorm(width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.a2(self.a(x))
            torch._dynamo.graph_break()  # planted: two compiled regions per step
            return self.b(x).softmax(-1)

    net = Net().to(dev)
    fn = torch.compile(net, mode="reduce-overhead")
    xs = {256: torch.randn(256, width, device=dev), 192: torch.randn(192, width, device=dev)}
    with torch.no_grad():
        for _ in range(3):
            fn(xs[256])
        if device == "cuda":
            torch.cuda.synchronize()
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        with profile(activities=acts, record_shapes=True) as prof:
            for i in range(steps):
                with record_function(f"step_{i}"):
                    y = fn(xs[256] if i < steps - 2 else xs[192])  # the last steps recompile for a new shape
                    time.sleep(0.001)
            if device == "cuda":
                torch.cuda.synchronize()
        del y
    stem = os.path.join(out, f"compiled_cudagraphs_{device}")
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        _gzip_to(raw, stem + ".json.gz")
    with tarfile.open(stem + "_inductor.tar.gz", "w:gz") as tar:
        tar.add(debug_root, arcname="inductor_debug")
    shutil.rmtree(debug_root, ignore_errors=True)
    return [stem + ".json.gz", stem + "_inductor.tar.gz"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--which", choices=("ops", "compiled", "all"), default="all")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    written: list[str] = []
    if args.which in ("ops", "all"):
        written += ops_reference(args.out, args.device)
    if args.which in ("compiled", "all"):
        written += compiled_reference(args.out, args.device)
    with open(os.path.join(args.out, "references_env.json"), "w") as f:
        json.dump(_env(args.device), f, indent=2)
    for p in written:
        print(p, os.path.getsize(p), "bytes")


if __name__ == "__main__":
    main()

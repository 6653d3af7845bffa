#!/usr/bin/env python3
"""Record the bundled sample traces on a real NVIDIA GPU (run on a machine with CUDA and PyTorch).

    python3 scripts/make_samples.py --out gputop_trace/sample_traces

Writes:
- ``h200_train_step.json.gz``: a small GPT-style model (2 layers, d=512, 8 heads, batch 8 × 256 tokens, bf16
  autocast, fused AdamW) trained for 4 steps under ``torch.profiler``, with problems planted on purpose so that
  the sample shows what the analyses find: a 5 ms ``time.sleep`` inside ``record_function("data_load")`` (the
  GPU idles while the host "loads data"), a pageable host-to-device copy on the compute stream, a pinned
  non-blocking copy on a side stream (hidden behind compute), and ``loss.item()`` inside ``log_loss`` (the host
  waits for the GPU).
- ``h200_compiled.json.gz``: the same MLP block under ``torch.compile`` (Triton kernels) for 3 inference steps.
- ``samples_env.json``: GPU, driver, CUDA, PyTorch versions of the recording machine.

The trace files are gzip-compressed Kineto JSON, exactly as ``torch.profiler`` wrote them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time


def _env() -> dict[str, object]:
    import torch

    props = torch.cuda.get_device_properties(0)
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except OSError:
        smi = ""
    return {
        "gpu": props.name,
        "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}",
        "nvidia_smi": smi,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "recorded": time.strftime("%Y-%m-%d"),
    }


def _gzip_to(src: str, dst: str) -> None:
    with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)


def train_sample(out: str, steps: int = 4, *, with_stack: bool = False) -> str:
    """Record the training sample; returns the written path. ``with_stack`` records Python stack frames
    (``python_function`` events) into ``h200_train_step_stack.json.gz`` instead."""
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)
    dev = torch.device("cuda")
    d, heads, layers, vocab, batch, seq = 512, 8, 2, 8192, 8, 256

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.ln1(x)
            a, _ = self.attn(h, h, h, need_weights=False, is_causal=False)
            x = x + a
            return x + self.mlp(self.ln2(x))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.head = nn.Linear(d, vocab)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            x = self.emb(idx)
            for i, b in enumerate(self.blocks):
                with record_function(f"layer_{i}"):
                    x = b(x)
            return self.head(x)

    model = Model().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    side = torch.cuda.Stream()
    lossf = nn.CrossEntropyLoss()

    def step(i: int) -> None:
        with record_function(f"step_{i}"):
            with record_function("data_load"):
                time.sleep(0.005)  # planted: the "input pipeline" keeps the GPU waiting
                tokens = torch.randint(0, vocab, (batch, seq))  # pageable host memory
                idx = tokens.to(dev)  # pageable HtoD copy on the compute stream
                mask = torch.ones(batch, seq, pin_memory=True)
                with torch.cuda.stream(side):
                    mask_gpu = mask.to(dev, non_blocking=True)  # pinned copy on a side stream
                torch.cuda.current_stream().wait_stream(side)
            with record_function("forward"), torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(idx) * mask_gpu[..., None]
                loss = lossf(logits.float().view(-1, vocab), idx.view(-1))
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            with record_function("log_loss"):
                _ = loss.item()  # planted: host waits for the GPU every step

    for i in range(3):  # warm up outside the profiler
        step(-1 - i)
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        with profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, with_stack=with_stack
        ) as prof:
            for i in range(steps):
                step(i)
            torch.cuda.synchronize()
        prof.export_chrome_trace(raw)
        dst = os.path.join(out, "h200_train_step_stack.json.gz" if with_stack else "h200_train_step.json.gz")
        _gzip_to(raw, dst)
    return dst


def compiled_sample(out: str, steps: int = 3) -> str:
    """Record the torch.compile sample; returns the written path."""
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, record_function

    dev = torch.device("cuda")
    model = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.LayerNorm(1024)) for _ in range(4)]).to(
        dev
    )
    fn = torch.compile(model)
    x = torch.randn(256, 1024, device=dev)
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        torch.cuda.synchronize()
        with tempfile.TemporaryDirectory() as tmp:
            raw = os.path.join(tmp, "trace.json")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(steps):
                    with record_function(f"infer_{i}"):
                        y = fn(x)
                        time.sleep(0.001)
                torch.cuda.synchronize()
            del y
            prof.export_chrome_trace(raw)
            dst = os.path.join(out, "h200_compiled.json.gz")
            _gzip_to(raw, dst)
    return dst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)), help="output folder")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument(
        "--which",
        choices=("all", "train", "compiled", "stack"),
        default="all",
        help="which sample to record (stack: the training sample, 2 steps, with Python stack frames)",
    )
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = _env()
    written = []
    if args.which in ("all", "train"):
        written.append(train_sample(args.out, args.steps))
    if args.which in ("all", "compiled"):
        written.append(compiled_sample(args.out))
    if args.which in ("all", "stack"):
        written.append(train_sample(args.out, 2, with_stack=True))
    with open(os.path.join(args.out, "samples_env.json"), "w") as f:
        json.dump(env, f, indent=2)
    for p in written:
        print(p, os.path.getsize(p), "bytes")
    print(json.dumps(env, indent=2))


if __name__ == "__main__":
    main()

"""Where pygraph's `peak_mem_mb` goes: the build with and without `profile=True`, the profile cache cold
and warm, and the memory held after the build (run on the GPU machine; prints one line per case)."""

import gc
import tempfile
from pathlib import Path

import torch

import pygraph
from pygraph.knobs import knobs
from pygraph.tools.workloads import select


def peak(build) -> tuple[float, float]:
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    compiled = build()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - base
    return (torch.cuda.max_memory_allocated() - base) / 2**20, held / 2**20, compiled


for workload in select("small", "mlp,resnet18,gpt2"):
    torch.manual_seed(0)
    model, draw = workload.build(torch.device("cuda"))
    x = tuple(draw())
    with torch.no_grad(), knobs.scope(cache_dir=Path(tempfile.mkdtemp())):
        for case, profile in (("profile=False", False), ("profile cold", True), ("profile warm", True)):
            p, h, compiled = peak(lambda: pygraph.export_and_compile(model, x, profile=profile))
            for _ in range(3):
                compiled(*x)
            torch.cuda.synchronize()
            print(f"{workload.name:10s} {case:14s} peak {p:8.2f} MB, held after build {h:8.2f} MB", flush=True)
            del compiled

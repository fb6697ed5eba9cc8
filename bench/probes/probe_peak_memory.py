"""Where `peak_mem_mb` goes, in the benchmark's window (build plus three calls), for pygraph and ro.

For pygraph (`profile=True`, as the benchmark builds it; calibration done beforehand, profiles measured in the window): the peak, what it
holds after the calls, and its parts: the arena, the derived state, the homes of eager results and what
the graphs' pool holds. For ro: the peak and what it holds, measured first in a fresh Dynamo state.
Run on the GPU machine; one line per system and workload."""

import gc
import sys

import torch

import pygraph
from pygraph.backend.cuda.calibrate import costs_for
from pygraph.tools.workloads import select

MB = 2**20


def window(build, x) -> tuple[float, float, object]:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn = build()
    for _ in range(3):
        fn(*x)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / MB, (torch.cuda.memory_allocated() - base) / MB, fn


def pool_mb(pool) -> float:
    return (
        sum(
            b["size"]
            for s in torch.cuda.memory_snapshot()
            if tuple(s["segment_pool_id"]) == tuple(pool)
            for b in s["blocks"]
            if b["state"] == "active_allocated"
        )
        / MB
    )


def main(suite: str, names: str) -> None:
    device = torch.device("cuda")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
        costs_for(device)
    for workload in select(suite, names):
        probe(workload.name, *workload.build(device))


def probe(name: str, model: torch.nn.Module, draw) -> None:
    torch.manual_seed(0)
    x = tuple(draw())
    with torch.no_grad():
        torch._dynamo.reset()
        peak, held, fn = window(lambda: torch.compile(model, mode="reduce-overhead"), x)
        print(f"{name:22s} ro      peak {peak:9.2f} MB, held {held:9.2f} MB", flush=True)
        del fn
        torch._dynamo.reset()
        peak, held, fn = window(lambda: pygraph.export_and_compile(model, x, profile=True), x)
        rt = fn._backend
        derived = sum(t.numel() * t.element_size() for t in fn._derived_values.values()) / MB
        homes = sum(t.numel() * t.element_size() for t in rt._homes.values()) / MB
        print(
            f"{name:22s} pygraph peak {peak:9.2f} MB, held {held:9.2f} MB: arena "
            f"{rt.arena.numel() / MB:8.2f}, derived {derived:8.2f}, homes {homes:7.2f}, "
            f"graph pool {pool_mb(rt.pool):8.2f}",
            flush=True,
        )
        del fn, rt


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Outputs as scratch (plan-memory's `outputs` option), on against off, per workload: the benchmark's
peak memory (build plus three calls, cuBLAS workspaces dropped first), the arena, the nodes patched each
call, the error against eager (TF32 off), and the time per call both where the caller drops each result
(the allocator hands the next call the same address: nothing to patch) and where it holds the last one
(`out = model(x)` in a loop: two addresses alternate, so every patched node is updated every call).

Run on the GPU machine: `python3 bench/probes/probe_scratch_outputs.py bert_base,gpt2,matmul_4k`."""

import gc
import sys
import time

import torch

import pygraph
import pygraph.api
from pygraph.backend.cuda.calibrate import costs_for
from pygraph.metrics import relative_error
from pygraph.tools.workloads import select

MB = 2**20
CALLS = 200


def compile_with(model, x, scratch: bool):
    """pygraph as the benchmark builds it (profiled), with plan-memory's `outputs` option set."""
    original = pygraph.api._plan_pipeline

    def pipeline(cost_key: str, static_outputs: bool) -> str:
        text = original(cost_key, static_outputs)
        return text if scratch else text.replace("plan-memory{", "plan-memory{outputs=false ")

    pygraph.api._plan_pipeline = pipeline
    try:
        return pygraph.export_and_compile(model, x, profile=True)
    finally:
        pygraph.api._plan_pipeline = original


def per_call_us(fn, x, hold: bool) -> float:
    kept = fn(*x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        if hold:
            kept = fn(*x)
        else:
            fn(*x)
    torch.cuda.synchronize()
    del kept
    return (time.perf_counter() - start) / CALLS * 1e6


def probe(name: str, model: torch.nn.Module, draw) -> None:
    torch.manual_seed(0)
    x = tuple(draw())
    for scratch in (True, False):
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        with torch.no_grad():
            ref = model(*x)
        checked = compile_with(model, x, scratch)
        error = relative_error(checked(*x), ref)
        del checked
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        gc.collect()
        torch.cuda.synchronize()
        torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        with torch.no_grad():
            fn = compile_with(model, x, scratch)
            for _ in range(3):
                fn(*x)
            torch.cuda.synchronize()
            peak = (torch.cuda.max_memory_allocated() - base) / MB
            stats = fn.stats()
            dropped = min(per_call_us(fn, x, hold=False) for _ in range(3))
            held = min(per_call_us(fn, x, hold=True) for _ in range(3))
        print(
            f"{name} scratch={'on ' if scratch else 'off'} peak {peak:.2f} MB, arena {fn.plan.arena_bytes / MB:.2f} MB,"
            f" patched nodes {stats['patched_nodes']}, max_rel_err {error:.1e}, per call {dropped:.1f} us"
            f" (results dropped), {held:.1f} us (last result held)",
            flush=True,
        )
        del fn


def main(names: str) -> None:
    device = torch.device("cuda")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
        costs_for(device)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    for workload in select("all", names):
        probe(workload.name, *workload.build(device))


if __name__ == "__main__":
    main(sys.argv[1])

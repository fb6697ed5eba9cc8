"""What is allocated at the moment of pygraph's peak in the benchmark's memory window (a `profile=True`
build and three calls): the caching allocator's history is replayed to find the peak, and each block of
1 MB or more live then is printed with the pygraph frames that allocated it.

On the GPU machine: `python3 bench/probes/probe_peak_trace.py mlp,resnet18 [SMALLEST_MB [SYSTEM]]` (blocks
from 1 MB by default; SYSTEM `ro` traces reduce-overhead instead, built once untraced first so that
Inductor's caches are warm, as the benchmark's ro figures are; output: bench/results/probe-peak-trace-*.log).
"""

import gc
import sys

import torch

import pygraph
from pygraph.backend.cuda.calibrate import costs_for
from pygraph.tools.workloads import WORKLOADS

MB = 2**20


def where(frames: list[dict]) -> str:
    ours = [
        f"{f['filename'].rsplit('/', 1)[-1]}:{f['line']} {f['name']}"
        for f in frames
        if "pygraph" in f["filename"]
    ]
    theirs = [f"{f['filename'].rsplit('/', 1)[-1]}:{f['line']} {f['name']}" for f in frames]
    return " < ".join(ours[:4] or theirs[:4]) or "?"


def blocks_at_peak(trace: list[dict]) -> tuple[int, list[tuple[int, list]]]:
    """The allocator history's peak of live bytes, and the blocks live then (size, frames)."""
    live: dict[int, tuple[int, list]] = {}
    total = peak = 0
    at_peak: dict[int, tuple[int, list]] = {}
    for event in trace:
        if event["action"] == "alloc":
            live[event["addr"]] = (event["size"], event.get("frames", []))
            total += event["size"]
            if total > peak:
                peak, at_peak = total, dict(live)
        elif event["action"] == "free_requested" and event["addr"] in live:
            total -= live.pop(event["addr"])[0]
    return peak, list(at_peak.values())


def build(system: str, model: torch.nn.Module, x: tuple) -> object:
    if system == "ro":
        return torch.compile(model, mode="reduce-overhead")
    return pygraph.export_and_compile(model, x, profile=True)


def main(names: list[str], smallest_mb: float = 1.0, system: str = "pygraph") -> None:
    device = torch.device("cuda")
    for tf32 in (False, True):  # calibrated for both, then TF32 on, as the benchmark times
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
        costs_for(device)
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(device)
        x = tuple(draw())
        if system == "ro":  # warm Inductor's caches
            with torch.no_grad():
                warm = build(system, model, x)
                for _ in range(3):
                    warm(*x)
            del warm
            torch._dynamo.reset()
        gc.collect()
        torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
        with torch.no_grad():
            compiled = build(system, model, x)
            for _ in range(3):
                compiled(*x)
        torch.cuda.synchronize()
        trace = torch.cuda.memory._snapshot()["device_traces"][device.index or 0]
        torch.cuda.memory._record_memory_history(enabled=None)
        peak, at_peak = blocks_at_peak(trace)
        print(
            f"{name} ({system}): peak {peak / MB:.1f} MB above {base / MB:.1f} MB; blocks of {smallest_mb} MB or more live then:"
        )
        for size, frames in sorted(at_peak, key=lambda v: -v[0]):
            if size >= smallest_mb * MB:
                print(f"  {size / MB:8.2f} MB  {where(frames)}")
        print(f"  held after the calls: {(torch.cuda.memory_allocated() - base) / MB:.1f} MB", flush=True)
        del compiled


if __name__ == "__main__":
    main(sys.argv[1].split(","), *map(float, sys.argv[2:3]), *sys.argv[3:4])

"""Can the recordings of all programs of a compiled model share one graph pool (one cuBLAS workspace for all)?

The fifty-fifth session kept one `graph_pool_handle()` per arena alive with a one-kernel graph captured
into it first: the runtime tests passed, but a capture that failed (a call that synchronises) left torch's
generator capturing, so the next random op raised "Offset increment outside graph capture". Each scenario
here, in a process of its own, records a call that synchronises with `graph.record` (which cleans up with
`graph._abandon`), then records a plain call into the same pool, then draws random numbers:

- private: a fresh pool per recording (what pygraph does now);
- shared: one pool kept by a keeper graph, `_abandon` as it is;
- shared-no-release: the same, with `_abandon`'s `_cuda_releasePool` skipped (the guess: torch released the
  failed capture's use of the pool already, and a second release frees a pool that graphs still use).

On the GPU machine: `python3 bench/probes/probe_shared_pool.py` (one line per scenario; output:
bench/results/probe-shared-pool-*.log).
"""

import subprocess
import sys

import torch

SCENARIOS = ("private", "shared", "shared-no-release")


def scenario(name: str) -> None:
    from pygraph.backend.cuda import graph

    device = torch.device("cuda")
    stream = graph.side_stream(device)
    x = torch.randn(16, device=device)
    shared = torch.cuda.graph_pool_handle()
    if name != "private":
        keeper = torch.cuda.CUDAGraph()
        with torch.cuda.graph(keeper, pool=shared):
            torch.zeros(1, device=device)

    def pool() -> object:
        return torch.cuda.graph_pool_handle() if name == "private" else shared

    steps = []
    release = torch._C._cuda_releasePool
    if name == "shared-no-release":
        torch._C._cuda_releasePool = lambda device, pool: None
    with torch.cuda.stream(stream):
        x.sum().item()  # (warm-up on the stream, as the runtime does before recording)
    try:
        graph.record(lambda: [x * x.sum().item()], stream, pool())
        steps.append("the synchronising capture succeeded (unexpected)")
    except Exception as exc:
        steps.append(f"the synchronising capture raised {type(exc).__name__}")
    torch._C._cuda_releasePool = release
    try:
        graph.record(lambda: [x * 2], stream, pool())
        steps.append("a capture after it: ok")
    except Exception as exc:
        steps.append(f"a capture after it: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    try:
        torch.randn(4, device=device)
        torch.cuda.synchronize()
        steps.append("random numbers after it: ok")
    except Exception as exc:
        steps.append(f"random numbers after it: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    print(f"{name}: {'; '.join(steps)}", flush=True)


def main() -> None:
    if len(sys.argv) > 1:
        scenario(sys.argv[1])
        return
    for name in SCENARIOS:
        subprocess.run([sys.executable, __file__, name], check=False)


if __name__ == "__main__":
    main()

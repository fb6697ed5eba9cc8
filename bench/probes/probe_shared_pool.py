"""Can the recordings of all programs of a compiled model share one graph pool (one cuBLAS workspace for all)?

The fifty-fifth session kept one `graph_pool_handle()` per arena alive with a one-kernel graph captured
into it first: the runtime tests passed, but a capture that failed (a call that synchronises) left torch's
generator capturing, so the next random op raised "Offset increment outside graph capture". Each scenario
here, in a process of its own, records a call that synchronises with `graph.record` (which cleans up with
`graph._abandon`), then records a plain call into the same pool, then draws random numbers:

- private: a fresh pool per recording (what pygraph does now);
- shared: one pool kept by a keeper graph, `_abandon` as it is;
- shared-no-release: the same, with `_abandon`'s `_cuda_releasePool` skipped (the guess: torch released the
  failed capture's use of the pool already, and a second release frees a pool that graphs still use);
- shared-no-failure: the shared pool with a plain call recorded where the synchronising one was.

The fifty-sixth session's run (`probe-shared-pool-s56-h200.log`) refuted the guess: both shared scenarios
failed the next capture with "beginAllocateToPool: already recording to mempool_id". After the failed
capture each scenario now also ends allocation to the pool once more and prints what that says (a pool
still open to allocations would end quietly), and the failure's chain of exceptions.

On the GPU machine: `python3 bench/probes/probe_shared_pool.py` (one line per scenario; output:
bench/results/probe-shared-pool-*.log).
"""

import subprocess
import sys

import torch

SCENARIOS = ("private", "shared", "shared-no-release", "shared-no-failure")


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
    first = (lambda: [x * 2]) if name == "shared-no-failure" else (lambda: [x * x.sum().item()])
    try:
        graph.record(first, stream, pool())
        steps.append("the first capture succeeded")
    except Exception as exc:
        chain = []
        while exc is not None:
            chain.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            exc = exc.__cause__ or exc.__context__
        steps.append(f"the first capture raised {' <- '.join(chain)}")
    torch._C._cuda_releasePool = release
    if name != "private":
        try:
            torch._C._cuda_endAllocateToPool(device.index or 0, shared)
            steps.append("ending allocation to the pool again: ok (it was still open)")
        except Exception as exc:
            steps.append(f"ending allocation to the pool again: {str(exc).splitlines()[0]}")
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

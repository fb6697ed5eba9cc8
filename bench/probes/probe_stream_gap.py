"""GPU time a kernel adds besides its work when kernels run one after another: launched on a stream (the host
ahead of the GPU, held back by a sleeping kernel) against replayed from a captured graph. select-graphs'
estimate of eager launches assumed none on a stream (a GPU-bound segment ran eagerly: max(host, work)).

On the GPU machine: `python3 bench/probes/probe_stream_gap.py` (output: bench/results/probe-stream-gap-s29-h200.log):
for kernels of a few sizes, microseconds per kernel in a chain of 100 on a stream and in a graph.
"""

import torch

CHAIN = 100


def per_kernel_us(fn, graph: bool) -> float:
    """GPU microseconds per call of `fn` in a chain of CHAIN, from events around the chain."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        replay = None
        if graph:
            replay = torch.cuda.CUDAGraph()
            with torch.cuda.graph(replay, stream=stream):
                for _ in range(CHAIN):
                    fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(5):
            torch.cuda._sleep(50_000_000)  # (about 25 ms: the host queues the whole chain meanwhile)
            start.record()
            if replay is not None:
                replay.replay()
            else:
                for _ in range(CHAIN):
                    fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / CHAIN)
    return sorted(times)[2]


def main() -> None:
    print(f"{'kernel':>28} {'stream':>8} {'graph':>8}  (us per kernel, chain of {CHAIN})")
    for numel in (32, 1 << 18, 1 << 20, 1 << 22):
        a, b = torch.randn(numel, device="cuda"), torch.empty(numel, device="cuda")
        copy = lambda a=a, b=b: b.copy_(a)  # noqa: E731
        stream, graph = per_kernel_us(copy, False), per_kernel_us(copy, True)
        print(f"{f'copy of {numel * 4} bytes':>28} {stream:8.2f} {graph:8.2f}", flush=True)
    for n in (512, 2048, 4096):
        x, w = torch.randn(1, n, device="cuda"), torch.randn(n, n, device="cuda")
        out = torch.empty(1, n, device="cuda")
        mv = lambda x=x, w=w, out=out: torch.mm(x, w, out=out)  # noqa: E731
        stream, graph = per_kernel_us(mv, False), per_kernel_us(mv, True)
        print(f"{f'mm 1 x {n} x {n}':>28} {stream:8.2f} {graph:8.2f}", flush=True)


if __name__ == "__main__":
    main()

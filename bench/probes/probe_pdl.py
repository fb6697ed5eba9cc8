"""Whether programmatic dependent launch (PDL) would pay in a decoding step's chain of short kernels: each
product of one row waits for the previous kernel only where it reads that kernel's output, so it could load
its weights (which nothing in the step writes) while the previous kernel drains. Eight layers of a Llama
decoding step's products in bfloat16 (q, k and v 3072 x 2048, output 2048 x 2048, gate and up 11264 x
2048, down 2048 x 5632), each layer's weights its own (streamed from memory), a small pointwise kernel
between products as the norms and activations are; captured into one CUDA graph (stream capture turns
Triton's `launch_pdl` into programmatic edges) and replayed. Variants: no PDL; PDL with each kernel
waiting first; PDL with the weights loaded before the wait; and with the previous kernel letting its
dependents launch once its loads are issued. GPU time per layer.

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_pdl.py`
(output: bench/results/probe-pdl-s26-h200.log).
"""

import torch
import triton
import triton.language as tl
from timing import gpu_us


@triton.jit
def matvec(w, x, y, N: tl.constexpr, K: tl.constexpr, KP: tl.constexpr, MODE: tl.constexpr):
    # MODE 0: no PDL calls; 1: wait first; 2: weights before the wait; 3: as 2, dependents launched early
    rows = tl.program_id(0) * 2 + tl.arange(0, 2)
    cols = tl.arange(0, KP)
    if MODE == 1:
        tl.extra.cuda.gdc_wait()
    weights = tl.load(w + rows[:, None] * K + cols[None, :], mask=cols[None, :] < K, other=0.0)
    if MODE >= 2:
        tl.extra.cuda.gdc_wait()
    v = tl.load(x + cols, mask=cols < K, other=0.0).to(tl.float32)
    if MODE == 3:
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(y + rows, tl.sum(weights.to(tl.float32) * v[None, :], 1).to(tl.bfloat16))


@triton.jit
def scale(x, y, N: tl.constexpr, NP: tl.constexpr, MODE: tl.constexpr):
    i = tl.arange(0, NP)
    if MODE >= 1:
        tl.extra.cuda.gdc_wait()
    v = tl.load(x + i, mask=i < N, other=0.0).to(tl.float32)
    if MODE == 3:
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(y + i, (v * 0.5).to(tl.bfloat16), mask=i < N)


SHAPES = ((3072, 2048), (2048, 2048), (11264, 2048), (2048, 5632))
LAYERS = 8


def main() -> None:
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), flush=True)
    weights = [
        [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / 16 for n, k in SHAPES]
        for _ in range(LAYERS)
    ]
    x = torch.randn(16384, device="cuda", dtype=torch.bfloat16)
    bufs = [torch.empty(16384, device="cuda", dtype=torch.bfloat16) for _ in range(2)]

    def step(mode: int) -> None:
        pdl = mode > 0
        bufs[0][: x.numel()].copy_(x)
        for layer in weights:
            for w in layer:
                n, k = w.shape
                matvec[(n // 2,)](
                    w, bufs[0], bufs[1], N=n, K=k, KP=triton.next_power_of_2(k), MODE=mode, launch_pdl=pdl
                )
                scale[(1,)](bufs[1], bufs[0], N=8192, NP=8192, MODE=mode, launch_pdl=pdl)

    results = {}
    for mode, label in enumerate(
        ("no PDL", "PDL, wait first", "PDL, weights before the wait", "PDL, weights first, dependents early")
    ):
        step(mode)
        torch.cuda.synchronize()
        results[mode] = bufs[0].clone(), bufs[1].clone()
        print(
            f"{label:40s} {gpu_us(lambda mode=mode: step(mode), reps=2) / LAYERS:7.2f} us per layer",
            flush=True,
        )
    same = all(
        torch.equal(results[m][0], results[0][0]) and torch.equal(results[m][1], results[0][1])
        for m in results
    )
    print(f"results identical across variants: {same}")


if __name__ == "__main__":
    main()

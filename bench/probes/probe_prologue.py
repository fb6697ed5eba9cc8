"""Whether a matrix-vector product should compute its row in its prologue (every program recomputing the
whole row) or read it from a kernel of its own, at decoding shapes with the weights streamed from memory.

pygraph's own kernels, compiled twice: a stack of layers `linear(f(x_i), W_i)`, where the row `f(x_i)` (a
gated `silu(g) * u` as Llama's MLP, or `gelu(x)` as GPT-2's) is read by the product alone and so becomes
its prologue; and the same with each row also returned, so that it is a kernel of its own. Each layer
reads one value of the previous one's result, as a model's layers follow each other. Wall time per layer
of calls queued back to back, and GPU time per layer and kernel (torch.profiler); enough layers that
the weights exceed the L2 cache.

On the GPU machine: `python3 bench/probes/probe_prologue.py` (output:
bench/results/probe-prologue-s25-h200.log).
"""

import torch
import torch.nn.functional as F
from torch import nn

import pygraph

LAYERS_BYTES = 256 << 20  # more than the H200's 50 MB L2


class Layers(nn.Module):
    def __init__(self, n: int, k: int, dtype: torch.dtype, gated: bool, rows_returned: bool) -> None:
        super().__init__()
        layers = min(64, max(2, LAYERS_BYTES // (n * k * dtype.itemsize)))
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.randn(n, k, device="cuda", dtype=dtype) / 64) for _ in range(layers)]
        )
        self.gated, self.rows_returned = gated, rows_returned

    def forward(self, g: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outs, rows = [], []
        for i, w in enumerate(self.weights):
            x = g[i] if i == 0 else g[i] + outs[-1][:1]  # (each layer after the last, as in a model)
            row = F.silu(x) * u[i] if self.gated else F.gelu(x)
            outs.append(F.linear(row, w))
            rows.append(row)
        return (*outs, *rows) if self.rows_returned else tuple(outs)


def per_layer_us(model: Layers, inputs: tuple[torch.Tensor, ...]) -> tuple[float, float, dict[str, float]]:
    """Wall time per layer of the compiled calls queued back to back, GPU time per layer and per kernel."""
    compiled = pygraph.export_and_compile(model, inputs)
    for _ in range(3):
        compiled(*inputs)
    torch.cuda.synchronize()
    calls = 10
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        compiled(*inputs)
    end.record()
    torch.cuda.synchronize()
    wall = start.elapsed_time(end) * 1e3 / (calls * len(model.weights))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            compiled(*inputs)
        torch.cuda.synchronize()
    layers = len(model.weights)
    kernels: dict[str, float] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            name = e.name.split("_", 1)[-1] if e.name.startswith("k") else e.name  # (k3_gelu -> gelu)
            kernels[name] = kernels.get(name, 0.0) + e.device_time / (calls * layers)
    return wall, sum(kernels.values()), kernels


def main() -> None:
    torch.manual_seed(0)
    shapes = [
        (2048, 5632, torch.bfloat16, True),  # a Llama-style MLP's down projection (TinyLlama)
        (4096, 8192, torch.bfloat16, True),
        (2048, 2048, torch.bfloat16, True),
        (768, 3072, torch.bfloat16, False),  # GPT-2's MLP down projection after GELU
        (768, 3072, torch.float32, False),
        (512, 512, torch.float32, False),  # the mlp workload's layers
    ]
    with torch.no_grad():
        for n, k, dtype, gated in shapes:
            line = f"{n:5d} x {k:5d} {str(dtype)[6:]:8s} {'silu(g)*u' if gated else 'gelu(x)':9s}:"
            for returned in (False, True):
                model = Layers(n, k, dtype, gated, returned)
                layers = len(model.weights)
                inputs = tuple(torch.randn(layers, k, device="cuda", dtype=dtype) for _ in range(2))
                wall, total, kernels = per_layer_us(model, inputs)
                parts = ", ".join(f"{name[:24]} {us:.2f}" for name, us in sorted(kernels.items()))
                line += f" {'row apart' if returned else 'prologue '} {wall:6.2f} us/layer, GPU {total:6.2f} ({parts});"
                del model
            print(line, flush=True)


if __name__ == "__main__":
    main()

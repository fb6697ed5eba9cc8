"""How eager updates half-precision running statistics in training batch norm: for 300 random bfloat16
batches of 16 channels, each candidate formula's statistics that differ from eager's. Run on the GPU
machine as `python bench/probes/probe_batch_norm_statistics.py cuda` (or `cpu`). On an H100
(`bench/results/bn-stats-s36-h100.log`) CUDA's kernel matches "f32 once" (the update in float32, one
rounding); torch's decomposition (and the CPU's eager, which rounds each op in bfloat16 for the mean and
matches none of these for the variance) does not. pygraph's decomposition: `_batch_norm_training` in
`pygraph/frontend/decompositions.py`."""

import sys

import torch
import torch.nn.functional as F

BATCHES, CHANNELS, MOMENTUM = 300, 16, 0.25
HALF = torch.bfloat16


def main(device: str) -> None:
    torch.manual_seed(0)
    off: dict[str, int] = {}

    def count(name: str, candidate: torch.Tensor, eager: torch.Tensor) -> None:
        off[name] = off.get(name, 0) + int((candidate != eager).sum())

    m = MOMENTUM
    for t in range(BATCHES):
        n = [3, 6, 7, 20][t % 4]
        x = (torch.randn(n, CHANNELS, 5) * 3 + 1).to(HALF).to(device)
        mean0 = torch.randn(CHANNELS).to(HALF).to(device)
        var0 = (torch.rand(CHANNELS) + 0.5).to(HALF).to(device)
        mean1, var1 = mean0.clone(), var0.clone()
        F.batch_norm(x, mean1, var1, training=True, momentum=m)
        rows = x.float().transpose(0, 1).reshape(CHANNELS, -1)
        mean, var, biased = rows.mean(1), rows.var(1), rows.var(1, correction=0)
        size = rows.shape[1]
        count("mean: f32 once", (m * mean + (1 - m) * mean0.float()).to(HALF), mean1)
        count("mean: bf16 ops", m * mean.to(HALF) + (1 - m) * mean0, mean1)
        count("mean: torch decomposition", (m * mean + (1 - m) * mean0).to(HALF), mean1)
        count("var: f32 once", (m * var + (1 - m) * var0.float()).to(HALF), var1)
        count("var: bf16 ops", m * var.to(HALF) + (1 - m) * var0, var1)
        count(
            "var: torch decomposition", (m * (biased * (size / (size - 1))) + (1 - m) * var0).to(HALF), var1
        )
    print(device, "statistics off eager's, of", BATCHES * CHANNELS)
    for name, n in off.items():
        print(f"  {name:40s} {n}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda")

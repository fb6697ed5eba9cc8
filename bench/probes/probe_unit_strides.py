"""ATen's `index_put(accumulate=True)` on a tensor whose size-1 dim has a stride other than a contiguous
tensor's there: torch 2.11's CUDA kernel sums wrongly, its CPU kernel does not. Why `backend.tensors.view_of`
gives every size-1 dim the dense stride.

On the GPU machine: `python3 bench/probes/probe_unit_strides.py` (output:
bench/results/probe-unit-strides-s35-h100.log).
"""

import torch


def main() -> None:
    for device in ("cpu", "cuda"):
        x = torch.randn(8, 1, 3, 8, device=device)
        index = torch.tensor([0, 0, 1, 2, 2, 2], device=device)
        source = torch.full((8, 1, 6, 8), 0.5, device=device)
        reference = torch.ops.aten.index_put(x.contiguous(), [None, None, index], source, True)
        for strides in ((24, 24, 8, 1), (24, 8, 8, 1), (24, 1, 8, 1), (24, 100, 8, 1)):
            t = torch.empty_strided((8, 1, 3, 8), strides, device=device).copy_(x)
            out = torch.ops.aten.index_put(t, [None, None, index], source, True)
            error = (out - reference).abs().max().item()
            print(f"{device} strides {strides}: largest difference from the contiguous input's {error:.2e}")


if __name__ == "__main__":
    main()

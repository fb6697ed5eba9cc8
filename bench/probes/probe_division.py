"""Eager CUDA's division by a number (a CPU scalar) against `x * (1 / b)` with the reciprocal rounded to float32,
and against true division (by the same value as a CUDA 0-d tensor); mean, floor and trunc division likewise.

On the GPU machine: `python3 bench/probes/probe_division.py` (output: bench/results/division-s37-h100.log).
"""

import numpy as np
import torch

torch.manual_seed(0)
x = torch.randn(1 << 20, device="cuda")
for b in (3.0, 0.7, 10.0, 2.0**-130, 1e-39):
    e = x / b
    recip = float(np.float32(1.0) / np.float32(b)) if np.float32(b) != 0 else float("inf")
    m = x * torch.tensor(recip, dtype=torch.float32, device="cuda")
    t = x / torch.tensor(b, device="cuda")  # a CUDA 0-d tensor: true division
    print(
        f"x / {b}: eager vs x*recip differ {int((e != m).sum())}, eager vs true division differ {int((e != t).sum())}"
    )
    xb = x.bfloat16()
    eb = xb / b
    mb = (xb.float() * recip).bfloat16()
    tb = (xb.float() / b).bfloat16()
    print(f"  bf16: vs recip {int((eb != mb).sum())}, vs true {int((eb != tb).sum())}")
rows = torch.randn(4096, 544, device="cuda")
mean = rows.mean(1)
s = rows.sum(1)
f = float(np.float32(1.0) / np.float32(544))
print("mean vs sum*(1/N)", int((mean != s * f).sum()), "mean vs sum/N", int((mean != s / 544).sum()))
for b in (3.0, 0.7):
    fl = torch.div(x, b, rounding_mode="floor")
    tr = torch.div(x, b, rounding_mode="trunc")
    recip = float(np.float32(1.0) / np.float32(b))
    mod = torch.fmod(x, b)
    fl_recip = (x - mod) * recip
    fl_true = (x - mod) / b
    print(
        f"floor by {b}: eager vs (a-mod)*recip-based differ {int((fl != torch.where((mod != 0) & ((mod < 0) != (b < 0)), fl_recip - 1, fl_recip).floor()).sum())}, vs true-div-based {int((fl != torch.where((mod != 0) & ((mod < 0) != (b < 0)), fl_true - 1, fl_true).floor()).sum())}"
    )
    print(
        f"trunc by {b}: eager vs trunc(x*recip) differ {int((tr != (x * recip).trunc()).sum())}, vs trunc(x/b) {int((tr != (x / torch.tensor(b, device='cuda')).trunc()).sum())}"
    )

"""Vendor calls writing a strided result (`mm.out`, `bmm.out`): does ATen hand cuBLAS the strides as they
are (no copy kernel of its own), and what does each form cost?

1. A linear of N = 50257 outputs (GPT-2's logits): unpadded (cuBLAS's unaligned kernels), the weight
   padded to N' = 50260 (what `frontend/align_matmuls.py` did, a padded copy of the weight), and the
   unpadded weight writing rows of N' through `out=` (only the output's rows need aligning), and the
   product split into its aligned prefix of columns and the rest, joined by `cat`
   (`frontend/align_matmuls.py`).
2. DeBERTa's context: `bmm(probs, v)` then the permute back into [S, H * D] (a copy), against `bmm.out`
   into the permuted view of the [S, H, D] buffer.

On the GPU machine: `python3 bench/probes/probe_out_form.py` (output: bench/results/probe-out-form-h200.log).
"""

import torch
from timing import gpu_us


def kernels(fn) -> list[str]:
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name[:60] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def report(label: str, fn) -> None:
    print(f"   {label:44s} {gpu_us(fn):8.2f} us  kernels {kernels(fn)}")


def logits(m: int, tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    k, n = 768, 50257
    padded_n = 50260
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    w_padded = torch.nn.functional.pad(w, (0, 0, 0, padded_n - n))
    out = torch.empty(m, padded_n, device="cuda")
    view = out[:, :n]
    print(f"== logits M={m} K={k} N={n} tf32={tf32}")
    report("mm(x, w.t()) unaligned", lambda: torch.mm(x, w.t()))
    report("mm(x, w_padded.t()) (padded weight)", lambda: torch.mm(x, w_padded.t()))
    report("mm(x, w_padded.t()) then contiguous", lambda: torch.mm(x, w_padded.t())[:, :n].contiguous())
    report("mm(x, w.t(), out=rows of N')", lambda: torch.mm(x, w.t(), out=view))
    aligned = n - n % 4
    report(
        "split: mm(x, w[:A].t()), mm(x, w[A:].t()), cat",
        lambda: torch.cat([torch.mm(x, w[:aligned].t()), torch.mm(x, w[aligned:].t())], -1),
    )
    report("  its prefix alone", lambda: torch.mm(x, w[:aligned].t()))
    report("  its remainder alone", lambda: torch.mm(x, w[aligned:].t()))
    report("mm out=, then contiguous", lambda: torch.mm(x, w.t(), out=view).contiguous())
    torch.mm(x, w.t(), out=view)
    ref = x.double() @ w.double().t()
    err = ((view.double() - ref).norm() / ref.norm()).item()
    print(f"   out= result against float64: {err:.2e} (strides {view.stride()})")


def context(s: int, h: int, d: int, tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    probs = torch.softmax(torch.randn(h, s, s, device="cuda"), -1)
    v = torch.randn(s, h, d, device="cuda").permute(1, 0, 2)  # [H, S, D] read strided, as DeBERTa's
    buffer = torch.empty(s, h, d, device="cuda")
    view = buffer.permute(1, 0, 2)
    print(f"== context S={s} H={h} D={d} tf32={tf32}")
    report("bmm then permute-back copy", lambda: torch.bmm(probs, v).permute(1, 0, 2).reshape(s, h * d))
    report("bmm out= permuted view", lambda: torch.bmm(probs, v, out=view))
    torch.bmm(probs, v, out=view)
    ref = torch.bmm(probs.double(), v.double())
    err = ((view.double() - ref).norm() / ref.norm()).item()
    print(f"   out= result against float64: {err:.2e} (strides {view.stride()})")


if __name__ == "__main__":
    for tf32 in (True, False):
        for m in (32, 2048):
            logits(m, tf32)
        context(128, 12, 64, tf32)
        context(512, 16, 64, tf32)

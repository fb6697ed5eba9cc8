"""Does ATen's CUDA bmm read permuted heads as they are? (elide-clones' premise, `vendor_reads_as_is`)

DeBERTa-v2's attention at debertav2_qa_I1's shapes (24 heads of 64, 128 tokens, one sequence): the
kernels each variant launches (torch.profiler) and its GPU time (a CUDA graph of it replayed 500 times),
TF32 allowed as the benchmark runs. On the GPU machine: `python3 bench/probes/probe_strided_bmm.py`.

Output on one H200 (torch 2.11.0+cu130), 2026-11-21 (kernels, us per replay):
    qk_view           1   5.25  the cutlass GEMM alone: no copy of the [24, 128, 64] (64, 1536, 1) operands
    qk_contig         1   4.22
    pv_view           1   4.81
    pv_contig         1   4.84
    clone3_div_qk_pv  6  16.86  eager: three head copies, the keys' division, two GEMMs
    views_qk_pv       2   9.24  the two GEMMs on the views (the division then runs in the softmax kernel)
    stride2           2   7.72  every other column: ATen copies the operand first (the rule says so too)
"""

import torch
from torch.profiler import ProfilerActivity, profile

S, H, D = 128, 24, 64


def heads(t: torch.Tensor) -> torch.Tensor:
    return t.view(1, S, H, D).permute(0, 2, 1, 3)


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    x, y, z = (torch.randn(1, S, H * D, device="cuda") for _ in range(3))
    p = torch.randn(H, S, S, device="cuda").softmax(-1)
    qv, kv, vv = (heads(t).view(-1, S, D) for t in (x, y, z))
    qc, kc, vc = (heads(t).contiguous().view(-1, S, D) for t in (x, y, z))
    every_other = torch.randn(H, S, 2 * S, device="cuda")[:, :, ::2]

    def eager() -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v = (heads(t).contiguous().view(-1, S, D) for t in (x, y, z))
        return torch.bmm(q, k.transpose(-1, -2) / 8.0), torch.bmm(p, v)

    variants = {
        "qk_view": lambda: torch.bmm(qv, kv.transpose(-1, -2)),
        "qk_contig": lambda: torch.bmm(qc, kc.transpose(-1, -2)),
        "pv_view": lambda: torch.bmm(p, vv),
        "pv_contig": lambda: torch.bmm(p, vc),
        "clone3_div_qk_pv": eager,
        "views_qk_pv": lambda: (torch.bmm(qv, kv.transpose(-1, -2)), torch.bmm(p, vv)),
        "stride2": lambda: torch.bmm(every_other, vc),
    }
    for name, fn in variants.items():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        kernels = [e.name[:50] for e in prof.events() if e.device_type.name == "CUDA"]
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(500):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        print(name, len(kernels), round(start.elapsed_time(end) / 500 * 1000, 2), "us", kernels, flush=True)
    print(torch.__version__, torch.cuda.get_device_name())


if __name__ == "__main__":
    main()

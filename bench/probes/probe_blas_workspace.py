"""Which vendor calls make pygraph hold cuBLAS's workspace, and what recording them through cuBLASLt costs.

Both pygraph and reduce-overhead hold cuBLAS's 32 MB workspace (one per stream that records a cuBLAS
call) and cuBLASLt's 1 MB; eager holds neither in the benchmark's window where its products are
`linear` with a bias (cuBLASLt). This probe lists, per workload, each ATen call whose recording allocates
0.5 MB or more (the workspaces), then builds pygraph twice, once as is and once with
`torch.backends.cuda.preferred_blas_library("cublaslt")` for the whole build, and reports each build's
peak (the benchmark's window: a `profile=True` build and three calls), its time per call (rounds of 50
calls, the two builds alternating) and its kernels.

GPU machine: `python3 bench/probes/probe_blas_workspace.py bert_base,gpt2`.
"""

import statistics
import sys
import time

import torch

import pygraph
from pygraph.backend import aten_call
from pygraph.backend.cuda.calibrate import costs_for
from pygraph.tools.bench import _clean, _profile, _tf32
from pygraph.tools.workloads import WORKLOADS

MB = 2**20
LIBRARIES = ("cublas", "cublaslt")


def build(model: torch.nn.Module, inputs: list[tuple], library: str) -> tuple[object, float, list[str]]:
    """pygraph's build in the benchmark's window under `library`: the compiled model, its peak (MB) and
    the vendor calls that allocated 0.5 MB or more."""
    grew: list[str] = []
    call = aten_call.AtenCall.__call__

    def traced(self: aten_call.AtenCall, operands: list) -> list:
        before = torch.cuda.memory_allocated()
        out = call(self, operands)
        if torch.cuda.memory_allocated() - before >= MB // 2:
            grew.append(f"{self.op} +{(torch.cuda.memory_allocated() - before) / MB:.2f} MB")
        return out

    _clean()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    torch.backends.cuda.preferred_blas_library(library)
    aten_call.AtenCall.__call__ = traced
    try:
        fn = pygraph.export_and_compile(model, inputs[0], profile=True)
        for x in inputs[:3]:
            fn(*x)
        torch.cuda.synchronize()
    finally:
        aten_call.AtenCall.__call__ = call
        torch.backends.cuda.preferred_blas_library("cublas")
    return fn, (torch.cuda.max_memory_allocated() - base) / MB, grew


def main(names: list[str]) -> None:
    device = torch.device("cuda")
    for tf32 in (False, True):
        _tf32(tf32)
        costs_for(device)
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(device)
        inputs = [tuple(draw()) for _ in range(8)]
        with torch.no_grad():
            ref = model(*inputs[0])
            built = {}
            for library in LIBRARIES:
                fn, peak, grew = build(model, inputs, library)
                built[library] = fn
                err = (fn(*inputs[0]) - ref).norm() / ref.norm() if isinstance(ref, torch.Tensor) else None
                print(f"{name} {library}: peak {peak:.2f} MB, rel err (TF32) {err}", flush=True)
                for g in grew:
                    print(f"    {g}", flush=True)
            rounds: dict[str, list[float]] = {lib: [] for lib in LIBRARIES}
            for r in range(7):
                for library in LIBRARIES[r % 2 :] + LIBRARIES[: r % 2]:
                    fn = built[library]
                    for i in range(5):
                        fn(*inputs[i % 8])
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    for i in range(50):
                        fn(*inputs[i % 8])
                    torch.cuda.synchronize()
                    rounds[library].append((time.perf_counter() - start) * 1e3 / 50)
            for library in LIBRARIES:
                prof = _profile(built[library], inputs)
                top = ", ".join(f"{k['name'][:40]} {k['us']:.1f}" for k in prof["top"][:6])
                print(
                    f"{name} {library}: {statistics.median(rounds[library]):.4f} ms "
                    f"(min {min(rounds[library]):.4f}), {prof['kernels']:.0f} kernels, gpu {prof['gpu_ms']:.4f} ms; "
                    f"top: {top}",
                    flush=True,
                )
        del built
        _clean()


if __name__ == "__main__":
    main(sys.argv[1].split(","))

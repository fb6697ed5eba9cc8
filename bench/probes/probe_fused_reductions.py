"""Times generated reduction kernels against eager on the GPU: BERT-base's output block (bias + residual +
layer norm) and attention's scaled, masked softmax over 12 heads, which eager runs as several kernels each.
`python3 bench/probes/probe_fused_reductions.py` (from the repository's root, on a GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton.testing

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests")]
from test_pointwise_kernels import Case, compile_case, launcher, nz  # noqa: E402
from test_reduction_kernels import layer_norm_residual, on_gpu  # noqa: E402

CASES = {
    "layer_norm.residual.bert": layer_norm_residual(768, rows=128),
    "softmax.scaled.masked.bert": Case(
        lambda x, m: torch.softmax(x * 0.125 + m, dim=-1), lambda: (nz(12, 128, 128) * 8, nz(1, 1, 128))
    ),
}


def main() -> None:
    for name, case in CASES.items():
        torch.manual_seed(0)
        inputs = case.inputs()
        plan, _ = compile_case(case, inputs)
        inputs = tuple(on_gpu(t) for t in inputs)
        run, _ = launcher(plan, inputs)
        fused = triton.testing.do_bench(run, return_mode="median")
        eager = triton.testing.do_bench(
            lambda case=case, inputs=inputs: case.fn(*inputs), return_mode="median"
        )
        print(f"{name}: generated {fused * 1e3:.1f} us, eager {eager * 1e3:.1f} us", flush=True)


if __name__ == "__main__":
    main()

"""Generated kernels compiled under each choice of one of Triton's compiler options that
`backend/cuda/compile.triton_options` sets: floating-point contraction (`enable_fp_fusion`) off, on, and
the rule `contracts` applies (none in kernels that round to half precision); libdevice's subnormals
(`enable_reflect_ftz`) flushed or kept. GPU time per call and error, against eager (the benchmark's metric)
and against the model run in float64 (which of the two rounds closer to the exact result), and the
elements that differ from eager's.

On the GPU machine: `python3 bench/probes/probe_fp_fusion.py [--option subnormals] [--dtype bfloat16]
[workloads]` (output: bench/results/probe-fp-fusion-h200.log, float32; fp-fusion-half-s37-h100.log,
bfloat16; subnormals-s38-h100.log).
"""

import argparse
import copy

import torch
import torch.utils._pytree as pytree

import pygraph
from pygraph.backend.cuda import compile as kernel_compile
from pygraph.metrics import relative_error
from pygraph.tools.bench import _profile
from pygraph.tools.workloads import WORKLOADS

RULE, KEPT = kernel_compile.contracts, kernel_compile.KEEP_SUBNORMALS
CHOICES = {
    "contraction": {"off": lambda kernel: False, "on": lambda kernel: True, "rule": RULE},
    "subnormals": {"flushed": {"enable_reflect_ftz": True}, "kept": KEPT},
}


def _choose(option: str, choice: object) -> None:
    if option == "contraction":
        kernel_compile.contracts = choice
    else:
        kernel_compile.KEEP_SUBNORMALS = choice


def _cast(value, dtype: torch.dtype):
    return pytree.tree_map_only(torch.Tensor, lambda t: t.to(dtype) if t.is_floating_point() else t, value)


def _differing(got, ref) -> str:
    pairs = zip(pytree.tree_leaves(got), pytree.tree_leaves(ref), strict=True)
    counts = [(int((g != r).sum()), r.numel()) for g, r in pairs if isinstance(r, torch.Tensor)]
    return f"{sum(c for c, _ in counts)} of {sum(n for _, n in counts)}"


def main(names: list[str], dtype: torch.dtype, option: str) -> None:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(device)
        inputs = [tuple(draw()) for _ in range(3)]
        exact_model = copy.deepcopy(model).double()
        model, inputs = model.to(dtype), [_cast(x, dtype) for x in inputs]
        with torch.no_grad():
            refs = [model(*x) for x in inputs]
            exact = [exact_model(*_cast(x, torch.float64)) for x in inputs]
            del exact_model
            eager_exact = max(
                relative_error(_cast(r, torch.float64), e) for r, e in zip(refs, exact, strict=True)
            )
            for choice, value in CHOICES[option].items():
                _choose(option, value)
                compiled = pygraph.export_and_compile(model, inputs[0])
                got = [compiled(*x) for x in inputs]
                to_eager = max(relative_error(g, r) for g, r in zip(got, refs, strict=True))
                to_exact = max(
                    relative_error(_cast(g, torch.float64), e) for g, e in zip(got, exact, strict=True)
                )
                profiled = _profile(compiled, inputs, calls=20)
                print(
                    f"{name:20s} {dtype} {option} {choice:7s} gpu {profiled['gpu_ms'] * 1e3:8.2f} us/call, "
                    f"{profiled['kernels']:5.0f} kernels; error vs eager {to_eager:.2e} ({_differing(got[0], refs[0])} "
                    f"elements differ), vs float64 {to_exact:.2e} (eager vs float64 {eager_exact:.2e})",
                    flush=True,
                )
                del compiled, got
            kernel_compile.contracts, kernel_compile.KEEP_SUBNORMALS = RULE, KEPT


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--option", default="contraction", choices=list(CHOICES))
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("workloads", nargs="?", default="pointwise_1m,mlp,mobilenetv3_small,bert_base")
    args = parser.parse_args()
    main(args.workloads.split(","), getattr(torch, args.dtype), args.option)

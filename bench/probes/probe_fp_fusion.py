"""Generated kernels compiled with and without floating-point contraction (`enable_fp_fusion`): GPU time
per call and error, against eager in float32 (the benchmark's metric) and against the model run in
float64 (which of the two rounds closer to the exact result).

On the GPU machine: `python3 bench/probes/probe_fp_fusion.py [workloads]`
(output: bench/results/probe-fp-fusion-h200.log).
"""

import copy
import sys

import torch

import pygraph
from pygraph.backend.cuda import compile as kernel_compile
from pygraph.metrics import relative_error
from pygraph.tools.bench import _profile
from pygraph.tools.workloads import WORKLOADS


def main(names: list[str]) -> None:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(device)
        inputs = [tuple(draw()) for _ in range(3)]
        with torch.no_grad():
            refs = [model(*x) for x in inputs]
            exact_model = copy.deepcopy(model).double()
            exact = [exact_model(*(t.double() if t.is_floating_point() else t for t in x)) for x in inputs]
            del exact_model
            for fusion in (False, True):
                kernel_compile.OPTIONS["enable_fp_fusion"] = fusion
                compiled = pygraph.export_and_compile(model, inputs[0])
                got = [compiled(*x) for x in inputs]
                to_eager = max(relative_error(g, r) for g, r in zip(got, refs, strict=True))
                to_exact = max(
                    relative_error(torch.utils._pytree.tree_map(lambda t: t.double(), g), e)
                    for g, e in zip(got, exact, strict=True)
                )
                profiled = _profile(compiled, inputs, calls=20)
                eager_exact = max(
                    relative_error(torch.utils._pytree.tree_map(lambda t: t.double(), r), e)
                    for r, e in zip(refs, exact, strict=True)
                )
                print(
                    f"{name:20s} fp_fusion={fusion!s:5s} gpu {profiled['gpu_ms'] * 1e3:8.2f} us/call, "
                    f"{profiled['kernels']:5.0f} kernels; error vs eager {to_eager:.2e}, vs float64 "
                    f"{to_exact:.2e} (eager vs float64 {eager_exact:.2e})",
                    flush=True,
                )
                del compiled, got


if __name__ == "__main__":
    main(
        sys.argv[1].split(",")
        if len(sys.argv) > 1
        else ["pointwise_1m", "mlp", "mobilenetv3_small", "bert_base"]
    )

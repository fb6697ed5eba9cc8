"""GPT-2 family: addmm with its bias (cuBLAS's beta=1 path) against mm and the bias in the next kernel.

On the GPU machine: `python3 bench/probes/probe_addmm.py` (output: bench/results/probe-addmm-h200.log, taken
before split-bias split addmm by default: it compared the default then with `split-bias{matmuls=true}`,
which in these models splits the same addmm; the variants below are the same two today).
"""

import torch

import pygraph
import pygraph.api as api
from pygraph.metrics import relative_error
from pygraph.tools.workloads import WORKLOADS


def time_ms(fn: object, x: tuple, calls: int = 50) -> float:
    for _ in range(3):
        fn(*x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn(*x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the bench times
    default = api.TENSOR_PIPELINE
    variants = {
        "addmm": default.replace("split-bias", "split-bias{addmm=false}"),
        "mm+bias": default,
    }
    for name in ("gpt2", "distilgpt2_I16"):
        model, make = WORKLOADS[name].build(torch.device("cuda"))
        x = make()
        with torch.no_grad():
            for label, pipeline in variants.items():
                api.TENSOR_PIPELINE = pipeline
                compiled = pygraph.export_and_compile(model, x)
                err = relative_error(compiled(*x), model(*x))  # TF32 in both: a rough check only
                print(f"{name:16s} {label:8s} {time_ms(compiled, x):.3f} ms  err {err:.1e}", flush=True)
        api.TENSOR_PIPELINE = default


if __name__ == "__main__":
    main()

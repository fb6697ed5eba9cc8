"""Times cases of the generality sweep (`sweep2.py`) on the GPU: eager, pygraph and reduce-overhead, per
call of calls queued back to back, with each one's error against eager.

Usage (GPU machine, from the repository's root): `python3 bench/probes/probe_sweep_timing.py NAME ...`
(case names as sweep2 lists them, e.g. `hf/encodec op/yolo_decode`). TF32 is off.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

import pygraph
from pygraph.metrics import relative_error

sys.path.insert(0, str(Path(__file__).parent))
from sweep2 import CASES, _cast
from timing import queued_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    for name in args.names:
        torch.manual_seed(0)
        with torch.device("cuda"):
            model, draw = CASES[name]()
        model = model.eval().cuda()
        inputs = [_cast(draw(seed), torch.float32, "cuda") for seed in range(4)]
        with torch.no_grad():
            reference = model(*inputs[1])
            start = time.perf_counter()
            compiled = pygraph.export_and_compile(model, inputs[0])
            compiled(*inputs[0])
            systems = {"eager": (model, 0.0), "pygraph": (compiled, time.perf_counter() - start)}
            start = time.perf_counter()
            ro = torch.compile(model, mode="reduce-overhead")
            try:
                for _ in range(3):
                    ro(*inputs[0])
                systems["reduce-overhead"] = (ro, time.perf_counter() - start)
            except Exception as exc:  # (reported, the others go on)
                print(f"{name}: reduce-overhead failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            coverage = compiled.explain().coverage["after"]
            print(f"{name}: pygraph coverage {coverage:.3f}, nodes {compiled.stats()['nodes']}")
            for system, (fn, build_s) in systems.items():
                error = relative_error(fn(*inputs[1]), reference)
                per_call = queued_us(lambda i, fn=fn, inputs=inputs: fn(*inputs[i % 4]), calls=200)
                print(
                    f"  {system:16s} {per_call:9.1f} us/call queued  err {error:.1e}  build {build_s:5.1f} s"
                )


if __name__ == "__main__":
    main()

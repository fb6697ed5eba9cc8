"""GPU time of a workload's pointwise kernels per block size and warp count (codegen-triton's `Writer`
picks BLOCK = up to `max-block` elements and a warp per 256 of them): whether compute-heavy kernels
(pointwise_1m: 45 transcendental calls per element) want fewer elements per thread.

On the GPU machine: `python3 bench/probes/probe_pointwise_blocks.py pointwise_1m`
(output: bench/results/probe-pointwise-blocks-h200.log).
"""

import sys

import torch

import pygraph
from pygraph.passes import codegen_triton
from pygraph.tools.bench import _profile
from pygraph.tools.workloads import WORKLOADS

_ORIGINAL = codegen_triton.Writer.__init__


def forced(block: int, warps: int):
    def init(self, fn, layouts, max_block, indirect) -> None:
        _ORIGINAL(self, fn, layouts, block, indirect)
        self.num_warps = warps

    return init


def main(name: str) -> None:
    torch.manual_seed(0)
    model, draw = WORKLOADS[name].build(torch.device("cuda"))
    inputs = [tuple(draw()) for _ in range(3)]
    for block in (128, 256, 512, 1024, 2048):
        for warps in (1, 2, 4, 8):
            codegen_triton.Writer.__init__ = forced(block, warps)
            with torch.no_grad():
                compiled = pygraph.export_and_compile(model, inputs[0])
                profiled = _profile(compiled, inputs, calls=20)
            kernels = ", ".join(f"{k['name'][:40]} {k['us']:.2f}" for k in profiled["top"][:3])
            print(
                f"{name} BLOCK {block:5d} warps {warps}: gpu {profiled['gpu_ms'] * 1e3:8.2f} us/call ({kernels})",
                flush=True,
            )
            del compiled
    codegen_triton.Writer.__init__ = _ORIGINAL


if __name__ == "__main__":
    main(sys.argv[1])

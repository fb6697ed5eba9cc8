"""Does out-form change what a bare `cuGraphLaunch` of pygraph's graph costs on the host? The benchmark's
`launch_us` rose with it on resnet18, bert_base and gpt2 (3 -> 13, 3 -> 27, 16 -> 43 us) while the graphs
kept their nodes and edges. Each workload is compiled with the default plan pipeline and without
out-form, and `measure_launch_us` taken for both, three times, alternating.

On the GPU machine: `python3 bench/probes/probe_launch_out_form.py resnet18,bert_base` (output:
bench/results/probe-launch-out-form-h200.log).
"""

import sys

import torch

import pygraph
from pygraph import api
from pygraph.tools.workloads import WORKLOADS


def main(names: list[str]) -> None:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    default = api.PLAN_PIPELINE
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(torch.device("cuda"))
        x = tuple(draw())
        compiled = {}
        for variant, pipeline in [("out-form", default), ("results", default.replace("out-form,", ""))]:
            api.PLAN_PIPELINE = pipeline
            with torch.no_grad():
                compiled[variant] = pygraph.export_and_compile(model, x)
                for _ in range(3):
                    compiled[variant](*x)
        api.PLAN_PIPELINE = default
        for _ in range(3):
            for variant, c in compiled.items():
                with torch.no_grad():
                    us = c._backend.measure_launch_us(x)
                nodes = c.stats()["nodes"]
                print(f"{name} {variant:9s} launch {us:6.2f} us  nodes {nodes}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(","))

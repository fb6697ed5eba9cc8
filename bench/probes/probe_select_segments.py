"""What select-graphs chose for a workload's segments under `profile=True`, with the measured candidates.

On the GPU machine: `python3 bench/probes/probe_select_segments.py pointwise_1m` (output:
bench/results/probe-select-pointwise-h200.log).
"""

import json
import sys

import torch

import pygraph
from pygraph.tools.workloads import WORKLOADS


def main(name: str) -> None:
    model, make = WORKLOADS[name].build(torch.device("cuda"))
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, make(), profile=True)
        compiled(*make())
        print(json.dumps(compiled.explain().segments, indent=1, default=str))
        print(json.dumps(compiled.stats(), indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1])

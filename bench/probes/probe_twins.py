"""Why `pygraph` and `pygraph_all_graphs` differ on a workload where both replay one graph of the same nodes.

Builds the workload's model three ways in one process (profile=True with selection, as the benchmark's
`pygraph`; every segment forced into a graph, as `pygraph_all_graphs`; selection without profiling),
prints how their plans differ, then times them in alternating rounds (the benchmark's protocol: 50 calls
on rotating inputs per round, synchronised around each round) in both orders.

On the GPU machine: `python3 bench/probes/probe_twins.py pointwise_1m` (output:
bench/results/probe-twins-pointwise-h200.log).
"""

import difflib
import statistics
import sys
import time

import torch

import pygraph
from pygraph.knobs import knobs
from pygraph.tools.workloads import WORKLOADS

ROUNDS, CALLS, ROTATION = 20, 50, 32


def main(name: str) -> None:
    model, make = WORKLOADS[name].build(torch.device("cuda"))
    inputs = [make() for _ in range(ROTATION)]
    with torch.no_grad():
        built = {}
        for label, graphs, profile in (
            ("profiled", "auto", True),
            ("all", "all", False),
            ("auto", "auto", False),
        ):
            with knobs.scope(graphs=graphs):
                built[label] = pygraph.export_and_compile(model, inputs[0], profile=profile)
            for x in inputs[:3]:
                built[label](*x)
        plans = {label: c.ir("plan").splitlines() for label, c in built.items()}
        for label in ("all", "auto"):
            diff = list(
                difflib.unified_diff(plans["profiled"], plans[label], "profiled", label, n=0, lineterm="")
            )
            print(f"plan diff profiled -> {label}: {len(diff)} lines")
            print("\n".join(diff[:40]))
        for order in (("profiled", "all", "auto"), ("auto", "all", "profiled")):
            rounds = {label: [] for label in order}
            for _ in range(ROUNDS):
                for label in order:
                    fn = built[label]
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    for i in range(CALLS):
                        fn(*inputs[i % ROTATION])
                    torch.cuda.synchronize()
                    rounds[label].append((time.perf_counter() - start) * 1e6 / CALLS)
            print(
                f"order {order}: "
                + ", ".join(
                    f"{label} {statistics.median(r):.2f} us [{min(r):.2f}, {max(r):.2f}]"
                    for label, r in rounds.items()
                )
            )


if __name__ == "__main__":
    main(sys.argv[1])

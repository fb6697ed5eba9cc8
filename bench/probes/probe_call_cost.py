"""Host time of a compiled call against the bare launch of its graph, for one code version at a time.

Per workload: the call's host time with the GPU idle before it (the benchmark's `host_us`), the bare
`cuGraphLaunch` of its first graph measured the same way (`launch_us`), and the time per call of 500 calls
queued back to back (what a serving loop pays). Run it for two checkouts in one GPU session to compare
code versions on the same machine, alternating them, e.g. (output: bench/results/probe-call-cost-*.log):

    PYTHONPATH=old:$SITE python3 bench/probes/probe_call_cost.py --label old   (old: `git archive REV pygraph`)
    PYTHONPATH=.:$SITE python3 bench/probes/probe_call_cost.py --label new
"""

import argparse

import torch
from timing import idle_host_us, queued_us

import pygraph
from pygraph.backend.cuda import driver
from pygraph.tools.workloads import WORKLOADS


def measure(name: str, label: str) -> None:
    torch.manual_seed(0)
    model, draw = WORKLOADS[name].build(torch.device("cuda"))
    inputs = [draw() for _ in range(8)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, inputs[0])
        for x in inputs:
            compiled(*x)
        runtime = compiled._backend
        graph = runtime._graphs[0]
        python = count_python_calls()
        host = idle_host_us(lambda i: compiled(*inputs[i % 8]))
        same = idle_host_us(lambda i: compiled(*inputs[0]))
        queued = queued_us(lambda i: compiled(*inputs[i % 8]))
        held = compiled(*inputs[0])
        launch = idle_host_us(lambda i: driver.launch_graph(graph.graph_exec, runtime._stream))
        del held
    print(
        f"{label} {name}: host_us {host:.2f} (same input {same:.2f}), launch_us {launch:.2f}, "
        f"queued_us {queued:.2f}, calls on the Python path after warm-up {python[0]}, "
        f"graph nodes {compiled.stats()['nodes']}",
        flush=True,
    )


def count_python_calls() -> list[int]:
    """A counter of the calls that miss the native replay from now on (`CompiledModel._call`)."""
    count, original = [0], pygraph.CompiledModel._call

    def counted(self: pygraph.CompiledModel, *args: object) -> object:
        count[0] += 1
        return original(self, *args)

    pygraph.CompiledModel._call = counted
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", required=True)
    parser.add_argument("--workloads", default="mlp,bert_base,gpt2")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    for name in args.workloads.split(","):
        measure(name, args.label)


if __name__ == "__main__":
    main()

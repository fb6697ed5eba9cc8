"""What makes a bare `cuGraphLaunch` slow: memset nodes, or parallel branches? `probe_launch_nodes.py`
found whole graphs launching in 2 us (mobilenetv3_small: 114 nodes, no memset) to 79 us (bert_base in IEEE float32: 157 nodes, 60 child
graphs holding a memset beside cuBLAS's split-K kernels), each child alone in about 2 us.

Graphs of 100 one-kernel children (`x.add_(1)` recorded by torch) in a chain, with memsets added in
different places: none; 10 top-level memset nodes; 10 children holding a memset and a kernel; the same
children's nodes inlined into the graph (GraphBuilder.inline); and the memsets of those children as
kernel nodes instead (a recording of `y.zero_()`); 10 children holding two parallel kernels. Then the same 100 children as groups of W parallel
branches (W = 1, 2, 4, 10) joined after each group. Host time of the launch, the GPU idle before.

On the GPU machine: `python3 bench/probes/probe_launch_graphs.py`
(output: bench/results/probe-launch-graphs-h200.log).
"""

import torch
from probe_launch_nodes import launch_us

from pygraph.backend.cuda import driver
from pygraph.backend.cuda.graph import GraphBuilder


def record(fn) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        fn()
    return graph


def main() -> None:
    torch.cuda.init()
    context = driver.current_context(0)
    stream = driver.cu.CUstream(torch.cuda.current_stream().cuda_stream)
    x = torch.zeros(256, device="cuda")
    y = torch.zeros(1 << 16, device="cuda")
    kernel = record(lambda: x.add_(1))
    zero_kernel = record(lambda: y.zero_())
    handle = lambda g: driver.cu.CUgraph(g.raw_cuda_graph())  # noqa: E731

    def build(variant: str) -> float:
        builder = GraphBuilder(context)
        for i in range(100):
            deps = [len(builder.nodes) - 1] if builder.nodes else []
            if i % 10 == 0 and variant != "none":
                if variant == "top-level memset":
                    builder.memset(deps, y.data_ptr(), 0, y.numel() * 4)
                    deps = [len(builder.nodes) - 1]
                    builder.child(deps, handle(kernel))
                    continue
                if variant == "child: memset, kernel":
                    child = GraphBuilder(context)
                    child.memset([], y.data_ptr(), 0, y.numel() * 4)
                    child.child([0], handle(kernel))
                    builder.child(deps, child.graph)
                    continue
                if variant == "inlined: memset, kernel":
                    builder.memset(deps, y.data_ptr(), 0, y.numel() * 4)
                    builder.inline([len(builder.nodes) - 1], handle(kernel), {})
                    continue
                if variant == "child: two parallel kernels":
                    child = GraphBuilder(context)
                    child.child([], handle(kernel))
                    child.child([], handle(zero_kernel))
                    builder.child(deps, child.graph)
                    continue
                if variant == "child: zero kernel, kernel":
                    builder.child(deps, handle(zero_kernel))
                    builder.child([len(builder.nodes) - 1], handle(kernel))
                    continue
            builder.child(deps, handle(kernel))
        graph_exec = builder.instantiate()
        us = launch_us(graph_exec, stream, calls=60)
        driver.call("cuGraphExecDestroy", graph_exec)
        return us

    for variant in (
        "none",
        "top-level memset",
        "child: memset, kernel",
        "inlined: memset, kernel",
        "child: zero kernel, kernel",
        "child: two parallel kernels",
    ):
        print(f"100 kernel children, {variant:28s} {build(variant):7.2f} us")

    for width in (1, 2, 4, 10):
        builder = GraphBuilder(context)
        join: list[int] = []
        for _ in range(100 // width):
            for _ in range(width):
                builder.child(join, handle(kernel))
            join = list(range(len(builder.nodes) - width, len(builder.nodes)))
        graph_exec = builder.instantiate()
        print(
            f"100 kernel children in groups of {width:2d} parallel branches {launch_us(graph_exec, stream, calls=60):7.2f} us"
        )
        driver.call("cuGraphExecDestroy", graph_exec)


if __name__ == "__main__":
    main()

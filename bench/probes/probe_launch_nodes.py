"""Which nodes make a bare `cuGraphLaunch` slow: gpt2's first graph launched in 35 us, bert_base's in 3
(ninth session, H200), with more child nodes in bert's. For each workload named: the whole graph's
launch time, then each child graph (one recorded vendor call) instantiated and launched alone, with its
kernels' names and launch attributes (cluster shape, programmatic serialization) and edge types; the
children are grouped by their kernels' names, slowest first.

On the GPU machine: `python3 bench/probes/probe_launch_nodes.py gpt2,bert_base`
(output: bench/results/probe-launch-nodes-h200.log).
"""

import statistics
import sys
import time
from collections import defaultdict

import torch

import pygraph
from pygraph.backend.cuda import driver
from pygraph.backend.cuda.driver import cu
from pygraph.tools.workloads import WORKLOADS

ATTRIBUTES = [
    "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION",
    "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION",
    "CU_LAUNCH_ATTRIBUTE_COOPERATIVE",
    "CU_LAUNCH_ATTRIBUTE_PRIORITY",
    "CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN",
]


def launch_us(graph_exec: cu.CUgraphExec, stream: cu.CUstream, calls: int = 40) -> float:
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        driver.launch_graph(graph_exec, stream)
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def nodes(graph: cu.CUgraph) -> list:
    count = driver.call("cuGraphGetNodes", graph, 0)[1]
    return list(driver.call("cuGraphGetNodes", graph, count)[0]) if count else []


def edge_types(graph: cu.CUgraph) -> list[int]:
    out = cu.cuGraphGetEdges(graph, 0)
    count = out[-1]
    if not count:
        return []
    out = cu.cuGraphGetEdges(graph, count)
    data = out[3] if len(out) >= 5 and out[3] is not None else []
    return [int(d.type) for d in data]


def kernel_name(node: cu.CUgraphNode) -> str:
    p = driver.call("cuGraphKernelNodeGetParams", node)
    if int(p.func):
        result, name = cu.cuFuncGetName(p.func)
    else:
        result, name = cu.cuKernelGetName(p.kern)
    text = name.decode() if result == driver.SUCCESS and name else "?"
    return f"{text[:70]} grid=({p.gridDimX},{p.gridDimY},{p.gridDimZ}) block={p.blockDimX} smem={p.sharedMemBytes}"


def attributes(node: cu.CUgraphNode) -> str:
    found = []
    for name in ATTRIBUTES:
        attr = getattr(cu.CUlaunchAttributeID, name, None)
        if attr is None:
            continue
        result, value = cu.cuGraphKernelNodeGetAttribute(node, attr)
        if result != driver.SUCCESS:
            found.append(f"{name[22:].lower()}=err")
            continue
        short = name.removeprefix("CU_LAUNCH_ATTRIBUTE_").lower()
        if short == "cluster_dimension":
            dims = (value.clusterDim.x, value.clusterDim.y, value.clusterDim.z)
            if dims not in ((0, 0, 0), (1, 1, 1)):
                found.append(f"cluster={dims}")
        elif short == "programmatic_stream_serialization" and value.programmaticStreamSerializationAllowed:
            found.append("pss")
        elif short == "cooperative" and value.cooperative:
            found.append("cooperative")
        elif short == "priority" and value.priority:
            found.append(f"priority={value.priority}")
        elif short == "mem_sync_domain" and int(value.memSyncDomain):
            found.append(f"domain={int(value.memSyncDomain)}")
    return " ".join(found)


def describe(graph: cu.CUgraph) -> list[str]:
    lines = []
    for node in nodes(graph):
        kind = driver.call("cuGraphNodeGetType", node)
        if kind == cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
            lines.append(f"kernel {kernel_name(node)} {attributes(node)}".rstrip())
        else:
            lines.append(kind.name.removeprefix("CU_GRAPH_NODE_TYPE_").lower())
    return lines


def main(names: list[str]) -> None:
    device = torch.device("cuda")
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(device)
        x = list(draw())
        with torch.no_grad():
            compiled = pygraph.export_and_compile(model, tuple(x))
            for _ in range(3):
                compiled(*x)
        runtime = compiled._backend
        stream = runtime._stream
        whole = runtime.measure_launch_us(x)
        top = runtime._graphs[0].graph
        kinds = defaultdict(int)
        for node in nodes(top):
            kinds[
                driver.call("cuGraphNodeGetType", node).name.removeprefix("CU_GRAPH_NODE_TYPE_").lower()
            ] += 1
        print(
            f"== {name}: whole graph launch {whole:.2f} us; top-level nodes {dict(kinds)}; "
            f"edge types {sorted(set(edge_types(top)))}"
        )
        groups: dict[str, list[float]] = defaultdict(list)
        for node in nodes(top):
            if driver.call("cuGraphNodeGetType", node) != cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_GRAPH:
                continue
            child = driver.call("cuGraphChildGraphNodeGetGraph", node)
            alone = driver.call("cuGraphInstantiate", driver.call("cuGraphClone", child), 0)
            us = launch_us(alone, stream)
            driver.call("cuGraphExecDestroy", alone)
            key = " | ".join(describe(child)) + f" | edges {sorted(set(edge_types(child)))}"
            groups[key].append(us)
        empty = cu.cuGraphCreate(0)[1]
        empty_exec = driver.call("cuGraphInstantiate", empty, 0)
        print(f"   an empty graph: {launch_us(empty_exec, stream):.2f} us")
        for key, times in sorted(groups.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"   {len(times):3d} x {statistics.median(times):6.2f} us  {key}")
        del compiled, runtime
        torch.cuda.synchronize()


if __name__ == "__main__":
    main(
        sys.argv[1].split(",")
        if len(sys.argv) > 1
        else ["gpt2", "bert_base", "vit_tiny", "mobilenetv3_small"]
    )

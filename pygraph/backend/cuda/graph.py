"""The explicit CUDA graph builder, and the recording of one library call into a graph of its own.

`GraphBuilder` adds one node per plan node, in order, with one method per kind; each method takes
`deps`, the indices of earlier plan nodes it waits for (`pygraph.ir.plan.dependencies`). A plan node
that does nothing on the GPU (zero bytes, a recording without work) adds no node: whoever depends on
it depends on its own dependencies instead, so indices keep their meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from . import driver
from .compile import Function, KernelParams
from .driver import cu

NODE_KINDS = {
    cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL: "kernel",
    cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMCPY: "memcpy",
    cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET: "memset",
    cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_GRAPH: "child",
}


class GraphBuilder:
    def __init__(self, context: cu.CUcontext) -> None:
        self.context = context  # copy and fill nodes name the context they run in
        self.graph: cu.CUgraph = driver.call("cuGraphCreate", 0)
        self.nodes: list[list[cu.CUgraphNode]] = []  # per plan node: the graph nodes that stand for it

    def kernel(
        self, deps: Sequence[int], function: Function, grid: Sequence[int], params: KernelParams
    ) -> None:
        """The node copies the parameter values: `params` may change or go once this returns."""
        p = cu.CUDA_KERNEL_NODE_PARAMS()
        p.func = function.handle
        p.gridDimX, p.gridDimY, p.gridDimZ = grid
        p.blockDimX, p.blockDimY, p.blockDimZ = function.block, 1, 1
        p.sharedMemBytes = function.cubin.shared
        p.kernelParams = params.address
        self._add("cuGraphAddKernelNode", deps, p)

    def memcpy(self, deps: Sequence[int], dst: int, src: int, nbytes: int) -> None:
        """A 1-D device-to-device copy of `nbytes` bytes."""
        if nbytes == 0:
            return self.skip(deps)
        p = cu.CUDA_MEMCPY3D()
        p.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        p.srcDevice = src
        p.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        p.dstDevice = dst
        p.WidthInBytes, p.Height, p.Depth = nbytes, 1, 1
        self._add("cuGraphAddMemcpyNode", deps, p, self.context)

    def memset(self, deps: Sequence[int], dst: int, byte: int, nbytes: int) -> None:
        """Every one of `nbytes` bytes becomes `byte` (1-byte elements: any size, any alignment)."""
        if nbytes == 0:
            return self.skip(deps)
        p = cu.CUDA_MEMSET_NODE_PARAMS()
        p.dst = dst
        p.elementSize = 1
        p.value = byte * 0x01010101  # the byte in each byte of the 32-bit value, as XLA passes it
        p.width, p.height, p.pitch = nbytes, 1, 0
        self._add("cuGraphAddMemsetNode", deps, p, self.context)

    def child(self, deps: Sequence[int], graph: cu.CUgraph) -> None:
        """A child graph node; the driver clones `graph` into it."""
        self._add("cuGraphAddChildGraphNode", deps, graph)

    def skip(self, deps: Sequence[int]) -> None:
        self.nodes.append(self._deps(deps))

    def instantiate(self) -> cu.CUgraphExec:
        return driver.call("cuGraphInstantiate", self.graph, 0)

    def _deps(self, deps: Sequence[int]) -> list[cu.CUgraphNode]:
        seen: dict[int, cu.CUgraphNode] = {}
        for i in deps:
            for node in self.nodes[i]:
                seen.setdefault(int(node), node)
        return list(seen.values())

    def _add(self, call: str, deps: Sequence[int], *params: object) -> None:
        nodes = self._deps(deps)
        self.nodes.append([driver.call(call, self.graph, nodes, len(nodes), *params)])


def node_kinds(graph: cu.CUgraph) -> list[str]:
    """The kind of each top-level node of `graph`, read back from the driver (child graphs are "child")."""
    count = driver.call("cuGraphGetNodes", graph, 0)[1]
    if count == 0:
        return []
    nodes, _ = driver.call("cuGraphGetNodes", graph, count)
    kinds = [driver.call("cuGraphNodeGetType", node) for node in nodes]
    return [NODE_KINDS.get(k, k.name.removeprefix("CU_GRAPH_NODE_TYPE_").lower()) for k in kinds]


_side_streams: dict[int, torch.cuda.Stream] = {}


def side_stream(device: torch.device | str) -> torch.cuda.Stream:
    """The one stream per device on which runtimes warm up and record vendor calls. Shared, because
    vendor libraries may keep a workspace per stream (cuBLAS: 32 MiB on Hopper, until dropped)."""
    device = torch.device(device)
    index = torch.cuda.current_device() if device.index is None else device.index
    if index not in _side_streams:
        _side_streams[index] = torch.cuda.Stream(index)
    return _side_streams[index]


@dataclass
class Recording:
    """One library call recorded alone; holds torch's graph, which owns the CUgraph and keeps the pool."""

    graph: torch.cuda.CUDAGraph

    @property
    def handle(self) -> cu.CUgraph:
        return cu.CUgraph(self.graph.raw_cuda_graph())


def record(
    call: Callable[[], list[torch.Tensor]], stream: torch.cuda.Stream, pool: object
) -> tuple[Recording, list[torch.Tensor]]:
    """Records `call` with torch's stream capture into a graph of its own; returns it and the outputs.

    The caller runs `call` once on `stream` first (vendor libraries set up handles on first use, which
    must not happen during capture). Outputs and workspaces come from `pool`, shared by the runtime's
    recordings: memory freed there is reused by later recordings, so the caller orders each recording
    after every node that used memory freed before it (`pygraph.ir.plan.dependencies`). The recordings'
    cuBLAS workspace must come from `pool` too (`own_workspaces`).
    """
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph, pool=pool, stream=stream):
        outputs = call()
    return Recording(graph), outputs


@contextmanager
def own_workspaces() -> Iterator[None]:
    """Around a runtime's recordings: cuBLAS keeps one workspace per stream for the process, and anyone may
    drop it (reduce-overhead's recordings do), which would leave recorded graphs writing freed memory.
    Dropped before the first recording, the workspace the recordings share is allocated by the first
    capture, from their pool; dropped after the last, it stays there, reused by no one else."""
    torch._C._cuda_clearCublasWorkspaces()
    try:
        yield
    finally:
        torch._C._cuda_clearCublasWorkspaces()

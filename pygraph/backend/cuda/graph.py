"""The explicit CUDA graph builder, and the recording of one library call into a graph of its own.

`GraphBuilder` adds one node per plan node, in order, with one method per kind; each method takes
`deps`, the indices of earlier plan nodes it waits for (`pygraph.ir.plan.dependencies`). A plan node
that does nothing on the GPU (zero bytes, a recording without work) adds no node: whoever depends on
it depends on its own dependencies instead, so indices keep their meaning.

A recording is added as a child node, or, where a call's address changes every call ("patch"),
inlined: its nodes copied into the graph, with the parameter bytes of its kernels in memory of our own,
so that the runtime can rewrite the address in them (`cuGraphExecKernelNodeSetParams` needs a top-level
node). Each kernel's parameters are scanned word by word: every 8-byte-aligned word pointing into the
buffer (its start, or an address inside it: a call writing a view of the output, row-phases' products)
becomes a place to patch, the new address plus the same distance; a recording with such an address at
an unaligned place (a packed struct), or with a node other than a kernel or an unrelated memset, is
refused (`NotPatchable`), since patching would leave it reading the old buffer.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

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
        self.kernel_nodes: set[int] = set()  # the kernel nodes: a programmatic edge may start at one
        self.programmatic_edges = 0

    def kernel(
        self, deps: Sequence[int], function: Function, grid: Sequence[int], params: KernelParams
    ) -> cu.CUDA_KERNEL_NODE_PARAMS:
        """The node copies the parameter values: `params` may change or go once this returns. Returns the
        node's parameters, which point at `params` (for later updates of the instantiated node)."""
        p = cu.CUDA_KERNEL_NODE_PARAMS()
        p.func = function.handle
        p.gridDimX, p.gridDimY, p.gridDimZ = grid
        p.blockDimX, p.blockDimY, p.blockDimZ = function.block, 1, 1
        p.sharedMemBytes = function.cubin.shared
        p.kernelParams = params.address
        if not function.cubin.waits:
            self._add("cuGraphAddKernelNode", deps, p)
        else:  # it waits first (compile.py): its edges from kernel nodes are programmatic
            nodes = self._deps(deps)
            early = [n for n in nodes if int(n) in self.kernel_nodes]
            plain = [n for n in nodes if int(n) not in self.kernel_nodes]
            node = driver.call("cuGraphAddKernelNode", self.graph, plain, len(plain), p)
            if early:
                driver.call(
                    "cuGraphAddDependencies",
                    self.graph,
                    early,
                    [node] * len(early),
                    [_PROGRAMMATIC] * len(early),
                    len(early),
                )
                self.programmatic_edges += len(early)
            self.nodes.append([node])
        self.kernel_nodes.add(int(self.nodes[-1][0]))
        return p

    def inline(
        self, deps: Sequence[int], graph: cu.CUgraph, buffers: Mapping[int, tuple[int, int]]
    ) -> list[Patch]:
        """Copies the nodes of `graph` (a recording) into this graph after `deps`; returns the kernel
        nodes whose parameters hold the address of one of `buffers` (key -> (address, bytes)), each with
        the places to patch. Raises `NotPatchable`, adding nothing, where patching would not be enough."""
        nodes, edges = _nodes_and_edges(graph)
        copies = [_copy(node, buffers) for node in nodes]
        found = {key for c in copies if isinstance(c, _KernelCopy) for _, key, _ in c.places}
        if found != set(buffers):
            missing = ", ".join(str(k) for k in sorted(set(buffers) - found))
            raise NotPatchable(f"no kernel parameter holds the address of buffer(s) {missing}")
        added: dict[int, cu.CUgraphNode] = {}
        before = {int(n): [a for a, b in edges if int(b) == int(n)] for n in nodes}
        waiting = list(zip(nodes, copies, strict=True))
        outer = self._deps(deps)
        patches = []
        while waiting:  # in an order where every node comes after those it depends on
            i = next(i for i, (n, _) in enumerate(waiting) if all(int(a) in added for a in before[int(n)]))
            node, copy = waiting.pop(i)
            after = [added[int(a)] for a in before[int(node)]] or outer
            if isinstance(copy, _KernelCopy):
                new = driver.call("cuGraphAddKernelNode", self.graph, after, len(after), copy.params)
                driver.call("cuGraphKernelNodeCopyAttributes", new, node)  # cluster shape and the like
                self.kernel_nodes.add(int(new))
                if copy.places:
                    patches.append(Patch(new, copy.params, copy.places, copy.memory))
            else:
                new = driver.call("cuGraphAddMemsetNode", self.graph, after, len(after), copy, self.context)
            added[int(node)] = new
        sources = {int(a) for a, _ in edges}
        self.nodes.append([added[int(n)] for n in nodes if int(n) not in sources])
        return patches

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


def _programmatic_edge() -> cu.CUgraphEdgeData:
    """An edge after which the dependent kernel may launch while its predecessor drains (compile.py)."""
    edge = cu.CUgraphEdgeData()
    edge.type = cu.CUgraphDependencyType.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC
    edge.from_port = cu.CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC
    return edge


_PROGRAMMATIC = _programmatic_edge()


class NotPatchable(Exception):
    """A recording whose use of an address patching its parameters would not change."""


@dataclass
class Patch:
    """A kernel node whose parameters hold per-call addresses: each place is a 64-bit word in the parameter
    memory that `params` points at, the key of the buffer whose address goes there and the byte offset
    added to it."""

    node: cu.CUgraphNode
    params: cu.CUDA_KERNEL_NODE_PARAMS
    places: list[tuple[ctypes.c_uint64, int, int]]
    memory: list[Any] = field(default_factory=list)  # what `params` points into, kept alive


@dataclass
class _KernelCopy:
    params: cu.CUDA_KERNEL_NODE_PARAMS
    places: list[tuple[ctypes.c_uint64, int, int]]
    memory: list[Any]


def _nodes_and_edges(graph: cu.CUgraph) -> tuple[list[cu.CUgraphNode], list[tuple[Any, Any]]]:
    count = driver.call("cuGraphGetNodes", graph, 0)[1]
    nodes = driver.call("cuGraphGetNodes", graph, count)[0] if count else []
    count = driver.call("cuGraphGetEdges", graph, 0)[-1]
    if not count:
        return nodes, []
    sources, targets = driver.call("cuGraphGetEdges", graph, count)[:2]
    return nodes, list(zip(sources, targets, strict=True))


def _copy(node: cu.CUgraphNode, buffers: Mapping[int, tuple[int, int]]) -> _KernelCopy | Any:
    """A kernel node's parameters copied into memory of our own with the places holding `buffers`'
    addresses, or a memset node's parameters; anything else is refused."""
    kind = driver.call("cuGraphNodeGetType", node)
    if kind == cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET:
        memset = driver.call("cuGraphMemsetNodeGetParams", node)
        for address, size in buffers.values():
            if address <= int(memset.dst) < address + size:
                raise NotPatchable("a memset node writes into the buffer")
        return memset
    if kind != cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
        raise NotPatchable(f"the recording has a {kind.name} node")
    p = driver.call("cuGraphKernelNodeGetParams", node)
    if not p.kernelParams:
        raise NotPatchable("a kernel node passes its parameters through `extra`")
    sizes = _param_sizes(p)
    given = (ctypes.c_void_p * len(sizes)).from_address(p.kernelParams)
    memory: list[Any] = [
        ctypes.create_string_buffer(ctypes.string_at(given[i], n), n) for i, n in enumerate(sizes)
    ]
    places = [
        (ctypes.c_uint64.from_buffer(blob, offset), key, delta)
        for blob in memory
        for offset, key, delta in find_addresses(blob.raw, buffers)
    ]
    pointers = (ctypes.c_void_p * len(memory))(*(ctypes.addressof(b) for b in memory))
    copy = cu.CUDA_KERNEL_NODE_PARAMS()
    copy.func, copy.kern, copy.ctx = p.func, p.kern, p.ctx
    copy.gridDimX, copy.gridDimY, copy.gridDimZ = p.gridDimX, p.gridDimY, p.gridDimZ
    copy.blockDimX, copy.blockDimY, copy.blockDimZ = p.blockDimX, p.blockDimY, p.blockDimZ
    copy.sharedMemBytes = p.sharedMemBytes
    copy.kernelParams = ctypes.addressof(pointers)
    return _KernelCopy(copy, places, [*memory, pointers])


def find_addresses(parameter: bytes, buffers: Mapping[int, tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(byte offset, key, distance from the buffer's start) of each 8-byte-aligned word of a kernel
    parameter pointing into one of `buffers` (key -> (address, bytes)). An 8-byte window at a 4-byte step
    that points into a buffer from an unaligned place (a packed struct) raises `NotPatchable`: a place
    to patch must be a whole word."""
    found = []
    for offset in range(0, len(parameter) - 7, 4):
        word = int.from_bytes(parameter[offset : offset + 8], "little")
        for key, (address, size) in buffers.items():
            if not address <= word < address + size:
                continue
            if offset % 8:
                raise NotPatchable(
                    f"a kernel parameter holds {word:#x}, inside the buffer at {address:#x}, unaligned"
                )
            found.append((offset, key, word - address))
    return found


def _param_sizes(p: cu.CUDA_KERNEL_NODE_PARAMS) -> list[int]:
    """The size of each parameter of the node's function (asked until the driver says there is no more)."""
    query, handle = (cu.cuFuncGetParamInfo, p.func) if int(p.func) else (cu.cuKernelGetParamInfo, p.kern)
    if not int(handle):
        raise NotPatchable("a kernel node names no function")
    sizes = []
    while True:
        result, _, size = query(handle, len(sizes))
        if result == cu.CUresult.CUDA_ERROR_INVALID_VALUE:  # past the last parameter
            return sizes
        if result != driver.SUCCESS:
            raise NotPatchable(f"the driver cannot describe a kernel's parameters ({result.name})")
        sizes.append(size)


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
    """Records `call` with torch's stream capture into a graph of its own; returns it and the outputs (a
    failure leaves torch as it was, `_abandon`).

    The caller runs `call` once on `stream` first (vendor libraries set up handles on first use, which
    must not happen during capture). Outputs and workspaces come from `pool`, shared by the runtime's
    recordings: memory freed there is reused by later recordings, so the caller orders each recording
    after every node that used memory freed before it (`pygraph.ir.plan.dependencies`). The recordings'
    cuBLAS workspace must come from `pool` too (`own_workspaces`).

    `stream` first waits for the caller's stream: before the capture begins, torch allocates the CUDA
    generator's seed and offset words on `stream` from its ordinary pool and fills them there, and that
    pool holds memory the caller just freed (a call's warm-up results) that the caller's stream may not
    have read yet (seen under GPU contention as the first 8 bytes of a first call's output overwritten).
    """
    stream.wait_stream(torch.cuda.current_stream(stream.device))
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.stream(stream):
        graph.capture_begin(pool=pool)
        try:
            outputs = call()
        except BaseException:
            _abandon(graph, stream, pool)
            raise
        graph.capture_end()
    return Recording(graph), outputs


def _abandon(graph: torch.cuda.CUDAGraph, stream: torch.cuda.Stream, pool: object) -> None:
    """Ends a capture whose call raised (it synchronised, say), leaving torch as before it began. Where
    the failure invalidated the capture, torch's `capture_end` raises before its own clean-up, which
    `torch.cuda.graph` skips too: the pool would stay open to allocations (and never be freed), and torch
    2.11's CUDA generator would stay in capture mode, failing every later random op ("Offset increment
    outside graph capture"). Closed here, the generator by a capture that succeeds."""
    try:
        graph.capture_end()
        return  # the capture was still valid: torch cleaned up
    except RuntimeError:
        pass
    device = stream.device.index
    torch._C._cuda_endAllocateToPool(device, pool)
    torch._C._cuda_releasePool(device, pool)
    scratch = torch.zeros(1, device=stream.device)
    reset = torch.cuda.CUDAGraph()
    reset.capture_begin()
    scratch.add_(1)
    reset.capture_end()


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

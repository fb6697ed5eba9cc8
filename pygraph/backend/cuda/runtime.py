"""Executes a `Plan` on a CUDA device: graph segments as explicitly built CUDA graphs, the rest eagerly.

Construction compiles and loads the kernels and allocates what the runtime owns: the arena, a staging
buffer per argument reached by copy, the constants, and a fixed home for each result of an eagerly run
ATen call that a graph touches (a graph bakes addresses in; an eager call returns fresh storage).

A call whose directly bound arguments (parameters, buffers, ...) are not the tensors the graphs were
built on runs the whole plan node by node: that is the warm-up (the library calls of graph segments
run on the side stream they are then recorded on). Then it builds the graphs: each library call
recorded alone into a graph of its own, each graph segment one CUgraph whose edges are
`dependencies`, instantiated once. Any other call stages the inputs, launches each graph, runs the
eager steps in between and returns the outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from ...ir.layout import Layout
from ...ir.plan import Argument, HostStep, Node, Plan, PlanError, Segment, dependencies
from ..aten_call import AtenCall
from ..stats import plan_stats
from ..tensors import empty, layout_of, torch_dtype, view_of
from . import driver
from .compile import compile_kernel, load
from .driver import CudaError, cu
from .graph import GraphBuilder, Recording, node_kinds, record

Runner = Callable[[], None]


@dataclass
class SegmentGraph:
    """A graph segment, built and instantiated; the recordings its child nodes were cloned from stay alive."""

    graph: cu.CUgraph
    graph_exec: cu.CUgraphExec
    recordings: list[Recording]

    def destroy(self) -> None:
        """Frees both handles; an executable still running is freed by the driver when it completes."""
        driver.call("cuGraphExecDestroy", self.graph_exec)
        driver.call("cuGraphDestroy", self.graph)


class CudaRuntime:
    """Runs a `Plan` on one CUDA device; `runtime(args)` takes tensors for all plan arguments in order."""

    def __init__(self, plan: Plan, device: torch.device | str) -> None:
        device = torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"CudaRuntime runs on a CUDA device, not {device}")
        index = torch.cuda.current_device() if device.index is None else device.index
        self.plan = plan
        self.device = torch.device("cuda", index)
        self.captures = 0
        self.tensors: list[Any] = [None] * len(plan.buffers)  # each buffer's current tensor, once placed
        self.family: dict[int, list[int]] = {}  # root -> every buffer on its storage
        for buf in plan.buffers:
            self.family.setdefault(buf.root, []).append(buf.id)
        self._check_arguments()
        self._aligned = {
            name: [i for i, entry in enumerate(k.signature) if entry.partition(":")[2] == "16"]
            for name, k in plan.kernels.items()
        }
        major, minor = torch.cuda.get_device_capability(self.device)
        cubins = {name: compile_kernel(k, 10 * major + minor) for name, k in plan.kernels.items()}
        with torch.cuda.device(self.device):
            self.arena = torch.empty(plan.arena_bytes, dtype=torch.uint8, device=self.device)
            self.context = driver.current_context(index)
            self.functions = {name: load(cubin, self.context) for name, cubin in cubins.items()}
            self.side = torch.cuda.Stream(self.device)
            self.pool = torch.cuda.graph_pool_handle()
            self._own_storage()
        self.calls: dict[int, AtenCall] = {}  # id(node) -> its bound ATen call
        self._runners = [self._step_runners(step) for step in plan.steps]
        self._outputs = [(out.buffer, out.io == "copy") for out in plan.outputs]
        self._stream = cu.CUstream(0)  # the caller's current stream, set at each call
        self._graphs: list[SegmentGraph] = []
        self._program: list[Runner] = []  # a replay: graph launches and eager steps, in order
        self._key: list[Any] | None = None  # the direct arguments the graphs were built on

    # ----------------------------------------------------------------------------------------- calls

    def __call__(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        if len(args) != len(self.plan.arguments):
            raise ValueError(f"the plan takes {len(self.plan.arguments)} arguments, got {len(args)}")
        with torch.cuda.device(self.device):
            self._stream = cu.CUstream(torch.cuda.current_stream(self.device).cuda_stream)
            for i, staging in self._staged:
                given = args[i]
                if given.shape != staging.shape or given.dtype != staging.dtype:
                    arg = self.plan.arguments[i]
                    raise ValueError(
                        f"{arg.role} '{arg.name}' is {given.dtype} {list(given.shape)}, "
                        f"the plan was built for {staging.dtype} {list(staging.shape)}"
                    )
                staging.copy_(given)
            key = [
                (t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)
                for t in (args[i] for i in self._direct)
            ]
            if key != self._key:
                return self._warm_up_and_build(args, key)
            for run in self._program:
                run()
            return self._finish(args)

    def _warm_up_and_build(self, args: Sequence[torch.Tensor], key: list[Any]) -> list[torch.Tensor]:
        self._release()
        self._bind_direct(args)
        for runners in self._runners:
            for run in runners:
                run()
        outputs = self._finish(args)  # now: recording points library results at storage not yet written
        self._build()
        self._key = key
        return outputs

    def _finish(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        for i, staging in self._written:
            args[i].copy_(staging)
        return [self.tensors[b].clone() if copy else self.tensors[b] for b, copy in self._outputs]

    def stats(self) -> dict[str, Any]:
        """The plan's figures, with `nodes` and `graphs` read back from the instantiated graphs once built.

        `copied_bytes_per_call` adds what this runtime moves beyond the plan's own figure: inputs the
        plan writes, copied back, and eager results copied to their home in a graph's reach.
        """
        if self._key is None:
            return plan_stats(self.plan, self.captures)
        nodes = dict.fromkeys(("kernel", "memcpy", "memset", "child"), 0)
        for graph in self._graphs:
            for kind in node_kinds(graph.graph):
                nodes[kind] = nodes.get(kind, 0) + 1
        nodes["library"] = nodes["child"]  # the builder adds a child node for nothing but a recorded call
        stats = plan_stats(self.plan, self.captures, nodes)
        stats["graphs"] = len(self._graphs)
        stats["copied_bytes_per_call"] += self._extra_copied_bytes
        return stats

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # the driver may be gone at interpreter exit
            self._release()

    # ---------------------------------------------------------------------------------------- storage

    def _arg_device(self, arg: Argument) -> torch.device:
        return torch.device("cpu") if arg.device == "cpu" else self.device

    def _check_arguments(self) -> None:
        """Arguments reached in ways this runtime knows, and no CPU argument under a node of a segment."""
        plan = self.plan
        for arg in plan.arguments:
            if arg.io not in ("stage", "direct"):
                raise PlanError(
                    f"{arg.role} '{arg.name}' is reached by '{arg.io}', which the CUDA runtime lacks"
                )
        on_cpu = {arg.buffer: arg for arg in plan.arguments if arg.device == "cpu"}
        for segment in plan.segments:
            for node in segment.nodes:
                for b in node.args + node.reads + node.writes:
                    arg = on_cpu.get(plan.buffers[b].root)
                    if arg is not None:
                        raise PlanError(
                            f"{node.location}: a {node.kind} node uses {arg.role} '{arg.name}', which is on the CPU"
                        )

    def _own_storage(self) -> None:
        """Places what the runtime owns: arena buffers, constants, staging, homes of eager results."""
        plan = self.plan
        for buf in plan.buffers:
            if buf.kind == "alloc":
                self._place(buf.id, self.arena, buf.arena_offset)
            elif buf.kind == "constant":
                value = (
                    torch.from_numpy(buf.value.copy()).to(torch_dtype(buf.layout)).reshape(buf.layout.shape)
                )
                home = empty(buf.layout, self.device)
                home.copy_(value)
                self._place(buf.id, home)
        self._staged: list[tuple[int, torch.Tensor]] = []
        for i, arg in enumerate(plan.arguments):
            if arg.io == "stage":
                staging = empty(plan.buffers[arg.buffer].layout, self._arg_device(arg))
                self._place(arg.buffer, staging)
                self._staged.append((i, staging))
        self._direct = [i for i, arg in enumerate(plan.arguments) if arg.io == "direct"]
        written = {plan.buffers[b].root for s in plan.segments for n in s.nodes for b in n.writes}
        self._written = [(i, t) for i, t in self._staged if plan.arguments[i].buffer in written]
        in_graphs, eager_results = set(), set()
        self._in_segments: set[int] = set()  # roots that nodes of segments touch
        for step in plan.steps:
            graphed = isinstance(step, Segment) and step.mode == "graph"
            for node in step.nodes if isinstance(step, Segment) else [step.node]:
                roots = {plan.buffers[b].root for b in node.args + node.reads + node.writes}
                if isinstance(step, Segment):
                    self._in_segments |= roots
                if graphed:
                    in_graphs |= roots
                elif node.kind in ("library", "host"):
                    eager_results.update(node.results)
        self._homes = {r: empty(plan.buffers[r].layout, self.device) for r in eager_results & in_graphs}
        for root, home in self._homes.items():
            self._place(root, home)
        self._extra_copied_bytes = sum(t.numel() * t.element_size() for _, t in self._written) + sum(
            plan.buffers[r].layout.nbytes() for r in self._homes
        )

    def _place(self, root: int, storage: torch.Tensor, byte_offset: int | None = None) -> None:
        """Points every buffer on `root`'s storage at `storage`. Layout offsets count from `byte_offset`
        bytes into it (arena), or else from where `storage` (a tensor with the root's layout) begins."""
        layout = self.plan.buffers[root].layout
        if byte_offset is None:
            byte_offset = -layout.offset * layout.dtype.itemsize
        for b in self.family[root]:
            self.tensors[b] = view_of(storage, self.plan.buffers[b].layout, byte_offset)

    def _bind_direct(self, args: Sequence[torch.Tensor]) -> None:
        for i in self._direct:
            arg, given = self.plan.arguments[i], args[i]
            layout = self.plan.buffers[arg.buffer].layout
            device = self._arg_device(arg)
            if (
                tuple(given.shape) != layout.shape
                or tuple(given.stride()) != layout.strides
                or given.dtype != torch_dtype(layout)
                or given.device != device
            ):
                raise ValueError(
                    f"{arg.role} '{arg.name}' is {layout_of(given)} on {given.device}, "
                    f"the plan was built for {layout} on {device}"
                )
            self._place(arg.buffer, given)

    def _take(self, node: Node, outputs: list[Any], recorded: bool) -> None:
        """Makes an ATen call's outputs the node's results, in the layouts the plan states."""
        if len(outputs) < len(node.results):
            raise RuntimeError(
                f"{node.location}: {node.op} returned {len(outputs)} tensors, the plan expects {len(node.results)}"
            )
        for b, out in zip(node.results, outputs, strict=False):
            layout = self.plan.buffers[b].layout
            if not isinstance(out, torch.Tensor):
                raise RuntimeError(
                    f"{node.location}: {node.op} returned a {type(out).__name__}, not a tensor"
                )
            if not _has_layout(out, layout):
                if recorded or tuple(out.shape) != layout.shape or out.dtype != torch_dtype(layout):
                    raise RuntimeError(
                        f"{node.location}: {node.op} gave {layout_of(out)}, the plan says {layout}"
                    )
                placed = empty(layout, out.device)  # an eager call may choose other strides
                placed.copy_(out)
                out = placed
            home = self._homes.get(b)
            if home is not None:
                home.copy_(out)
            elif out.device != self.device and b in self._in_segments:
                raise RuntimeError(
                    f"{node.location}: {node.op} gave a tensor on {out.device} for the GPU's nodes"
                )
            else:
                self._place(b, out)

    # ---------------------------------------------------------------------------------- eager runners

    def _step_runners(self, step: Segment | HostStep) -> list[Runner]:
        if isinstance(step, HostStep):
            return [self._aten(step.node, side=False)]
        graphed = step.mode == "graph"
        runners = []
        for node in step.nodes:
            if node.kind == "kernel":
                runners.append(self._eager_kernel(node))
            elif node.kind == "library":
                runners.append(self._aten(node, side=graphed))
            elif node.kind == "copy":
                runners.append(self._eager_copy(node))
            elif node.kind == "fill":
                runners.append(self._eager_fill(node))
            else:
                raise PlanError(f"{node.location}: the CUDA runtime has no '{node.kind}' node")
        return runners

    def _eager_kernel(self, node: Node) -> Runner:
        function = self.functions[node.kernel]
        params = function.params([0] * len(node.args))
        count = len(node.args)

        def run() -> None:
            params.values[:count] = self._pointers(node)
            function.launch(node.grid, params, self._stream)

        return run

    def _aten(self, node: Node, side: bool) -> Runner:
        """One ATen call; `side`: the warm-up of a call that is recorded later, run on the recording stream."""
        try:
            call = self.calls[id(node)] = AtenCall(node.op, node.aten_args, self.device)
        except ValueError as exc:
            raise PlanError(f"{node.location}: {exc}") from exc

        def run() -> None:
            inputs = [self.tensors[b] for b in node.reads]
            if not side:
                self._take(node, call(inputs), recorded=False)
                return
            current = torch.cuda.current_stream(self.device)
            self.side.wait_stream(current)
            with torch.cuda.stream(self.side):
                outputs = call(inputs)
            current.wait_stream(self.side)
            for out in outputs:
                if isinstance(out, torch.Tensor):
                    out.record_stream(current)
            self._take(node, outputs, recorded=False)

        return run

    def _eager_copy(self, node: Node) -> Runner:
        src, dst = node.reads[0], node.writes[0]
        return lambda: _bytes(self.tensors[dst]).copy_(_bytes(self.tensors[src]))

    def _eager_fill(self, node: Node) -> Runner:
        dst, byte = node.writes[0], node.byte
        return lambda: _bytes(self.tensors[dst]).fill_(byte)

    def _pointers(self, node: Node) -> list[int]:
        """The kernel's pointer arguments, each checked against the alignment its signature promises."""
        pointers = [self.tensors[b].data_ptr() for b in node.args]
        for i in self._aligned[node.kernel]:
            if pointers[i] % 16:
                layout = self.plan.buffers[node.args[i]].layout
                raise PlanError(
                    f"{node.location}: argument {i} of kernel @{node.kernel} is promised 16-byte aligned, "
                    f"but its buffer ({layout}) starts at {pointers[i]:#x}"
                )
        return pointers

    # ----------------------------------------------------------------------------------------- graphs

    def _build(self) -> None:
        for step, runners in zip(self.plan.steps, self._runners, strict=True):
            if isinstance(step, Segment) and step.mode == "graph":
                if step.nodes:
                    graph = self._build_segment(step)
                    self._graphs.append(graph)
                    self._program.append(partial(self._launch, graph.graph_exec))
            else:
                self._program.extend(runners)

    def _build_segment(self, segment: Segment) -> SegmentGraph:
        builder = GraphBuilder(self.context)
        recordings = []
        for node, deps in zip(segment.nodes, dependencies(self.plan, segment), strict=True):
            try:
                if node.kind == "kernel":
                    function = self.functions[node.kernel]
                    builder.kernel(deps, function, node.grid, function.params(self._pointers(node)))
                elif node.kind == "library":
                    recording = self._record(node)
                    recordings.append(recording)
                    if node_kinds(recording.handle):
                        builder.child(deps, recording.handle)
                    else:
                        builder.skip(deps)
                else:
                    dst = self.tensors[node.writes[0]].data_ptr()
                    nbytes = self.plan.buffers[node.writes[0]].layout.nbytes()
                    if node.kind == "copy":
                        builder.memcpy(deps, dst, self.tensors[node.reads[0]].data_ptr(), nbytes)
                    else:
                        builder.memset(deps, dst, node.byte, nbytes)
            except CudaError as exc:
                raise RuntimeError(f"{node.location}: {exc}") from exc
        try:
            graph_exec = builder.instantiate()
        except CudaError as exc:
            raise RuntimeError(f"{segment.nodes[0].location}: the segment's graph: {exc}") from exc
        return SegmentGraph(builder.graph, graph_exec, recordings)

    def _record(self, node: Node) -> Recording:
        call = self.calls[id(node)]
        inputs = [self.tensors[b] for b in node.reads]
        try:
            recording = record(lambda: call(inputs), self.side, self.pool)
        except Exception as exc:
            raise RuntimeError(f"{node.location}: recording {node.op} failed: {exc}") from exc
        self.captures += 1
        self._take(node, recording.outputs, recorded=True)
        return recording

    def _launch(self, graph_exec: cu.CUgraphExec) -> None:
        driver.launch_graph(graph_exec, self._stream)

    def _release(self) -> None:
        """Drops the graphs, so that the next call builds anew."""
        for graph in self._graphs:
            graph.destroy()
        self._graphs, self._program, self._key = [], [], None


def _has_layout(t: torch.Tensor, layout: Layout) -> bool:
    """Same sizes, dtype, storage offset and strides (a stride of a size-1 dim addresses nothing)."""
    return (
        tuple(t.shape) == layout.shape
        and t.dtype == torch_dtype(layout)
        and t.storage_offset() == layout.offset
        and all(n == 1 or s == w for n, s, w in zip(layout.shape, t.stride(), layout.strides, strict=True))
    )


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The bytes a dense tensor covers (from its first element, the lowest address), as 1-D uint8."""
    out = torch.empty(0, dtype=torch.uint8, device=t.device)
    return out.set_(
        t.untyped_storage(), t.storage_offset() * t.element_size(), (t.numel() * t.element_size(),), (1,)
    )

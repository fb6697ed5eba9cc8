"""Executes a `Plan` on a CUDA device: graph segments as explicitly built CUDA graphs, the rest eagerly.

Construction compiles and loads the kernels, joins the arena its compiled model's programs share
(`arena.py`) and allocates what the runtime owns: the per-call table, a staging buffer per input the
plan stages, the constants, and a fixed home for each result of an eager ATen call that a graph reaches
without the table (a graph bakes addresses in; an eager call returns fresh storage each time).

`bind_state(tensors)` binds parameters, buffers and constants (used where the model keeps them). The
first call after it runs the whole plan node by node: that is the warm-up (the library calls of graph
segments run on the side stream they are then recorded on). Then it builds the graphs: each library
call recorded alone into a graph of its own and added as a child node; each graph segment one CUgraph
whose edges are `dependencies`, headed by a node that writes the per-call table, instantiated once.

A later call is the hot path: stage the staged inputs, put the addresses of the inputs reached through
the table and of fresh output tensors into the table writer's parameters, and launch; for each graph,
`cuGraphExecKernelNodeSetParams` on its writer node, then `cuGraphLaunch`. Kernel parameters are copied
when set, so calls queued back to back never see each other's addresses, and the table in device memory
is written by the graph itself, in stream order. The runtime keeps nothing of a call once it returns:
the caller alone decides how long a result lives (held on, the last call's outputs would be allocated
beside the next call's), and a call allocates no output it does not return.

Inputs and outputs reached by "patch" have no slot: each graph node that holds their address (a
generated kernel, or a kernel of an inlined vendor recording, `graph.GraphBuilder.inline`) gets it
rewritten with `cuGraphExecKernelNodeSetParams` before the launch. Where a recording cannot be patched,
the runtime stages that input into a buffer of its own instead (recorded on it, copied into each call).
An input whose address is less aligned than a patched vendor kernel was recorded with is copied first.
"""

from __future__ import annotations

import contextlib
import ctypes
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...ir.layout import Layout
from ...ir.plan import (
    HostStep,
    Node,
    Plan,
    PlanError,
    Segment,
    TritonKernel,
    dependencies,
    is_graphed,
    last_uses,
    pooled_results,
    reads_table,
)
from .. import UnrecordableCall
from ..aten_call import AtenCall, check_results
from ..random import seed_and_offset
from ..stats import plan_stats
from ..tensors import empty, layout_of, scalar_bits, torch_dtype, view_of
from . import driver, native
from .arena import Arenas
from .compile import Cubin, KernelParams, compile_kernel, compile_kernels, load
from .driver import CudaError, cu
from .graph import (
    GraphBuilder,
    NotPatchable,
    Patch,
    Recording,
    node_kinds,
    own_workspaces,
    record,
    side_stream,
)

# The dtypes of host scalars the native replay writes from Python numbers, as its table types (replay.c).
_TABLE_TYPES = {"float32": "f", "float64": "d", "int64": "q", "bool": "?"}

Runner = Callable[[], None]

_NOTHING: tuple[()] = ()  # what the runtime holds of a call between calls


@dataclass
class SegmentGraph:
    """A graph segment, built and instantiated; the recordings its child nodes were cloned from stay alive."""

    graph: cu.CUgraph
    graph_exec: cu.CUgraphExec
    writer: cu.CUgraphNode | None  # the node that writes the per-call table, if the graph reads it
    recordings: list[Recording]
    patches: list[Patch]  # nodes whose parameters hold per-call addresses
    programmatic_edges: int  # edges after which a kernel may launch early (compile.py)

    def destroy(self) -> None:
        """Frees both handles; an executable still running is freed by the driver when it completes."""
        driver.call("cuGraphExecDestroy", self.graph_exec)
        driver.call("cuGraphDestroy", self.graph)


class CudaRuntime:
    """Runs a `Plan` on one CUDA device; `bind_state(tensors)`, then `runtime(inputs)` per call."""

    def __init__(self, plan: Plan, device: torch.device | str, arenas: Arenas | None = None) -> None:
        """`arenas`: those of the compiled model this plan is a program of, shared with its other programs
        (`arena.py`); by default an arena of its own."""
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
        self.inputs = [a for a in plan.arguments if a.role == "input"]
        self.rng = [a for a in plan.arguments if a.role == "rng"]  # seed, offset: written each call
        self.state_args = [a for a in plan.arguments if a.role not in ("input", "rng")]
        self._check_arguments()
        self._through_table = {
            name: [e.startswith("**") for e in k.signature] for name, k in plan.kernels.items()
        }
        self._aligned = {
            name: [e.partition(":")[2] == "16" for e in k.signature] for name, k in plan.kernels.items()
        }
        major, minor = torch.cuda.get_device_capability(self.device)
        arch = 10 * major + minor
        cubins = compile_kernels(plan.kernels, arch)
        with torch.cuda.device(self.device):
            self.table = torch.zeros(max(plan.table_slots, 1), dtype=torch.int64, device=self.device)
            self.context = driver.current_context(index)
            self.functions = {name: load(cubin, self.context) for name, cubin in cubins.items()}
            self.writer = (
                load(_table_writer(plan.table_slots, arch), self.context) if plan.table_slots else None
            )
            self.side = side_stream(self.device)
            self._own_storage()
        # Library calls recorded into graphs (warmed up on the side stream first).
        self._records = any(
            n.kind == "library" for step in plan.steps if is_graphed(step) for n in step.nodes
        )
        # The table writer's parameters: the table's address, then one value per slot; rewritten each call.
        self.table_params = KernelParams([self.table.data_ptr(), *[0] * plan.table_slots, 0, 0])
        self.slot_values = self.table_params.values
        self.calls: dict[int, AtenCall] = {}  # id(node) -> its bound ATen call
        self._runners = [self._step_runners(step) for step in plan.steps]
        # Results recorded into graphs, freed after their last use so later recordings reuse their memory.
        self._pooled = sorted((position, root) for root, position in pooled_results(plan).items())
        self._transient = self._transient_results()
        self._freed_after: dict[tuple[int, int], list[int]] = {}  # the warm-up frees both after last use
        for position, root in self._pooled:
            self._freed_after.setdefault(position, []).append(root)
        for position, roots in self._transient.items():
            self._freed_after.setdefault(position, []).extend(roots)
        self._index = index
        self._stream = cu.CUstream(0)  # the caller's current stream, set at each call
        self._raw: int | None = None  # the raw stream of the last call of any program on the arena
        self._streams: dict[int, cu.CUstream] = {}  # raw stream -> its handle, made once
        # Outputs a vendor call writes ("patch" on a call's result): until a graph's inlined recording
        # writes the fresh tensor, the call's own result is returned (eager runs), or a copy of what its
        # recording wrote (where it could not be patched). Output index -> "own" | "fresh" | "copy".
        self._vendor_outputs = {
            i: "own"
            for i, o in enumerate(plan.outputs)
            if o.io == "patch" and plan.buffers[o.buffer].kind != "output"
        }
        # Outputs a vendor call writes in out form whose recording could not be patched: the recording
        # writes a buffer of the runtime's, each call returns a copy. Output index -> that buffer.
        self._staged_outputs: dict[int, torch.Tensor] = {}
        self._fresh_outputs()
        # the call's inputs and fresh outputs, while it runs
        self._call_inputs: Sequence[torch.Tensor] = _NOTHING
        self._outputs_now: Sequence[torch.Tensor | None] = _NOTHING
        self._graphs: list[SegmentGraph] = []
        self._program: list[Runner] = []  # a replay: graph launches and eager steps, in order
        self._built = False
        self._state_key: list[Any] | None = None
        self.native: Any = None  # the call in C, once built, where every step is a graph (`_native_replay`)
        # Last, once the runtime can leave the arena again (another program may grow it later).
        self._arena = (arenas or Arenas()).on(self.device)
        self.enter_arena(self._arena.join(self, plan.arena_bytes))

    # ----------------------------------------------------------------------------------------- calls

    def bind_state(self, tensors: Sequence[torch.Tensor]) -> None:
        """Binds parameters, buffers and constants; graphs built on other addresses are rebuilt."""
        key = []
        for arg, given in zip(self.state_args, tensors, strict=True):
            layout = self.plan.buffers[arg.buffer].layout
            device = self._arg_device(arg)
            if not _has_layout(given, layout) or given.device != device:
                raise ValueError(
                    f"{arg.role} '{arg.name}' is {layout_of(given)} on {given.device}, "
                    f"the plan was built for {layout} on {device}"
                )
            key.append(given.data_ptr())
        if key != self._state_key:
            self._release()
            for arg, given in zip(self.state_args, tensors, strict=True):
                self._place(arg.buffer, given)
            self._state_key = key

    def __call__(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """One call: this call's inputs and fresh outputs bound, the program replayed (the first call runs
        node by node, then builds the graphs), the outputs returned; the runtime keeps nothing of the call.
        The hot path: one level of calls below this one, no per-node work."""
        if torch._C._cuda_getDevice() != self._index:  # a device switch, paid only where needed
            with torch.cuda.device(self.device):
                return self(inputs)
        if not self._built and self._state_key is None:
            raise RuntimeError("bind_state() must come before the first call")
        # The caller's current stream, read without making a torch Stream object.
        raw = torch._C._cuda_getCurrentRawStream(self._index)
        if raw != self._raw:
            self._arena.follow(raw)
        stream = self._streams.get(raw)
        if stream is None:
            stream = self._streams[raw] = cu.CUstream(raw)
        self._stream = stream
        try:  # the call's references dropped also where a step raises (a host check sending the call another way)
            given = self._bind_inputs(inputs)
            outputs = self._outputs_now = self._bind_outputs()
            if self._built:
                for run in self._program:
                    run()
            else:
                self._warm_up()
            for i, staging in self._written:
                inputs[i].copy_(staging)
            if given is not inputs:  # inputs copied into the plan's layout: the model's writes go back
                for i, x in enumerate(inputs):
                    if given[i] is not x and self._writes_input[i]:
                        x.copy_(given[i])
            results = outputs if self._all_fresh else self._results(outputs)
            if not self._built:  # after taking the results: recording points library results at new storage
                try:
                    self._build()
                except UnrecordableCall as exc:  # the results stand: computed node by node
                    self._release()
                    exc.results = results
                    raise
                self._built = True
                self._fresh_outputs()
                self.native = self._native_replay()
                if self.native is not None:
                    self.native.stream = raw
            return results
        finally:
            self._drop_call()

    def on_stream(self, raw: int) -> None:
        """Calls on stream `raw` are ordered after the last call on the arena (`Arena.follow`): the native
        replay takes them from now on, and leaves calls on any other stream to Python, which orders them."""
        self._raw = raw
        if self.native is not None:
            self.native.stream = raw

    def leave_arena(self) -> None:
        """Another program grows the shared arena: the graphs go (they hold its old addresses), and every view
        of its bytes."""
        self._release()
        for buf in self.plan.buffers:
            if buf.kind == "alloc":
                for b in self.family[buf.id]:
                    self.tensors[b] = None
        self.arena = None

    def enter_arena(self, storage: torch.Tensor) -> None:
        self.arena = storage
        self._place_arena()

    def _warm_up(self) -> None:
        """The first call: each runner list is a placer, then one runner per node; results freed after
        their last use, as the graphs built next will need them. Library calls recorded next warm up on
        the side stream, where cuBLAS makes a workspace (32 MiB on Hopper) that the build drops again:
        the caller's stream's own workspace (made by derived state computed at export) is dropped first,
        so that the two are never held at once."""
        if self._records:
            torch._C._cuda_clearCublasWorkspaces()
        for s, runners in enumerate(self._runners):
            for n, run in enumerate(runners):
                run()
                self._free(self._freed_after.get((s, n - 1), ()))

    def _drop_call(self) -> None:
        """Drops the runtime's references to a call: its inputs, its fresh tensors, eager results."""
        self._call_inputs = self._outputs_now = _NOTHING
        tensors = self.tensors
        for b in self._returned:
            tensors[b] = None

    def _bind_inputs(self, inputs: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        """Stages staged inputs; puts the addresses of the others in the table or where patched nodes take
        them. Returns the inputs, or a list where an input whose strides or alignment differ from the
        plan's is replaced by a copy in the plan's layout (kernels are specialized to it)."""
        for i, staging in self._staged:
            staging.copy_(inputs[i])
        for i, slot in self._valued:
            self.slot_values[1 + slot] = scalar_bits(inputs[i])
        if self.rng:
            drawn = seed_and_offset(self.device, self.plan.random_numbers)
            for arg, value in zip(self.rng, drawn, strict=True):
                self.slot_values[1 + arg.slot] = value % (1 << 64)
        given, align = inputs, self._align
        for i, slot, key, strides, layout in self._slotted:
            x = given[i]
            address = x.data_ptr()
            if (x.stride() != strides and not _has_layout(x, layout)) or address % align[i]:
                given = list(given)
                given[i] = x = empty(layout.with_offset(0), self.device)  # the allocator aligns it
                x.copy_(inputs[i])
                address = x.data_ptr()
            if slot >= 0:
                self.slot_values[1 + slot] = address
                continue
            staging = self._patch_staging.get(key)
            if staging is not None:
                staging.copy_(x)
                address = staging.data_ptr()
            self._addresses[key] = address
        self._call_inputs = given
        return given

    def _bind_outputs(self) -> list[torch.Tensor | None]:
        outputs = []
        for fresh in self._fresh:
            if fresh is None:  # a vendor call's own result is returned, or a copy of what it wrote
                outputs.append(None)
                continue
            slot, key, shape, strides, prototype = fresh
            out = prototype.new_empty_strided(
                shape, strides
            )  # (about 0.2 us cheaper than torch.empty_strided)
            if slot >= 0:
                self.slot_values[1 + slot] = out.data_ptr()
            else:
                self._addresses[key] = out.data_ptr()
            outputs.append(out)
        return outputs

    def _results(self, fresh: list[torch.Tensor | None]) -> list[torch.Tensor]:
        """The outputs where some are not written into fresh tensors (a vendor call's own result, a copy);
        where all are (`_all_fresh`), the call returns the fresh tensors as they are."""
        results, k = [], 0
        for i, out in enumerate(self.plan.outputs):
            vendor = "copy" if i in self._staged_outputs else self._vendor_outputs.get(i, "fresh")
            if out.io in ("indirect", "patch"):
                results.append(fresh[k] if vendor == "fresh" else self._tensor(out.buffer))
                if vendor == "copy":
                    results[-1] = results[-1].clone()
                k += 1
            elif out.io == "copy":
                results.append(self._tensor(out.buffer).clone())
            else:
                results.append(self._tensor(out.buffer))
        return results

    def stats(self) -> dict[str, Any]:
        """The plan's figures, with `nodes` and `graphs` read back from the instantiated graphs once built.

        `copied_bytes_per_call` adds what this runtime moves beyond the plan's own figure: inputs the plan
        writes, copied back, and eager results copied to their home in a graph's reach.
        `programmatic_edges` counts the edges after which a kernel may launch while its predecessor drains.
        """
        if not self._built:
            return plan_stats(self.plan, self.captures)
        nodes = dict.fromkeys(("kernel", "memcpy", "memset", "child"), 0)
        for graph in self._graphs:
            for kind in node_kinds(graph.graph):
                nodes[kind] = nodes.get(kind, 0) + 1
        # the builder adds a child node for nothing but a recorded call, or inlines the recording
        nodes["library"] = nodes["child"] + self._inlined
        stats = plan_stats(self.plan, self.captures, nodes)
        stats["graphs"] = len(self._graphs)
        stats["nodes"]["inlined"] = self._inlined
        stats["patched_nodes"] = sum(len(g.patches) for g in self._graphs)
        stats["programmatic_edges"] = sum(g.programmatic_edges for g in self._graphs)
        stats["patches_staged"] = len(self.staging_reasons)
        extra = self._extra_copied_bytes + sum(
            t.numel() * t.element_size() for t in self._patch_staging.values()
        )
        extra += sum(
            self.plan.buffers[self.plan.outputs[i].buffer].layout.nbytes()
            for i, mode in self._vendor_outputs.items()
            if mode == "copy"
        )
        extra += sum(t.numel() * t.element_size() for t in self._staged_outputs.values())
        stats["copied_bytes_per_call"] += extra
        stats["memcpy_bytes_per_call"] += extra  # the runtime's own copies
        return stats

    def measure_io(
        self, inputs: Sequence[torch.Tensor], repeats: int = 100
    ) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
        """Per input and per output, what reaching it costs per call on this GPU, as the runtime does it:
        host time of its parameter updates, of its runtime copy or of the vendor calls run outside the
        graph for it; GPU time of the nodes that exist only for it (copy kernels, the runtime's copies); a
        share of the table's writer (host update and GPU node) for each buffer reached through the table.
        Call it after a call built the graphs (`profile.profile_segments` does): it repeats work of a call
        on `inputs`, and copy kernels whose sources were freed since read zeros, into outputs of its own
        (all bound as a call's, and dropped after: the runtime keeps nothing of a call)."""
        if not self._built:
            raise RuntimeError("measure_io() needs a call first: it measures the graphs that call built")
        self._bind_inputs(inputs)
        self._outputs_now = self._bind_outputs()
        self._eager_table()  # placed, and in the table, for the kernels launched below
        plan = self.plan
        users = [a.buffer for a in self.inputs if a.slot >= 0] + [
            o.buffer for o in plan.outputs if o.slot >= 0
        ]
        table = {"host_us": 0.0, "gpu_us": 0.0}
        writers = [g for g in self._graphs if g.writer is not None]
        if users and writers:
            params = self._writer_node_params()
            updates = [(g.graph_exec, g.writer) for g in writers]
            table["host_us"] = _host_us(
                lambda: [driver.set_kernel_params(e, n, params) for e, n in updates], repeats
            )
            launch = lambda: self.writer.launch((1, 1, 1), self.table_params, self._stream)  # noqa: E731
            table["gpu_us"] = len(writers) * _gpu_us(launch, repeats, self)

        def cost(root: int, io: str, choice: str, slot: int) -> dict[str, float]:
            host = gpu = 0.0
            if slot >= 0:
                host, gpu = table["host_us"] / len(users), table["gpu_us"] / len(users)
            key = self._keys.get(root, -1)
            updates = [
                (g.graph_exec, p)
                for g in self._graphs
                for p in g.patches
                if any(k == key for _, k, _ in p.places)
            ]
            if updates:
                host += _host_us(
                    lambda: [driver.set_kernel_params(e, p.node, p.params) for e, p in updates], repeats
                )
            copies = self._copy_kernels(root, choice)
            if copies:
                gpu += _gpu_us(lambda: [run() for run in copies], repeats, self)
            for run in [*self._outside_calls(root, choice), self._runtime_copy(root, key, io)]:
                if run is not None:
                    host += _host_us(run, repeats)
                    gpu += _gpu_us(run, repeats, self)
            return {"host_us": round(host, 3), "gpu_us": round(gpu, 3)}

        inputs = [cost(a.buffer, a.io, a.choice, a.slot) for a in self.inputs]
        outputs = [cost(o.buffer, o.io, o.choice, o.slot) for o in plan.outputs]
        self._drop_call()
        return inputs, outputs

    def _copy_kernels(self, root: int, choice: str) -> list[Runner]:
        """Eager launches of the copy kernels that exist to move `root`: an input's copy into the graph
        (the one kernel that reads it), an output's copy kernel (the one that writes it)."""
        if choice not in ("copy", "copy kernel"):
            return []
        nodes = [n for s in self.plan.segments for n in s.nodes if n.kind == "kernel"]
        return [self._kernel_on_scratch(n) for n in nodes if root in {self.plan.root(b).id for b in n.args}]

    def _kernel_on_scratch(self, node: Node) -> Runner:
        """An eager launch of a graph's kernel, for timing: buffers freed since the graph was built (vendor
        results recorded into it) get scratch storage of their layout."""
        function, pointers, scratch = self.functions[node.kernel], [], []
        for b, indirect in zip(node.args, self._through_table[node.kernel], strict=True):
            if indirect:
                pointers.append(self.table.data_ptr() + 8 * self.plan.root(b).slot)
                continue
            pointers.append(self._tensor_or_scratch(b, scratch).data_ptr())
        params = function.params(pointers)
        return lambda scratch=scratch: function.launch(node.grid, params, self._stream)

    def _tensor_or_scratch(self, buffer: int, scratch: list[torch.Tensor]) -> torch.Tensor:
        """The buffer's tensor, or where it has been freed, zeros in its layout (kept in `scratch`; zeros are
        valid data for any op, indices included)."""
        tensor = self.tensors[buffer]
        if tensor is None:
            tensor = empty(self.plan.buffers[buffer].layout, self.device).zero_()
            scratch.append(tensor)
        return tensor

    def _outside_calls(self, root: int, choice: str) -> list[Runner]:
        """The vendor calls run outside the graphs for `root`: those reading an input ("eager") or
        producing an output returned fresh ("eager")."""
        if choice != "eager":
            return []
        runs = []
        for step in self.plan.steps:
            if isinstance(step, HostStep):
                node = step.node
                if root in {self.plan.root(b).id for b in node.reads + node.results}:
                    call, inputs = self.calls[id(node)], [self._tensor_or_scratch(b, []) for b in node.reads]
                    runs.append(lambda call=call, inputs=inputs: call(inputs))
        return runs

    def _runtime_copy(self, root: int, key: int, io: str) -> Runner | None:
        """The copy the runtime itself makes for `root` each call: a staged input, a returned copy."""
        staging = dict(self._staged).get(self._input_index.get(root, -1), self._patch_staging.get(key))
        if staging is not None:
            source = self._call_inputs[self._input_index[root]]
            return lambda: staging.copy_(source)
        staged = any(self.plan.root(self.plan.outputs[i].buffer).id == root for i in self._staged_outputs)
        if (io == "copy" or staged) and root not in self._input_index:
            return lambda: self._tensor(root).clone()
        return None

    def measure_launch_us(self, inputs: Sequence[torch.Tensor], calls: int = 50) -> float | None:
        """Median host time of a bare `cuGraphLaunch` of the first graph, the GPU idle before each (the
        floor of a replay from Python). It makes a call on `inputs` and replays it, into that call's
        outputs (held meanwhile: the runtime keeps nothing of a call)."""
        if not self._graphs:
            return None
        held = self(inputs)
        graph_exec, times = self._graphs[0].graph_exec, []
        for _ in range(calls):
            torch.cuda.synchronize(self.device)
            start = time.perf_counter()
            driver.launch_graph(graph_exec, self._stream)
            times.append(time.perf_counter() - start)
        torch.cuda.synchronize(self.device)
        del held
        return statistics.median(times) * 1e6

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # the driver may be gone at interpreter exit
            self._release()

    # ---------------------------------------------------------------------------------------- storage

    def _arg_device(self, arg: Any) -> torch.device:
        return torch.device("cpu") if arg.device == "cpu" else self.device

    def _tensor(self, buffer: int) -> torch.Tensor:
        tensor = self.tensors[buffer]
        if tensor is None:
            raise RuntimeError(f"buffer {buffer} ({self.plan.buffers[buffer].layout}) has no storage yet")
        return tensor

    def _check_arguments(self) -> None:
        """Arguments reached in ways this runtime knows, and no CPU argument under a node of a segment."""
        plan = self.plan
        for arg in plan.arguments:
            if arg.io not in ("stage", "direct", "indirect", "copy", "value", "patch"):
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
        """Places what the runtime owns and precomputes what each call binds."""
        plan = self.plan
        for buf in plan.buffers:
            if buf.kind == "constant":
                value = (
                    torch.from_numpy(buf.value.copy()).to(torch_dtype(buf.layout)).reshape(buf.layout.shape)
                )
                home = empty(buf.layout, self.device)
                home.copy_(value)
                self._place(buf.id, home)
        written = {plan.buffers[b].root for s in plan.segments for n in s.nodes for b in n.writes}
        self._staged: list[tuple[int, torch.Tensor]] = []
        # input index, slot (or -1: patched), key of its address (patched) or -1, strides, layout
        self._slotted: list[tuple[int, int, int, tuple[int, ...], Layout]] = []
        self._align: dict[int, int] = {}  # input index -> the alignment its address needs (bytes)
        patched = [a.buffer for a in self.inputs if a.io == "patch"]
        patched += [plan.root(o.buffer).id for o in plan.outputs if o.io == "patch"]
        self._keys = {root: k for k, root in enumerate(patched)}  # patched root -> its address's key
        self._addresses = [0] * len(patched)  # each call's address per key
        self._patch_staging: dict[int, torch.Tensor] = {}  # key -> where an input is staged (unpatchable)
        self._inlined = 0  # recordings inlined into graphs, to be patched
        self._input_index = {a.buffer: i for i, a in enumerate(self.inputs)}
        self.staging_reasons: list[str] = []  # patched inputs staged because a recording could not be patched
        self._valued: list[tuple[int, int]] = []  # input index, slot: host scalars carried in the table
        for i, arg in enumerate(self.inputs):
            layout = plan.buffers[arg.buffer].layout
            if arg.io == "stage":
                staging = empty(layout, self.device)  # a host input of a GPU program is staged onto the GPU
                self._place(arg.buffer, staging)
                self._staged.append((i, staging))
            elif arg.io == "value":
                self._place(arg.buffer, self.table, 8 * arg.slot)
                self._valued.append((i, arg.slot))
            else:
                self._slotted.append((i, arg.slot, self._keys.get(arg.buffer, -1), layout.strides, layout))
                self._align[i] = 16 if layout.offset * layout.dtype.itemsize % 16 == 0 else 1
        for arg in self.rng:
            self._place(arg.buffer, self.table, 8 * arg.slot)
        self._writes_input = [arg.buffer in written for arg in self.inputs]
        self._written = [(i, t) for i, t in self._staged if self._writes_input[i]]
        # a tensor allocated per call, unless a vendor call's own result stands for it (`_fresh_outputs`)
        fresh = [(i, o) for i, o in enumerate(plan.outputs) if o.io in ("indirect", "patch")]
        self._fresh_buffers = [o.buffer for _, o in fresh]
        self._fresh_specs = [
            (
                i,
                (
                    o.slot,
                    self._keys.get(plan.root(o.buffer).id, -1),
                    *_shape_strides_prototype(plan.buffers[o.buffer].layout, self.device),
                ),
            )
            for i, o in fresh
        ]
        graphed_roots, eager_results = set(), set()
        self._in_segments: set[int] = set()  # roots that nodes of segments touch
        for step in plan.steps:
            graphed = is_graphed(step)
            for node in step.nodes:
                roots = {plan.buffers[b].root for b in node.args + node.reads + node.writes}
                if isinstance(step, Segment):
                    self._in_segments |= roots
                if graphed:
                    graphed_roots |= roots
                elif node.kind in ("library", "host"):
                    eager_results.update(r for r in node.results if plan.buffers[r].slot < 0)
        self._homes = {r: empty(plan.buffers[r].layout, self.device) for r in eager_results & graphed_roots}
        for root, home in self._homes.items():
            self._place(root, home)
        self._extra_copied_bytes = sum(t.numel() * t.element_size() for _, t in self._written) + sum(
            plan.buffers[r].layout.nbytes() for r in self._homes
        )

    def _place_arena(self) -> None:
        for buf in self.plan.buffers:
            if buf.kind == "alloc":
                self._place(buf.id, self.arena, buf.arena_offset)

    def _fresh_outputs(self) -> None:
        """What each call allocates for its outputs, as they are returned now: a fresh tensor for each one a
        kernel or an inlined recording writes; nothing where a vendor call's own result is returned (run
        eagerly), or a copy of what its recording wrote: a tensor as large as the output would go unused."""
        self._fresh = [
            spec
            if self._vendor_outputs.get(i, "fresh") == "fresh" and i not in self._staged_outputs
            else None
            for i, spec in self._fresh_specs
        ]
        self._all_fresh = (
            all(o.io in ("indirect", "patch") for o in self.plan.outputs)
            and all(mode == "fresh" for mode in self._vendor_outputs.values())
            and not self._staged_outputs
        )
        # the buffers of outputs returned as they are, on storage each call places anew (`_returned_roots`)
        self._returned = [b for root in self._returned_roots() for b in self.family[root]]

    def _returned_roots(self) -> list[int]:
        """The roots of outputs returned as they are that each call places anew (its fresh tensors, results
        of eager ATen calls): the call drops them as it returns, so that a result lives as long as its caller
        keeps it. Homes stay, and what is returned as a copy (`measure_io` copies it again)."""
        plan = self.plan
        copied = {
            plan.root(o.buffer).id
            for i, o in enumerate(plan.outputs)
            if o.io == "copy" or i in self._staged_outputs
        }
        returned = {plan.root(o.buffer).id for o in plan.outputs} - copied - set(self._homes)
        eager = self._eager_results()
        return sorted(r for r in returned if plan.buffers[r].kind == "output" or r in eager)

    def _place(self, root: int, storage: torch.Tensor, byte_offset: int | None = None) -> None:
        """Points every buffer on `root`'s storage at `storage`. Layout offsets count from `byte_offset`
        bytes into it (arena), or else from where `storage` (a tensor with the root's layout) begins."""
        layout = self.plan.buffers[root].layout
        if byte_offset is None:
            byte_offset = (
                storage.storage_offset() * storage.element_size() - layout.offset * layout.dtype.itemsize
            )
            storage = storage if storage.storage_offset() == 0 else _base(storage)
        for b in self.family[root]:
            self.tensors[b] = view_of(storage, self.plan.buffers[b].layout, byte_offset)

    def _place_call_roots(self, outputs: list[torch.Tensor]) -> None:
        """Eager steps read inputs reached through the table and outputs as tensors: place this call's."""
        for i, _, key, _, _ in self._slotted:
            self._place(self.inputs[i].buffer, self._patch_staging.get(key, self._call_inputs[i]))
        for buffer, out in zip(self._fresh_buffers, outputs, strict=True):
            # (a vendor call places its own result; a staged output stays on its buffer)
            if out is not None and self.plan.buffers[buffer].kind == "output":
                self._place(buffer, out)

    def _take(self, node: Node, outputs: list[Any], recorded: bool) -> None:
        """Makes an ATen call's outputs the node's results, in the layouts the plan states (a recording put
        its results in them already, `_record`)."""
        if len(outputs) < len(node.results):
            raise RuntimeError(
                f"{node.location}: {node.op} returned {len(outputs)} tensors, the plan expects {len(node.results)}"
            )
        if not recorded:
            outputs = self._in_plan_layouts(node, outputs)
        for b, out in zip(node.results, outputs, strict=False):
            layout = self.plan.buffers[b].layout
            if not self.plan.buffers[b].used:
                continue
            if not isinstance(out, torch.Tensor):
                raise RuntimeError(
                    f"{node.location}: {node.op} returned a {type(out).__name__}, not a tensor"
                )
            if layout.is_dynamic and not recorded and out.dim() == layout.rank:
                self.tensors[b] = out  # sizes the data decided: only host steps read it
                continue
            if not _has_layout(out, layout):
                raise RuntimeError(
                    f"{node.location}: {node.op} gave {layout_of(out)}, the plan says {layout}"
                )
            home = self._homes.get(b)
            if home is not None:
                home.copy_(out)
            elif out.device != self.device and b in self._in_segments:
                raise RuntimeError(
                    f"{node.location}: {node.op} gave a tensor on {out.device} for the GPU's nodes"
                )
            else:
                self._place(b, out)
                slot = self.plan.buffers[b].slot
                if slot >= 0:
                    self.slot_values[1 + slot] = out.data_ptr()

    # ---------------------------------------------------------------------------------- eager runners

    def _step_runners(self, step: Segment | HostStep) -> list[Runner]:
        runners: list[Runner] = [self._eager_table if reads_table(self.plan, step) else self._eager_place]
        if isinstance(step, HostStep):
            if all(self.plan.buffers[self.plan.root(b).id].kind == "result" for b in step.node.reads):
                runners = [_nothing]  # it reads only what ATen calls returned (numbers read back)
            return [*runners, self._aten(step.node, side=False)]
        graphed = step.mode == "graph"
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

    def _eager_place(self) -> None:
        """Before eager work that does not read the table: this call's inputs and outputs as tensors."""
        self._place_call_roots(self._outputs_now)

    def _eager_table(self) -> None:
        """Before eager work that reads the table: the tensors placed, and the table written by an eager launch
        of the graphs' head kernel (its parameters are copied at launch, so calls queued back to back each
        see their own addresses, and the host does not wait for the GPU as a host-to-device copy would)."""
        self._place_call_roots(self._outputs_now)
        if self.writer is not None:
            self.writer.launch((1, 1, 1), self.table_params, self._stream)

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
            call = self.calls[id(node)] = AtenCall(node.op, node.aten_args, self.device, node.kind == "host")
        except ValueError as exc:
            raise PlanError(f"{node.location}: {exc}") from exc

        def run() -> None:
            inputs = [self._tensor(b) for b in node.reads]
            if not side:
                outputs = call(inputs)
                if not self._built and node.kind == "library":  # the warm-up checks each call once
                    check_results(node, inputs, outputs)
                self._take(node, outputs, recorded=False)
                return
            # No record_stream on the outputs: it would keep each freed output allocated until the GPU
            # caught up, and the host runs far ahead here (a model's every result at once). Without it, a
            # freed output's memory goes back to the side stream, whose next use waits for this stream.
            current = torch.cuda.current_stream(self.device)
            self.side.wait_stream(current)
            with torch.cuda.stream(self.side):
                outputs = call(inputs)
            current.wait_stream(self.side)
            check_results(node, inputs, outputs)  # (`side`: the warm-up of a library call)
            self._take(node, outputs, recorded=False)

        return run

    def _eager_copy(self, node: Node) -> Runner:
        src, dst = node.reads[0], node.writes[0]
        return lambda: _bytes(self._tensor(dst)).copy_(_bytes(self._tensor(src)))

    def _eager_fill(self, node: Node) -> Runner:
        dst, byte = node.writes[0], node.byte
        return lambda: _bytes(self._tensor(dst)).fill_(byte)

    def _pointers(self, node: Node) -> list[int]:
        """The kernel's pointer arguments: a table slot's address for buffers reached through the table,
        else the buffer's first element, checked against the alignment the signature promises."""
        table = self.table.data_ptr()
        pointers = []
        for i, (b, indirect, aligned) in enumerate(
            zip(node.args, self._through_table[node.kernel], self._aligned[node.kernel], strict=True)
        ):
            if indirect:
                pointers.append(table + 8 * self.plan.root(b).slot)
                continue
            pointer = self._tensor(b).data_ptr()
            if aligned and pointer % 16:
                layout = self.plan.buffers[b].layout
                raise PlanError(
                    f"{node.location}: argument {i} of kernel @{node.kernel} is promised 16-byte aligned, "
                    f"but its buffer ({layout}) starts at {pointer:#x}"
                )
            pointers.append(pointer)
        return pointers

    # ----------------------------------------------------------------------------------------- graphs

    def _build(self) -> None:
        self.pool = torch.cuda.graph_pool_handle()  # released once the graphs recorded into it go
        self._next_free = 0  # into self._pooled
        program: list[Runner | None] = []
        # The recordings' cuBLAS workspace comes from their pool; a build that records nothing leaves
        # cuBLAS's workspaces alone.
        with own_workspaces() if self._records else contextlib.nullcontext():
            for s, (step, runners) in enumerate(zip(self.plan.steps, self._runners, strict=True)):
                if is_graphed(step):
                    if step.nodes:
                        graph = self._build_segment(step)
                        self._graphs.append(graph)
                        program.append(self._launcher(graph))
                    program.append(
                        self._freer([r for (t, _), rs in self._transient.items() if t == s for r in rs])
                    )
                else:  # a placer, then one runner per node, each followed by the frees after its node
                    for n, run in enumerate(runners):
                        program += [run if run is not _nothing else None]
                        program += [self._freer(self._transient.get((s, n - 1), []))]
        self._program = [run for run in program if run is not None]
        self._free(root for _, root in self._pooled)  # all built: only the graphs use them now

    def _transient_results(self) -> dict[tuple[int, int], list[int]]:
        """Results of eager steps (ATen calls run at every call), by the position (step, node) of their
        last use: the runtime drops them there, as eager would, instead of holding every one until the
        next call (a segment run eagerly would otherwise keep all its intermediates alive at once)."""
        plan = self.plan
        kept = {plan.root(o.buffer).id for o in plan.outputs} | set(self._homes)
        last = last_uses(plan)
        by_position: dict[tuple[int, int], list[int]] = {}
        for root in sorted(self._eager_results() - kept):
            by_position.setdefault(last[root], []).append(root)
        return by_position

    def _eager_results(self) -> set[int]:
        """The roots of the results of eager steps' ATen calls (made at every call)."""
        plan = self.plan
        return {
            plan.root(r).id
            for step in plan.steps
            if not is_graphed(step)
            for node in step.nodes
            if node.kind in ("library", "host")
            for r in node.results
        }

    def _freer(self, roots: list[int]) -> Runner | None:
        return (lambda: self._free(roots)) if roots else None

    def _free(self, roots: Iterable[int]) -> None:
        """Drops the runtime's tensors on these roots' storage, returning it to its allocator (or pool)."""
        for root in roots:
            for b in self.family[root]:
                self.tensors[b] = None

    def _free_before(self, position: tuple[int, int]) -> None:
        """Frees the pooled results whose last use comes before `position`, the next recording's: it may
        reuse their memory (`dependencies` orders it after every node that touched them)."""
        i = self._next_free
        while i < len(self._pooled) and self._pooled[i][0] < position:
            self._free([self._pooled[i][1]])
            i += 1
        self._next_free = i

    def _launcher(self, graph: SegmentGraph) -> Runner:
        """The graph's launch: the table's writer updated, and each patched node whose addresses differ
        from the ones it holds (an address the allocator hands out again, as a fresh output's often is,
        costs no update)."""
        graph_exec = graph.graph_exec
        patches = [(p.node, p.params, p.places) for p in graph.patches]
        writer = None if graph.writer is None else (graph.writer, self._writer_node_params())
        addresses, slot_values = self._addresses, self.slot_values

        def launch() -> None:
            try:
                for node, params, places in patches:
                    changed = False
                    for place, key, delta in places:
                        address = addresses[key] + delta
                        if place.value != address:
                            place.value = address
                            changed = True
                    if changed:
                        _update(graph_exec, node, params, places)
                if writer is not None:
                    driver.set_kernel_params(graph_exec, *writer)
            except BaseException:  # the table's words may not be what the writers hold (see replay.c)
                slot_values[1:] = [0] * (len(slot_values) - 1)
                raise
            driver.launch_graph(graph_exec, self._stream)

        return launch

    def _native_replay(self) -> Any:
        """This runtime's call as `native.py`'s C function, where a call needs nothing but its inputs' and
        fresh outputs' addresses, and its Python numbers' bits, written into parameter words and the graphs
        launched: every step a graph, no input staged or copied, numbers of the table types C writes, no
        random seed, every output a fresh tensor. None elsewhere, or where the C function is not built
        (`PYGRAPH_NATIVE`)."""
        numbers = {
            i: _TABLE_TYPES.get(self.plan.buffers[self.inputs[i].buffer].layout.dtype.name)
            for i, _ in self._valued
        }
        if (
            not all(is_graphed(step) for step in self.plan.steps)
            or len(self._program) != len(self._graphs)
            or self._staged
            or None in numbers.values()
            or self.rng
            or self._patch_staging
            or not self._all_fresh
        ):
            return None
        module = native.replay_module()
        if module is None:
            return None
        # Groups of nodes updated together: 0, every graph's table writer (they read the same words);
        # then one per patched node.
        writer = None if self.writer is None else self._writer_node_params()
        entries, by_key = [], {}
        for graph in self._graphs:
            if writer is not None and graph.writer is not None:
                entries.append((int(graph.graph_exec), int(graph.writer), writer.getPtr(), 0))
            for patch in graph.patches:
                group = len(entries) + 1
                entries.append((int(graph.graph_exec), int(patch.node), patch.params.getPtr(), group))
                for place, key, delta in patch.places:
                    by_key.setdefault(key, []).append((ctypes.addressof(place), delta, group))
        table = ctypes.addressof(self.slot_values)
        places: list[tuple[int, int, int]] = []

        def targets(slot: int, key: int) -> tuple[int, int]:
            first = len(places)
            places.extend([(table + 8 * (1 + slot), 0, 0)] if slot >= 0 else by_key.get(key, []))
            return first, len(places)

        specs = {
            i: (
                layout.shape,
                torch_dtype(layout),
                self._index,
                layout.strides,
                self._align[i],
                *targets(slot, key),
            )
            for i, slot, key, _, layout in self._slotted
        }
        specs |= {i: (numbers[i], *targets(slot, -1)) for i, slot in self._valued}
        inputs = tuple(specs[i] for i in range(len(self.inputs)))
        outputs = tuple(
            (prototype, shape, strides, *targets(slot, key))
            for slot, key, shape, strides, prototype in self._fresh
        )
        return module.Replay(
            *native.driver_functions(),
            torch._C._cuda_getDevice,
            torch._C._cuda_getCurrentRawStream,
            self._index,
            torch.Tensor,
            inputs,
            outputs,
            tuple(places),
            tuple(entries),
            tuple(int(g.graph_exec) for g in self._graphs),
            len(entries) + 1,
            len(outputs) == 1,
            native.raise_cuda_error,
            (writer, self._graphs),
        )

    def _writer_node_params(self) -> cu.CUDA_KERNEL_NODE_PARAMS:
        p = cu.CUDA_KERNEL_NODE_PARAMS()
        p.func = self.writer.handle
        p.gridDimX, p.gridDimY, p.gridDimZ = 1, 1, 1
        p.blockDimX, p.blockDimY, p.blockDimZ = self.writer.block, 1, 1
        p.sharedMemBytes = self.writer.cubin.shared
        p.kernelParams = self.table_params.address
        return p

    def _build_segment(self, segment: Segment) -> SegmentGraph:
        builder = GraphBuilder(self.context)
        recordings: list[Recording] = []
        patches: list[Patch] = []
        head = 1 if self.writer is not None else 0
        if head:
            builder.kernel([], self.writer, (1, 1, 1), self.table_params)
        for j, (node, deps) in enumerate(zip(segment.nodes, dependencies(self.plan, segment), strict=True)):
            deps = [d + head for d in deps] or ([0] if head else [])
            try:
                if node.kind == "kernel":
                    function = self.functions[node.kernel]
                    params = function.params(self._pointers(node))
                    p = builder.kernel(deps, function, node.grid, params)
                    places = self._places(node, params)
                    if places:
                        patches.append(Patch(builder.nodes[-1][0], p, places, [params]))
                elif node.kind == "library":
                    self._free_before((segment.id, j))
                    recording = self._record(node)
                    if self._patched_roots(node):
                        recording, inlined = self._inline(builder, deps, node, recording)
                        patches += inlined
                    elif node_kinds(recording.handle):
                        builder.child(deps, recording.handle)
                    else:
                        builder.skip(deps)
                    recordings.append(recording)
                else:
                    dst = self._tensor(node.writes[0]).data_ptr()
                    nbytes = self.plan.buffers[node.writes[0]].layout.nbytes()
                    if node.kind == "copy":
                        builder.memcpy(deps, dst, self._tensor(node.reads[0]).data_ptr(), nbytes)
                    else:
                        builder.memset(deps, dst, node.byte, nbytes)
            except CudaError as exc:
                raise RuntimeError(f"{node.location}: {exc}") from exc
        try:
            graph_exec = builder.instantiate()
        except CudaError as exc:
            raise RuntimeError(f"{segment.nodes[0].location}: the segment's graph: {exc}") from exc
        writer = builder.nodes[0][0] if head else None
        return SegmentGraph(
            builder.graph, graph_exec, writer, recordings, patches, builder.programmatic_edges
        )

    def _patched_roots(self, node: Node) -> dict[int, int]:
        """The patched roots a library node touches (reads, writes or returns): root -> key."""
        roots = {self.plan.root(b).id for b in node.reads + node.writes + node.results}
        return {r: self._keys[r] for r in roots if r in self._keys}

    def _places(self, node: Node, params: KernelParams) -> list[tuple[ctypes.c_uint64, int, int]]:
        """Where a generated kernel's parameters hold the address of a view of a patched root: the
        parameter, the root's key and the view's byte offset from the root's address."""
        places = []
        for i, b in enumerate(node.args):
            root = self.plan.root(b).id
            key = self._keys.get(root, -1)
            if key >= 0:
                delta = self._tensor(b).data_ptr() - self._tensor(root).data_ptr()
                places.append((ctypes.c_uint64.from_buffer(params.values, 8 * i), key, delta))
        return places

    def _inline(
        self, builder: GraphBuilder, deps: list[int], node: Node, recording: Recording
    ) -> tuple[Recording, list[Patch]]:
        """Adds a library node's recording to the graph with its patched roots' addresses made patchable;
        where the recording cannot be patched, stages those inputs (re-recording the call on the staging
        buffers) and adds it as a child node instead."""
        roots = self._patched_roots(node)
        buffers = {key: (self._tensor(root).data_ptr(), self._extent(root)) for root, key in roots.items()}
        outputs = {i for i, o in enumerate(self.plan.outputs) if self.plan.root(o.buffer).id in roots}
        try:
            patches = builder.inline(deps, recording.handle, buffers)
        except NotPatchable as exc:
            reason = f"{node.location}: {node.op}: {exc}"
            inputs = [(root, key) for root, key in roots.items() if root in self._input_index]
            for root, key in inputs:
                self._stage_patched(root, key, reason)
            for i in outputs:  # returned as a copy of what the recording writes
                self.staging_reasons.append(f"output {i} is copied: {reason}")
                if i in self._vendor_outputs:  # the call's own result
                    self._vendor_outputs[i] = "copy"
                else:  # written in out form: into a buffer of the runtime's from now on
                    self._stage_output(i, roots)
            if inputs or self._staged_outputs.keys() & outputs:
                recording = self._record(node)
            builder.child(deps, recording.handle)
            return recording, []
        self._inlined += 1
        for root, key in roots.items():
            address = buffers[key][0]
            i = self._input_index.get(root)
            if i is not None:  # a new address must be as aligned as the one the vendor's kernels saw
                self._align[i] = max(self._align[i], min(address & -address, 256))
        for i in outputs & self._vendor_outputs.keys():  # the graph writes each call's fresh tensor; what
            self._vendor_outputs[i] = "fresh"  # the recording allocated goes
            self._free([self.plan.root(self.plan.outputs[i].buffer).id])
        return recording, patches

    def _stage_output(self, i: int, keys: dict[int, int]) -> None:
        """Output `i`, written by a recording that patching cannot follow: the recording writes a buffer of
        the runtime's, which each call copies out (nodes patched with its address keep that address). One
        buffer, whichever recordings write it."""
        if i in self._staged_outputs:
            return
        root = self.plan.root(self.plan.outputs[i].buffer).id
        staging = self._staged_outputs[i] = empty(self.plan.buffers[root].layout, self.device)
        self._place(root, staging)
        self._addresses[keys[root]] = staging.data_ptr()

    def _stage_patched(self, root: int, key: int, reason: str) -> None:
        """An input that a recording holds in a way patching cannot follow: staged from now on, in one
        staging buffer whichever recordings read it (each call refreshes that one: a second buffer for a
        second such recording left the first reading a stale copy)."""
        if key in self._patch_staging:
            return
        i = self._input_index[root]
        staging = empty(self.plan.buffers[root].layout, self.device)
        staging.copy_(self._tensor(root))
        self._place(root, staging)
        self._patch_staging[key] = staging
        self._addresses[key] = staging.data_ptr()
        if self._writes_input[i]:
            self._written.append((i, staging))
        self.staging_reasons.append(f"input '{self.inputs[i].name}' is staged: {reason}")

    def _extent(self, root: int) -> int:
        """Bytes from a root's first element to the end of the last it can reach."""
        layout = self.plan.buffers[root].layout
        return (layout.storage_elements() - layout.offset) * layout.dtype.itemsize

    def _record(self, node: Node) -> Recording:
        call = self.calls[id(node)]
        inputs = [self._tensor(b) for b in node.reads]
        self._free(node.results)  # the warm-up's results: the recording's replace them, none beside them
        try:
            recording, outputs = record(
                lambda: self._in_plan_layouts(node, call(inputs)), self.side, self.pool
            )
        except Exception as exc:
            raise UnrecordableCall(node.location, node.op, exc) from exc
        self.captures += 1
        self._take(node, outputs, recorded=True)
        return recording

    def _in_plan_layouts(self, node: Node, outputs: list[Any]) -> list[Any]:
        """An ATen call's results, each copied into the layout the plan states where it has that shape and
        dtype but other strides or another storage offset: ATen's CUDA kernels and the fake kernels the
        plan's layouts come from disagree on a few ops (upsample_bilinear2d of fewer than 16 channels-last
        channels returns channels-last; its fake kernel says contiguous), and an eager call may choose its
        strides. The offset places every view of the result (`_place`) and decides whether its first
        element is as aligned as the kernels reading it were promised (`slice_scatter` of a view returns
        the view's offset in a clone of its whole storage: fuzz seed 71000 on the GPU read a promised
        16-byte-aligned result 204 bytes into its allocation). Recorded, the copy is part of the recording."""
        placed = list(outputs)
        for i, (b, out) in enumerate(zip(node.results, outputs, strict=False)):
            layout = self.plan.buffers[b].layout
            if (
                isinstance(out, torch.Tensor)
                and self.plan.buffers[b].used
                and not layout.is_dynamic
                and tuple(out.shape) == layout.shape
                and out.dtype == torch_dtype(layout)
                and (not _has_layout(out, layout) or out.storage_offset() != layout.offset)
            ):
                placed[i] = empty(layout, out.device)
                placed[i].copy_(out)
        return placed

    def _release(self) -> None:
        """Drops the graphs, so that the next call builds anew (its warm-up returns vendor calls' results)."""
        self.native = None  # first: it holds the graphs' raw handles
        for graph in self._graphs:
            graph.destroy()
        self._graphs, self._program, self._built = [], [], False
        self._vendor_outputs = dict.fromkeys(self._vendor_outputs, "own")
        self._fresh_outputs()


def _table_writer(slots: int, arch: int) -> Cubin:
    """A one-thread kernel storing its `slots` 64-bit parameters into the table (the per-call refresh)."""
    names = [f"v{i}" for i in range(slots)]
    body = "".join(f"    tl.store(table + {i}, {n})\n" for i, n in enumerate(names))
    source = f"import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef write_table(table, {', '.join(names)}):\n{body}"
    kernel = TritonKernel(f"write_table_{slots}", source, "write_table", ["*i64", *["i64"] * slots], 1, 1)
    return compile_kernel(kernel, arch)


def _has_layout(t: torch.Tensor, layout: Layout) -> bool:
    """Same sizes, dtype and strides (a stride of a size-1 dim addresses nothing)."""
    return (
        tuple(t.shape) == layout.shape
        and t.dtype == torch_dtype(layout)
        and all(n == 1 or s == w for n, s, w in zip(layout.shape, t.stride(), layout.strides, strict=True))
    )


def _nothing() -> None:
    """The placer of a host step that reads only what earlier ATen calls returned (left out of replays)."""


def _base(t: torch.Tensor) -> torch.Tensor:
    """A tensor over the whole storage of `t`, from its start (byte offsets count from there)."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The bytes a dense tensor covers (from its first element, the lowest address), as 1-D uint8."""
    out = torch.empty(0, dtype=torch.uint8, device=t.device)
    return out.set_(
        t.untyped_storage(), t.storage_offset() * t.element_size(), (t.numel() * t.element_size(),), (1,)
    )


def _update(
    graph_exec: cu.CUgraphExec,
    node: cu.CUgraphNode,
    params: cu.CUDA_KERNEL_NODE_PARAMS,
    places: list[tuple[ctypes.c_uint64, int, int]],
) -> None:
    """A patched node's parameters into the executable graph. Its places then hold what the node holds,
    which the launcher compares with each call's addresses; a failed update clears them, so that the
    next call updates the node whatever its addresses."""
    try:
        driver.set_kernel_params(graph_exec, node, params)
    except BaseException:
        for place, _, _ in places:
            place.value = 0
        raise


def _host_us(fn: Callable[[], Any], repeats: int) -> float:
    """Host time per call of `fn`, the GPU synchronised before and after."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / repeats * 1e6


def _gpu_us(fn: Callable[[], Any], repeats: int, runtime: CudaRuntime) -> float:
    """GPU time per call of `fn`: `repeats` calls recorded into a CUDA graph and replayed between two
    events, so that launch costs on the host do not count. The runtime's own launches go to the recording
    stream meanwhile."""
    graph, caller = torch.cuda.CUDAGraph(), runtime._stream
    fn()  # anything made on first use is made outside the recording
    try:
        with torch.cuda.graph(graph):
            runtime._stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
            for _ in range(repeats):
                fn()
    finally:
        runtime._stream = caller
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / repeats


def _shape_strides_prototype(
    layout: Layout, device: torch.device
) -> tuple[tuple[int, ...], tuple[int, ...], torch.Tensor]:
    """The sizes and strides of an output, and an empty tensor of its dtype and device to allocate it from."""
    return layout.shape, layout.strides, torch.empty(0, dtype=torch_dtype(layout), device=device)

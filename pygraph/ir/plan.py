"""Reads plan-level IR into plain Python objects, the form the emulator and the CUDA backend execute.

Reading also checks what the IR verifier cannot see across ops (symbols, kernel signatures, arena
bounds, values used across segments), so a hand-edited `.plan.mlir` fails here with a located message
rather than in the backend. Graph edges are derived from the buffers each node reads and writes
(`dependencies`), so the plan states them without a separate, stale-prone list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import aten, dtypes
from . import dialect as d
from ._mlir import func, ir
from .attrs import int_list, str_list
from .buffers import written_operand
from .layout import Layout

ARENA_ALIGNMENT = 256  # bytes; cudaMalloc's alignment, enough for every vector width


class PlanError(Exception):
    pass


def _error(op: Any, message: str) -> PlanError:
    return PlanError(f"{op.location}: {message}")


# -------------------------------------------------------------------------------------- plan objects


@dataclass(frozen=True)
class Operand:
    """An ATen argument that is the call's operand `index`."""

    index: int


@dataclass(frozen=True)
class Device:
    """An ATen device argument; the backend substitutes its own device."""

    kind: str


@dataclass
class Buffer:
    id: int
    kind: str  # "arg" | "alloc" | "view" | "constant" | "result" | "output"
    layout: Layout
    root: int  # id of the buffer that owns the storage (itself for roots)
    arena_offset: int = -1  # alloc: byte offset in the arena
    value: Any = None  # constant: a numpy array
    index: int = -1  # output: which output of the call
    slot: int = -1  # a root the table reaches (indirect input, output, host result): its slot
    used: bool = True  # False for an ATen call's result that nothing reads (backends ignore it)
    # a host op's view (`x[i.item()]`): the buffer whose bytes it lies in, where the data say
    within: int = -1


@dataclass
class Argument:
    buffer: int
    role: str  # "input" | "parameter" | "buffer" | "constant" | "derived" | "rng" (a call's seed or offset)
    name: str
    io: str  # how the runtime reaches it each call: "direct" | "stage" | "indirect" | "copy" | "value" | "patch"
    device: str
    slot: int = -1  # "indirect" and "copy": the table slot holding its address; "value": holding its data
    choice: str = ""  # the candidate parameter-indirection chose ...
    costs: dict[str, float] = field(default_factory=dict)  # ... among these (estimated us per call)
    measured: dict[str, float] = field(default_factory=dict)  # the choice on the GPU: host_us, gpu_us


@dataclass
class Output:
    buffer: int
    io: str  # "copy" (the runtime returns a copy) | "indirect" (the graph writes a fresh tensor) | "static"
    # | "patch" (the graph writes a fresh tensor whose address the runtime patches into its nodes: a
    # pygraph.output a kernel writes, or a vendor call's result)
    # | "fresh" (a host op's result, fresh each call, returned as is)
    slot: int = -1
    choice: str = ""
    costs: dict[str, float] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)


@dataclass
class Node:
    index: int
    kind: str  # "kernel" | "library" | "copy" | "fill"
    reads: list[int]
    writes: list[int]
    location: str
    # kernel
    kernel: str = ""
    grid: tuple[int, int, int] = (1, 1, 1)
    args: list[int] = field(default_factory=list)
    # library (and host steps)
    op: str = ""
    aten_args: list[Any] = field(default_factory=list)
    results: list[int] = field(default_factory=list)
    # fill
    byte: int = 0


@dataclass
class Segment:
    id: int
    mode: str  # "graph" | "eager"
    nodes: list[Node]
    info: dict[str, Any]
    yields: list[int]  # buffer ids yielded ...
    results: list[int]  # ... and the ids they get after the segment


@dataclass
class HostStep:
    node: Node  # kind "host": op, aten_args, results, reads
    reason: str

    @property
    def nodes(self) -> list[Node]:
        """Its one node, so that every step lists its nodes alike."""
        return [self.node]


@dataclass
class TritonKernel:
    name: str
    source: str
    entry: str
    signature: list[str]
    num_warps: int
    num_stages: int


@dataclass
class Plan:
    buffers: list[Buffer]
    arguments: list[Argument]
    outputs: list[Output]
    steps: list[Segment | HostStep]
    kernels: dict[str, TritonKernel]
    arena_bytes: int
    table_slots: int = 0
    random_numbers: int = 0  # drawn per call from the `rng` arguments' seed and offset

    def root(self, buffer: int) -> Buffer:
        return self.buffers[self.buffers[buffer].root]

    @property
    def segments(self) -> list[Segment]:
        return [s for s in self.steps if isinstance(s, Segment)]


# -------------------------------------------------------------------------------------------- reading


def read_plan(module: ir.Module) -> Plan:
    return _Reader(module).read()


def triton_kernels(module: ir.Module) -> dict[str, TritonKernel]:
    """The module's generated kernels by symbol."""
    return {
        op.sym_name.value: TritonKernel(
            op.sym_name.value,
            op.source.value,
            op.entry.value,
            str_list(op.signature),
            ir.IntegerAttr(op.num_warps).value,
            ir.IntegerAttr(op.num_stages).value,
        )
        for op in module.body.operations
        if isinstance(op, d.TritonKernelOp)
    }


class _Reader:
    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self.ids: dict[ir.Value, int] = {}
        self.buffers: list[Buffer] = []

    def read(self) -> Plan:
        kernels = triton_kernels(self.module)
        main = None
        for op in self.module.body.operations:
            if isinstance(op, d.TritonKernelOp):
                continue
            if isinstance(op, func.FuncOp) and "sym_visibility" not in op.attributes:
                if main is not None:
                    raise _error(op, "a plan has exactly one public function")
                main = op
            elif isinstance(op, func.FuncOp):
                raise _error(op, f"function @{op.sym_name.value} was not lowered: run codegen-triton")
        if main is None:
            raise PlanError("the module has no public function to execute")
        self.kernels = kernels
        arena_bytes = (
            ir.IntegerAttr(main.attributes[d.ARENA_BYTES]).value if d.ARENA_BYTES in main.attributes else 0
        )
        self.table_slots = (
            ir.IntegerAttr(main.attributes[d.TABLE_SLOTS]).value if d.TABLE_SLOTS in main.attributes else 0
        )
        random_numbers = (
            ir.IntegerAttr(main.attributes[d.RANDOM_NUMBERS]).value
            if d.RANDOM_NUMBERS in main.attributes
            else 0
        )
        self.result_attrs = _result_attrs(main)
        arguments = self._arguments(main)
        steps: list[Segment | HostStep] = []
        outputs: list[Output] = []
        block = main.regions[0].blocks[0]
        for op in block.operations:
            if isinstance(op, d.SegmentOp):
                steps.append(self._segment(op, len(steps)))
            elif isinstance(op, d.HostOp):
                steps.append(HostStep(self._aten_node(op, 0, "host"), op.reason.value))
            elif isinstance(op, d.BUFFER_OPS):
                self._buffer(op)
            elif isinstance(op, func.ReturnOp):
                outputs = self._outputs(main, op)
            elif isinstance(op, d.NODE_OPS):
                raise _error(
                    op, f"'{op.operation.name}' must be inside a pygraph.segment (run form-segments)"
                )
            else:
                raise _error(op, f"'{op.operation.name}' is not a plan-level op")
        for buf in self.buffers:
            if buf.kind == "alloc":
                self._check_arena(buf, arena_bytes, main)
        self._mark_unused(steps, outputs)
        return Plan(
            self.buffers, arguments, outputs, steps, kernels, arena_bytes, self.table_slots, random_numbers
        )

    def _mark_unused(self, steps: list[Segment | HostStep], outputs: list[Output]) -> None:
        """ATen results nothing reads: their layouts need not match (fake kernels may misstate an empty,
        unused result), so backends ignore them."""
        touched = {o.buffer for o in outputs}
        for step in steps:
            for node in step.nodes:
                touched.update(node.reads)
                if node.kind not in ("library", "host"):  # an ATen call's writes are its own results
                    touched.update(node.writes)
        roots = {self.buffers[b].root for b in touched}
        for buf in self.buffers:
            if buf.kind == "result" and buf.id not in roots:
                buf.used = False

    def _slot(self, attrs: dict[str, ir.Attribute], through_table: bool, what: str, op: Any) -> int:
        slot = ir.IntegerAttr(attrs[d.SLOT]).value if d.SLOT in attrs else -1
        if through_table and not 0 <= slot < self.table_slots:
            raise _error(op, f"{what} is reached through the table but has slot {slot} of {self.table_slots}")
        return slot

    def _outputs(self, main: Any, ret: Any) -> list[Output]:
        results = self.result_attrs
        outputs = []
        for i, value in enumerate(ret.operands):
            io = ir.StringAttr(results[i][d.IO]).value if d.IO in results[i] else "copy"
            buf = self.buffers[self._id(value, ret)]
            if io == "fresh" and self.buffers[buf.root].kind != "result":
                raise _error(
                    ret, f"output {i} is 'fresh' but returns a {buf.kind} buffer, not a host op's result"
                )
            root = self.buffers[buf.root]
            vendor = (
                io == "patch" and root.kind == "result" and buf.layout == root.layout
            )  # written by a call
            if (io in ("indirect", "patch")) != (buf.kind == "output") and not vendor:
                raise _error(ret, f"output {i} is '{io}' but returns a {buf.kind} buffer")
            if buf.kind == "output" and buf.index != i:
                raise _error(ret, f"output {i} returns the buffer of output {buf.index}")
            slot = self._slot(results[i], io == "indirect", f"output {i}", ret)
            outputs.append(Output(buf.id, io, slot, *_choice(results[i])))
        return outputs

    def _arguments(self, main: Any) -> list[Argument]:
        args = []
        attrs = _arg_attrs(main)
        for i, value in enumerate(main.regions[0].blocks[0].arguments):
            a = attrs[i]
            for key in (d.ROLE, d.NAME, d.LAYOUT):
                if key not in a:
                    raise _error(main, f"argument {i} has no {key}")
            layout = Layout.from_attr(a[d.LAYOUT])
            buf = self._new(value, "arg", layout)
            io = ir.StringAttr(a[d.IO]).value if d.IO in a else "direct"
            slot = self._slot(a, io in ("indirect", "copy", "value"), f"argument {i}", main)
            if io == "value" and layout.nbytes() > 8:
                raise _error(main, f"argument {i} travels in a table slot but has {layout.nbytes()} bytes")
            buf.slot = slot if io != "value" else -1  # a value slot holds the data: pointers to it are plain
            args.append(
                Argument(
                    buf.id,
                    ir.StringAttr(a[d.ROLE]).value,
                    ir.StringAttr(a[d.NAME]).value,
                    io,
                    ir.StringAttr(a[d.DEVICE]).value if d.DEVICE in a else "",
                    slot,
                    *_choice(a),
                )
            )
        return args

    def _new(self, ssa: ir.Value, kind: str, layout: Layout, root: int | None = None, **kw: Any) -> Buffer:
        buf = Buffer(len(self.buffers), kind, layout, len(self.buffers) if root is None else root, **kw)
        self.buffers.append(buf)
        self.ids[ssa] = buf.id
        return buf

    def _id(self, value: ir.Value, user: Any) -> int:
        try:
            return self.ids[value]
        except KeyError:
            raise _error(user, "uses a value that is not a plan buffer") from None

    def _buffer(self, op: Any) -> None:
        layout = Layout.from_attr(op.layout)
        if isinstance(op, d.AllocOp):
            self._new(op.buf, "alloc", layout, arena_offset=ir.IntegerAttr(op.arena_offset).value)
        elif isinstance(op, d.OutputOp):
            index = ir.IntegerAttr(op.index).value
            if not 0 <= index < len(self.result_attrs):
                raise _error(op, f"output {index} does not exist ({len(self.result_attrs)} outputs)")
            attrs = self.result_attrs[index]
            patched = d.IO in attrs and ir.StringAttr(attrs[d.IO]).value == "patch"
            slot = self._slot(attrs, not patched, f"output {index}", op)
            self._new(op.buf, "output", layout, index=index, slot=slot)
        elif isinstance(op, d.ViewOp):
            source = self.buffers[self._id(op.source, op)]
            if layout.dtype != source.layout.dtype:
                raise _error(op, f"view changes dtype from {source.layout.dtype.name} to {layout.dtype.name}")
            root = self.buffers[source.root]
            if root.kind != "arg" and layout.storage_elements() > root.layout.storage_elements():
                raise _error(
                    op, f"view {layout} reaches past its storage ({root.layout.storage_elements()} elements)"
                )
            self._new(op.buf, "view", layout, root=source.root)
        else:
            import numpy as np

            value = np.array(ir.DenseElementsAttr(op.value)) if not _is_splat(op.value) else None
            if value is None:
                value = np.full(
                    layout.shape, np.array(ir.DenseElementsAttr(op.value).get_splat_value().value)
                )
            self._new(op.buf, "constant", layout, value=value)

    def _check_arena(self, buf: Buffer, arena_bytes: int, main: Any) -> None:
        if buf.arena_offset < 0:
            raise PlanError(f"{main.location}: an arena buffer ({buf.layout}) has no offset: run plan-memory")
        if buf.arena_offset % ARENA_ALIGNMENT:
            raise PlanError(f"arena offset {buf.arena_offset} is not a multiple of {ARENA_ALIGNMENT}")
        end = buf.arena_offset + buf.layout.storage_elements() * buf.layout.dtype.itemsize
        if end > arena_bytes:
            raise PlanError(
                f"arena buffer at {buf.arena_offset} ({buf.layout}) ends at byte {end}, past the arena ({arena_bytes})"
            )

    def _segment(self, op: Any, index: int) -> Segment:
        nodes: list[Node] = []
        yields: list[int] = []
        for inner in op.body.blocks[0].operations:
            if isinstance(inner, d.YieldOp):
                yields = [self._id(v, inner) for v in inner.values]
            elif isinstance(inner, d.BUFFER_OPS):
                self._buffer(inner)
            else:
                nodes.append(self._node(inner, len(nodes)))
        results = []
        for value, yielded in zip(op.results_, yields, strict=True):
            self.ids[value] = yielded  # a segment result is the buffer it yields
            results.append(yielded)
        info = {n.name: attr_value(n.attr) for n in op.info}
        return Segment(index, op.mode.value, nodes, info, yields, results)

    def _node(self, op: Any, index: int) -> Node:
        loc = str(op.location)
        if isinstance(op, d.KernelOp):
            name = ir.FlatSymbolRefAttr(op.kernel).value
            kernel = self.kernels.get(name)
            if kernel is None:
                raise _error(op, f"kernel @{name} is not defined")
            args = [self._id(v, op) for v in op.args]
            if len(kernel.signature) != len(args):
                raise _error(
                    op,
                    f"kernel @{name} takes {len(kernel.signature)} pointers, the launch passes {len(args)}",
                )
            access = str_list(op.access)
            for i, (arg, sig) in enumerate(zip(args, kernel.signature, strict=True)):
                through_table = self.buffers[self.buffers[arg].root].slot >= 0
                want = f"{'**' if through_table else '*'}{self.buffers[arg].layout.dtype.triton}"
                if sig.split(":")[0] != want:
                    raise _error(op, f"argument {i} of @{name} is {sig} but the buffer is {want}")
            reads = [a for a, m in zip(args, access, strict=True) if "r" in m]
            writes = [a for a, m in zip(args, access, strict=True) if "w" in m]
            return Node(
                index, "kernel", reads, writes, loc, kernel=name, grid=tuple(int_list(op.grid)), args=args
            )
        if isinstance(op, d.LibraryOp):
            return self._aten_node(op, index, "library")
        if isinstance(op, d.CopyOp):
            src, dst = self._id(op.source, op), self._id(op.target, op)
            for b in (src, dst):
                if not self.buffers[b].layout.is_dense():
                    raise _error(op, f"copy needs dense buffers, got {self.buffers[b].layout}")
            if self.buffers[src].layout.nbytes() != self.buffers[dst].layout.nbytes():
                raise _error(op, "copy between buffers of different sizes")
            return Node(index, "copy", [src], [dst], loc)
        if isinstance(op, d.FillOp):
            dst = self._id(op.target, op)
            if not self.buffers[dst].layout.is_dense():
                raise _error(op, f"fill needs a dense buffer, got {self.buffers[dst].layout}")
            return Node(index, "fill", [], [dst], loc, byte=ir.IntegerAttr(op.byte).value)
        raise _error(op, f"'{op.operation.name}' cannot be a node of a segment")

    def _aten_node(self, op: Any, index: int, kind: str) -> Node:
        inputs = [self._id(v, op) for v in op.inputs]
        results = [
            self._new(v, "result", Layout.from_attr(layout)).id
            for v, layout in zip(op.results_, op.layouts, strict=True)
        ]
        if kind == "host":
            for b, slot in zip(results, int_list(op.slots), strict=True):
                if slot >= self.table_slots:
                    raise _error(op, f"result slot {slot} is past the table ({self.table_slots} slots)")
                self.buffers[b].slot = slot
                if op.op.value in aten.VIEW_OPS:
                    self.buffers[b].within = inputs[0]
        aten_args = [_aten_arg(a) for a in op.args]
        written = written_operand(op)  # an in-place or out form writes an operand, results or not
        return Node(
            index,
            kind,
            inputs,
            results + ([self._id(written, op)] if written is not None else []),
            str(op.location),
            op=op.op.value,
            aten_args=aten_args,
            results=results,
        )


def _choice(attrs: dict[str, ir.Attribute]) -> tuple[str, dict[str, float], dict[str, float]]:
    choice = ir.StringAttr(attrs[d.IO_CHOICE]).value if d.IO_CHOICE in attrs else ""
    estimated = attr_value(attrs[d.IO_COSTS]) if d.IO_COSTS in attrs else {}
    return choice, estimated, attr_value(attrs[d.IO_MEASURED]) if d.IO_MEASURED in attrs else {}


def _is_splat(attr: ir.Attribute) -> bool:
    return ir.DenseElementsAttr(attr).is_splat


def _aten_arg(attr: ir.Attribute) -> Any:
    if isinstance(attr, ir.IntegerAttr) and isinstance(attr.type, ir.IndexType):
        return Operand(attr.value)
    if isinstance(attr, d.DeviceAttr):
        return Device(ir.StringAttr(attr.kind).value)
    if isinstance(attr, ir.TypeAttr):
        return dtypes.from_mlir(str(attr.value))
    if isinstance(attr, ir.ArrayAttr):
        return [_aten_arg(a) for a in attr]
    return attr_value(attr)


def attr_value(attr: ir.Attribute) -> Any:
    if isinstance(attr, ir.UnitAttr):
        return None
    if isinstance(attr, ir.BoolAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.FloatAttr):
        return attr.value
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.ArrayAttr):
        return [attr_value(a) for a in attr]
    if isinstance(attr, ir.DictAttr):
        return {n.name: attr_value(n.attr) for n in attr}
    return str(attr)


def _arg_attrs(fn: Any) -> list[dict[str, ir.Attribute]]:
    n = len(fn.regions[0].blocks[0].arguments)
    if "arg_attrs" not in fn.attributes:
        return [{} for _ in range(n)]
    return [{a.name: a.attr for a in ir.DictAttr(x)} for x in ir.ArrayAttr(fn.attributes["arg_attrs"])]


def _result_attrs(fn: Any) -> list[dict[str, ir.Attribute]]:
    n = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results)
    if "res_attrs" not in fn.attributes:
        return [{} for _ in range(n)]
    return [{a.name: a.attr for a in ir.DictAttr(x)} for x in ir.ArrayAttr(fn.attributes["res_attrs"])]


# ------------------------------------------------------------------------------------- dependencies


def byte_range(plan: Plan, buffer: int) -> tuple[str, int, int]:
    """(storage key, first byte, end byte) a buffer touches; arena buffers share one storage, and a host op's
    view may touch any byte of the buffer it views."""
    buf = plan.buffers[buffer]
    root = plan.buffers[buf.root]
    if root.within >= 0:
        return byte_range(plan, root.within)
    first, last = buf.layout.span()
    size = buf.layout.dtype.itemsize
    if root.kind == "arg":
        return "external", 0, 1 << 62  # arguments may alias each other: any write conflicts
    base = root.arena_offset if root.kind == "alloc" else 0
    key = "arena" if root.kind == "alloc" else f"b{root.id}"
    return key, base + first * size, base + (last + 1) * size


def _conflict(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def touched_roots(plan: Plan, node: Node) -> set[int]:
    return {plan.buffers[b].root for b in (*node.args, *node.reads, *node.writes, *node.results)}


def writes_before_a_check(plan: Plan) -> bool:
    """Whether a call may write an input, buffer or parameter before a check of its data (a host
    `_assert_scalar`) that may fail it: then the failed call has changed the model, and cannot run again."""
    checks = [
        k for k, step in enumerate(plan.steps) if isinstance(step, HostStep) and step.node.op == aten.CHECK
    ]
    if not checks:
        return False
    state = {a.buffer for a in plan.arguments if a.role in ("input", "buffer", "parameter")}
    return any(
        plan.root(b).id in state
        for step in plan.steps[: checks[-1]]
        for node in step.nodes
        for b in node.writes
    )


def is_graphed(step: Segment | HostStep) -> bool:
    return isinstance(step, Segment) and step.mode == "graph"


def reads_table(plan: Plan, step: Segment | HostStep) -> bool:
    """Whether a step's nodes read the per-call table: a kernel that loads addresses from it, or a node
    reading a scalar carried in a slot."""
    valued = {a.buffer for a in plan.arguments if a.io == "value"}
    nodes = [step.node] if isinstance(step, HostStep) else step.nodes
    return any(
        (node.kind == "kernel" and any(e.startswith("**") for e in plan.kernels[node.kernel].signature))
        or any(plan.root(b).id in valued for b in node.reads)
        for node in nodes
    )


def last_uses(plan: Plan) -> dict[int, tuple[int, int]]:
    """Each root's last use in a call: the position (step, node) of the last node touching it."""
    last: dict[int, tuple[int, int]] = {}
    for s, step in enumerate(plan.steps):
        for n, node in enumerate(step.nodes):
            for root in touched_roots(plan, node):
                last[root] = (s, n)
    return last


def pooled_results(plan: Plan) -> dict[int, tuple[int, int]]:
    """The results of library nodes in graph segments that no eager step and no output touches, with the
    position (step, node) of their last use.

    Recordings allocate these from one memory pool, and the CUDA runtime frees each after its last use, so
    that a later recording reuses its memory, as eager reuses memory (without it, every intermediate of a
    vendor call would stay allocated for the life of the compiled model). `dependencies` orders the reuse.
    """
    kept = {plan.buffers[o.buffer].root for o in plan.outputs}
    produced = set()
    for step in plan.steps:
        for node in step.nodes:
            if not is_graphed(step):
                kept |= touched_roots(plan, node)
            elif node.kind == "library":
                produced.update(plan.buffers[r].root for r in node.results)
    return {root: position for root, position in last_uses(plan).items() if root in produced - kept}


def dependencies(plan: Plan, segment: Segment) -> list[list[int]]:
    """For each node, the earlier nodes it must wait for: read/write hazards on overlapping bytes; program
    order among library nodes (their recordings share the vendor library's workspace); and, in a graph
    segment, a library node waits for every node that touched a pooled result freed before it (its
    recording may reuse that memory, `pooled_results`). Transitively implied edges are dropped."""
    ranges = [
        ([byte_range(plan, b) for b in n.reads], [byte_range(plan, b) for b in n.writes])
        for n in segment.nodes
    ]
    freed_at: dict[int, list[int]] = {}  # node -> pooled roots whose last use it is
    if segment.mode == "graph":
        for root, (s, n) in pooled_results(plan).items():
            if s == segment.id:
                freed_at.setdefault(n, []).append(root)
    touchers: dict[int, list[int]] = {}  # pooled root -> nodes of this segment that touch it
    if freed_at:
        freed = {r for roots in freed_at.values() for r in roots}
        for i, node in enumerate(segment.nodes):
            for root in touched_roots(plan, node) & freed:
                touchers.setdefault(root, []).append(i)
    released: set[int] = set()  # nodes that touched memory freed since the last library node
    reach: list[int] = []  # bitset of all (transitive) predecessors
    preds: list[list[int]] = []
    last_library = -1
    for j, node in enumerate(segment.nodes):
        reads_j, writes_j = ranges[j]
        direct = []
        for i in range(j - 1, -1, -1):
            reads_i, writes_i = ranges[i]
            hazard = (
                any(_conflict(w, r) for w in writes_i for r in reads_j)
                or any(_conflict(r, w) for r in reads_i for w in writes_j)
                or any(_conflict(w, v) for w in writes_i for v in writes_j)
            )
            library = node.kind == "library" and (i == last_library or i in released)
            if hazard or library:
                direct.append(i)
        kept = [i for i in direct if not any((reach[k] >> i) & 1 for k in direct if k != i)]
        bits = 0
        for i in kept:
            bits |= reach[i] | (1 << i)
        reach.append(bits)
        preds.append(sorted(kept))
        if node.kind == "library":
            last_library = j
            released.clear()
        for root in freed_at.get(j, ()):
            released.update(touchers[root])
    return preds

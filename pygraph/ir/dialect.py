"""The `pygraph` dialect, defined in Python with `torch_mlir.dialects.ext` (IRDL underneath).

Two levels share the dialect:

* Tensor level (`.pygraph.mlir`): compute stays in torch-dialect ops (typed, verified by torch-mlir),
  each annotated with its class (`pygraph.class`) and its eager layout (`pygraph.layouts`); fusion
  groups are outlined into private functions marked `pygraph.fused` and called with `func.call`;
  `pygraph.overwrite` keeps a mutation of an input or buffer visible.
* Plan level (`.plan.mlir`): every value is a `!pygraph.buf` (IRDL makes all elements of a variadic
  share one type, so the plan uses one parameterless type and states shape, strides, storage offset
  and dtype with a `#pygraph.layout` on the op that defines a buffer). Ops are the nodes of CUDA
  graphs (`kernel`, `library`, `copy`, `fill`), the work left outside graphs (`host`), the buffers
  (`alloc` in the arena, `view`, `constant`) and the `segment`s that become one CUDA graph each.

IRDL prints and parses the generic form only, and gives ops no optional attributes: every
attribute below is always present. Ops are built with `create()`, which keeps empty arrays
(the generated constructors drop them).
"""

import sys
from collections.abc import Sequence
from typing import Any

from ._mlir import ext, ir

# Names of attributes that are not fields of a pygraph op (function arguments, torch ops, modules).
ROLE = "pygraph.role"  # function argument: "input" | "parameter" | "buffer" | "constant" | "derived"
NAME = "pygraph.name"  # function argument or result: the user's name (input name, state-dict key)
LAYOUT = "pygraph.layout"  # function argument or result: its #pygraph.layout
DEVICE = "pygraph.device"  # function argument: "cpu" | "cuda"
IO = "pygraph.io"  # function argument or result: how the runtime reaches it per call (see docs/architecture.md)
SLOT = "pygraph.slot"  # function argument or result reached through the per-call table: its slot
IO_COSTS = "pygraph.io_costs"  # function argument or result: estimated cost (us per call) of each candidate
IO_CHOICE = "pygraph.io_choice"  # function argument or result: the candidate chosen
IO_MEASURED = "pygraph.io_measured"  # ... and its cost measured on the GPU (profile=True): host_us, gpu_us
TABLE_SLOTS = "pygraph.table_slots"  # plan function: number of 8-byte slots of the per-call table
CLASS = "pygraph.class"  # torch op at tensor level: what computes it (passes/classify_ops.py)
LAYOUTS = "pygraph.layouts"  # torch op: the eager layout of each tensor result
DENSE_MASK_LAYOUTS = (
    "pygraph.dense_mask_layouts"  # attention call: its results' layouts given a dense float mask
)
ATTENTION_KERNEL = (
    "pygraph.attention_kernel"  # attention call routed to the generated kernel: tl.dot's precision
)
MATMUL_KERNEL = "pygraph.matmul_kernel"  # product of class "matmul": tl.dot's precision
SPLIT_KEYS = "pygraph.split_keys"  # kernel launch of a split attention: "parts" or "combine" (split-keys)
# Classes whose op a template of its own writes (passes/attention_kernel.py, passes/matvec_kernel.py,
# passes/matmul_kernel.py, passes/scatter_kernel.py): its programs read whole rows (or columns) of their
# inputs or write elements other than the ones they read, so the kernel never writes over an input. No
# other op joins the first two; a matmul takes its pointwise consumers; write-in-place makes scatters.
KERNEL_TEMPLATES = ("attention", "matvec", "matmul", "scatter")
FUSED = "pygraph.fused"  # private function holding a fusion group
ARENA_BYTES = "pygraph.arena_bytes"  # plan function: size of the static arena
STAGE = "pygraph.stage"  # module: "torch" | "pygraph" | "plan"
TRANSFORMS = "pygraph.transforms"  # module: what each graph-safety pass changed ({pass, what, location})
# module, where calls rebuild some of the model's results (frontend/outputs.py): per result, in order,
# "output K" (the plan's K-th output) or how each call rebuilds it ("view of input 'x'", "the constant None")
RESULTS = "pygraph.results"
REASON = "pygraph.reason"  # torch op of class "host": why it runs between graphs; a gather left to ATen: why
# torch op that no graph may hold although its shapes are static, and why: torch tags it cudagraph_unsafe, or
# recording it failed on the GPU (the frontend and the re-plan after a failed recording set it)
OUTSIDE_GRAPHS = "pygraph.outside_graphs"
RANDOM_NUMBERS = "pygraph.random_numbers"  # plan function: random numbers each call draws


class PyGraph(ext.Dialect, name="pygraph"):
    pass


# The bindings import `torch_mlir.dialects.<namespace>` whenever they wrap an op or attribute of a dialect
# they have not seen a module for, and remember only successes: without this entry each pygraph op or
# attribute read from Python searched the disk for a module that does not exist (53,410 failed imports,
# about a quarter of BERT's compile time on the CPU).
sys.modules.setdefault(f"torch_mlir.dialects.{PyGraph.DIALECT_NAMESPACE}", sys.modules[__name__])


class BufType(PyGraph.Type, name="buf"):
    """A plan-level buffer: a strided view of some storage (arena, argument, recording, constant)."""


class LayoutAttr(PyGraph.Attribute, name="layout"):
    """`#pygraph.layout<[shape], [strides], storage offset (elements), dtype>`."""

    shape: ir.ArrayAttr
    strides: ir.ArrayAttr
    offset: ir.IntegerAttr
    dtype: ir.TypeAttr


class DeviceAttr(PyGraph.Attribute, name="device"):
    """`#pygraph.device<"cuda">`: a device argument of an ATen call (bound to the runtime's device)."""

    kind: ir.StringAttr


def _fail(op: Any, message: str) -> bool:
    op.location.emit_error(f"'{op.operation.name}' op {message}")
    return False


def _requires(*names: str) -> Any:
    """Python verifiers run before IRDL checks attributes: report a missing one instead of failing."""

    def wrap(verify: Any) -> Any:
        def checked(self: Any) -> bool:
            missing = [n for n in names if n not in self.operation.attributes]
            if missing:
                return _fail(self, f"requires attribute {', '.join(repr(n) for n in missing)}")
            return verify(self)

        return checked

    return wrap


def _check_layout(op: Any, attr: ir.Attribute, what: str = "layout", dynamic: bool = False) -> bool:
    """`dynamic`: sizes and strides may be -1, decided at run time (a host op's data-dependent result)."""
    if not isinstance(attr, LayoutAttr):
        return _fail(op, f"{what} must be a #pygraph.layout")
    shape, strides = ir.ArrayAttr(attr.shape), ir.ArrayAttr(attr.strides)
    if len(shape) != len(strides):
        return _fail(op, f"{what} has {len(shape)} sizes but {len(strides)} strides")
    lowest = -1 if dynamic else 0
    if any(ir.IntegerAttr(s).value < lowest for s in [*shape, *strides]):
        return _fail(op, f"{what} has a negative size or stride")
    if ir.IntegerAttr(attr.offset).value < 0:
        return _fail(op, f"{what} has a negative storage offset")
    return True


# ---------------------------------------------------------------------------------------- tensor level


class OverwriteOp(PyGraph.Operation, name="overwrite"):
    """At the end of the call, `target` (an input or buffer argument) holds `value`: eager's in-place update."""

    value: ext.Operand[Any]
    target: ext.Operand[Any]

    def verify_invariants(self) -> bool:
        if not isinstance(self.target, ir.BlockArgument):
            return _fail(self, "target must be a function argument")
        return True


# ------------------------------------------------------------------------------------------ plan level


class AllocOp(PyGraph.Operation, name="alloc"):
    """A buffer in the static arena; `arena_offset` (bytes) is -1 until memory planning places it."""

    layout: LayoutAttr
    arena_offset: ir.IntegerAttr
    buf: ext.Result[BufType]

    @_requires("layout", "arena_offset")
    def verify_invariants(self) -> bool:
        return _check_layout(self, self.layout)


class ViewOp(PyGraph.Operation, name="view"):
    """A view of `source`'s storage; the layout's offset counts elements from that storage's start."""

    source: ext.Operand[BufType]
    layout: LayoutAttr
    buf: ext.Result[BufType]

    @_requires("layout")
    def verify_invariants(self) -> bool:
        return _check_layout(self, self.layout)


class OutputOp(PyGraph.Operation, name="output"):
    """Output `index` of the call: a fresh tensor each call, reached through its table slot (`res_attrs`)."""

    index: ir.IntegerAttr
    layout: LayoutAttr
    buf: ext.Result[BufType]

    @_requires("index", "layout")
    def verify_invariants(self) -> bool:
        return _check_layout(self, self.layout)


class ConstantOp(PyGraph.Operation, name="constant"):
    """A tensor known at compile time, placed on the device once."""

    value: Any  # a dense elements attribute (IRDL has no constraint for it)
    layout: LayoutAttr
    buf: ext.Result[BufType]

    @_requires("value", "layout")
    def verify_invariants(self) -> bool:
        return _check_layout(self, self.layout)


class KernelOp(PyGraph.Operation, name="kernel"):
    """A launch of a generated kernel: `args` are its pointer arguments, `access` says "r", "w" or "rw" for each."""

    args: Sequence[ext.Operand[BufType]]
    kernel: ir.FlatSymbolRefAttr
    grid: ir.ArrayAttr
    access: ir.ArrayAttr

    @_requires("kernel", "grid", "access")
    def verify_invariants(self) -> bool:
        if len(self.access) != len(self.args):
            return _fail(self, f"has {len(self.args)} arguments but {len(self.access)} access modes")
        if any(ir.StringAttr(a).value not in ("r", "w", "rw") for a in self.access):
            return _fail(self, 'access modes must be "r", "w" or "rw"')
        if len(self.grid) != 3 or any(ir.IntegerAttr(g).value < 1 for g in self.grid):
            return _fail(self, "grid must have three positive sizes")
        return True


class LibraryOp(PyGraph.Operation, name="library"):
    """Exactly one ATen op (`op`, e.g. "aten.mm.default"), recorded alone into the graph.

    `args` lists the op's schema arguments in order: `N : index` is operand N, anything else a literal.
    Results are fresh storage owned by the recording, with the eager layouts in `layouts`.
    """

    inputs: Sequence[ext.Operand[BufType]]
    op: ir.StringAttr
    args: ir.ArrayAttr
    layouts: ir.ArrayAttr
    results_: Sequence[ext.Result[BufType]]

    @_requires("op", "args", "layouts")
    def verify_invariants(self) -> bool:
        return _verify_aten_call(self)


class HostOp(PyGraph.Operation, name="host"):
    """One ATen op run eagerly between graphs, with `reason`; fields as `library`. Its results are fresh
    tensors each call, but a view op's (`aten.VIEW_OPS`: `x[i.item()]`), which lies in its operand's bytes
    (`buffers.touching`, `plan.Buffer.within`): `slots` gives, per result, the table slot through which
    graphs reach it (-1: none).
    A result whose shape depends on the data has a dynamic layout (sizes and strides -1); a number (`.item()`,
    a size) is a 0-d tensor of its type (int64, float64, bool), read as a number where an argument wants one."""

    inputs: Sequence[ext.Operand[BufType]]
    op: ir.StringAttr
    args: ir.ArrayAttr
    layouts: ir.ArrayAttr
    reason: ir.StringAttr
    slots: ir.ArrayAttr
    results_: Sequence[ext.Result[BufType]]

    @_requires("op", "args", "layouts", "reason", "slots")
    def verify_invariants(self) -> bool:
        if len(self.slots) != len(self.results_):
            return _fail(self, f"has {len(self.results_)} results but {len(self.slots)} slots")
        return _verify_aten_call(self, dynamic=True)


def _verify_aten_call(op: Any, dynamic: bool = False) -> bool:
    if len(op.layouts) != len(op.results_):
        return _fail(op, f"has {len(op.results_)} results but {len(op.layouts)} layouts")
    for i, layout in enumerate(op.layouts):
        if not _check_layout(op, layout, f"layout of result {i}", dynamic):
            return False
    for arg in _walk_attrs(op.args):
        is_operand = isinstance(arg, ir.IntegerAttr) and isinstance(arg.type, ir.IndexType)
        if is_operand and not 0 <= arg.value < len(op.inputs):
            return _fail(op, f"argument refers to operand {arg.value} of {len(op.inputs)}")
    return True


def _walk_attrs(attr: ir.Attribute):
    for a in attr:
        if isinstance(a, ir.ArrayAttr):
            yield from _walk_attrs(a)
        else:
            yield a


class CopyOp(PyGraph.Operation, name="copy"):
    """A memcpy node: `source` and `target` are dense with the same size in bytes."""

    source: ext.Operand[BufType]
    target: ext.Operand[BufType]


class FillOp(PyGraph.Operation, name="fill"):
    """A memset node: every byte of the dense `target` becomes `byte`."""

    target: ext.Operand[BufType]
    byte: ir.IntegerAttr


class SegmentOp(PyGraph.Operation, name="segment"):
    """Nodes that run as one unit, a CUDA graph unless `mode` says "eager"; yields library results used later.

    `mode` is "graph" or "eager"; `info` holds the selection's record (candidates, costs, reason).
    """

    mode: ir.StringAttr
    info: ir.DictAttr
    results_: Sequence[ext.Result[BufType]]
    body: ext.Region

    @_requires("mode", "info")
    def verify_invariants(self) -> bool:
        if self.mode.value not in ("graph", "eager"):
            return _fail(self, f'mode must be "graph" or "eager", not "{self.mode.value}"')
        return True


class YieldOp(PyGraph.Operation, name="yield", traits=[ir.IsTerminatorTrait]):
    values: Sequence[ext.Operand[BufType]]


class TritonKernelOp(PyGraph.Operation, name="triton_kernel"):
    """A generated kernel: Triton source whose `entry` function takes one pointer per `signature` entry."""

    sym_name: ir.StringAttr
    source: ir.StringAttr
    entry: ir.StringAttr
    signature: ir.ArrayAttr
    num_warps: ir.IntegerAttr
    num_stages: ir.IntegerAttr


NODE_OPS = (KernelOp, LibraryOp, CopyOp, FillOp)
BUFFER_OPS = (AllocOp, ViewOp, ConstantOp, OutputOp)


# ------------------------------------------------------------------------------------------- building


def create(
    cls: type,
    operands: Sequence[ir.Value] | Sequence[Sequence[ir.Value]] = (),
    attributes: dict[str, ir.Attribute] | None = None,
    results: int | Sequence[ir.Type] = 0,
    regions: int = 0,
    loc: ir.Location | None = None,
) -> Any:
    """Builds op `cls`; `operands` holds one entry per operand field (a value, or a list for a variadic)."""
    attrs = dict(attributes or {})
    fields = cls._ODS_OPERAND_SEGMENTS
    flat: list[ir.Value] = []
    if fields is None:
        flat = list(operands)  # type: ignore[arg-type]
    else:
        sizes = []
        for group in operands:
            group = list(group) if isinstance(group, (list, tuple)) else [group]
            flat.extend(group)
            sizes.append(len(group))
        attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(sizes)
    result_types = [BufType.get()] * results if isinstance(results, int) else list(results)
    if cls._ODS_RESULT_SEGMENTS is not None:
        attrs["resultSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(result_types)])
    op = ir.Operation.create(
        cls.OPERATION_NAME, results=result_types, operands=flat, attributes=attrs, regions=regions, loc=loc
    )
    return op.opview


def load(context: ir.Context) -> None:
    """Makes the dialect available in `context` (which must already have torch registered)."""
    with context:
        if not context.is_dialect_loaded(PyGraph.DIALECT_NAMESPACE):
            PyGraph.load()

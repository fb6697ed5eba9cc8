"""Import an ExportedProgram into the `.torch.mlir` stage: one public `func.func @main` in the torch dialect.

torch-mlir's FxImporter translates the ops; pygraph's hooks decide the rest of the contract
(docs/architecture.md, Stage 1): weights, buffers and lifted constants become annotated function
arguments (never literals, but for the numbers constant folding computed: `fold_constants.py`), a
mutation of an input or buffer becomes `pygraph.overwrite`, and every op carries the layout eager gives
its results, which later stages need and cannot recompute without torch.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument
from torch.utils import _pytree as pytree
from torch_mlir.extras.fx_importer import (
    LITERAL_CONVERTER_MAP,
    ContextCache,
    FxImporter,
    FxImporterHooks,
    GraphNodeImporter,
    InputInfo,
)

from ..ir import aten, dialect, dtypes, torch_types
from ..ir._mlir import ir
from ..ir.attrs import string
from ..ir.layout import Layout
from ..passes.base import main_function
from .attention import KERNEL_META
from .complex_as_real import COMPLEX_INPUT, COMPLEX_RESULTS
from .fold_constants import LITERAL
from .numbers import user_placeholders
from .outputs import Regenerated, describe_results, drop_regenerated_outputs, numbers_as_tensors
from .python_arithmetic import python_arithmetic_as_ops
from .rewrite import MUTATIONS, UnsupportedError, describe_node

_ROLES = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer"}


@dataclass(frozen=True)
class ArgumentSpec:
    """What the caller passes for one argument of `@main`."""

    role: str  # "input" | "parameter" | "buffer" | "constant" | "derived" (computed from the others)
    name: str  # forward's argument name, the state-dict (or buffer) key, or the constant's name
    position: int | None = None  # inputs: index in forward's positional arguments
    value: torch.Tensor | None = None  # constants: the tensor (it is not part of the model's state);
    # derived: its value when compiled
    device: str = ""  # inputs: the example's device type ("cpu" for a host scalar of a GPU program)


@dataclass
class ImportedProgram:
    module: ir.Module  # `.torch.mlir`: one public func.func @main
    arguments: list[ArgumentSpec]  # one per argument of @main, in order
    out_spec: pytree.TreeSpec  # rebuilds the model's output structure from @main's flat results
    input_names: list[str]  # forward's argument names, in order
    # results each call rebuilds instead of the program (`outputs.py`), by position among the flat results
    regenerated: tuple[Regenerated, ...] = ()
    copied_views: tuple[str, ...] = ()  # results eager returns as views the program copies, described
    numbers: tuple[int, ...] = ()  # results each call returns as Python numbers (`.item()`), by position
    complex_results: tuple[int, ...] = ()  # results each call returns as complex views of their pairs
    complex_inputs: tuple[int, ...] = ()  # inputs each call passes as real views of the caller's tensors


def import_program(
    ep: torch.export.ExportedProgram, context: ir.Context, derived: Collection[str] = ()
) -> ImportedProgram:
    """Imports `ep` (from `export_program`) into `context` (from `pygraph.ir.context.make_context`); the
    lifted constants named in `derived` are derived state (`derived_state.py`)."""
    inputs = [spec.arg.name for spec in ep.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT]
    numbers = numbers_as_tensors(ep)
    regenerated, copied = drop_regenerated_outputs(ep)
    _check_supported(ep)
    python_arithmetic_as_ops(ep)  # (last: fake tensor propagation cannot run the scalar ops it makes)
    cache = _ContextCache(context)
    hooks = _Hooks(ep, cache, frozenset(derived))
    importer = FxImporter(context=context, hooks=hooks, graph_node_importer_cls=_NodeImporter)
    importer._cc = cache  # the importer has no parameter for it
    dynamic = any(
        isinstance(s, torch.SymInt)
        for n in ep.graph.find_nodes(op="placeholder")
        for s in n.meta["val"].shape
    )
    with _as_strided_kept(ep.graph) as strided:
        func_op = importer.import_program(ep, func_name="main", import_symbolic_shape_expressions=dynamic)

    nodes = {node.name: node for node in ep.graph.nodes}
    arguments = [
        ArgumentSpec("input", name, position=i, device=nodes[name].meta["val"].device.type)
        for i, name in enumerate(inputs)
    ] + hooks.arguments
    tensors = [nodes[name].meta["val"] for name in inputs] + hooks.tensors  # the examples, as fake tensors
    with context:
        importer.module.operation.attributes[dialect.STAGE] = string("torch")
        block = func_op.regions[0].blocks[0]
        results = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value).results
        func_op.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], results)
        )
        func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(
            [_argument_attrs(spec, tensor) for spec, tensor in zip(arguments, tensors, strict=True)]
        )
        func_op.location = ir.Location.name("main")
        for argument, name in zip(block.arguments, inputs, strict=False):
            argument.set_location(ir.Location.name(name))
        _as_strided_views(block, strided)
        _check_mutations(ep, block)
        _annotate_layouts(nodes, block)
        keep_outside_graphs(importer.module, _unsafe_in_graphs(nodes.values()))
        if regenerated:
            importer.module.operation.attributes[dialect.RESULTS] = ir.ArrayAttr.get(
                [string(how) for how in describe_results(regenerated, _user_outputs(ep), inputs)]
            )
    return ImportedProgram(
        importer.module,
        arguments,
        ep.call_spec.out_spec,
        inputs,
        regenerated,
        tuple(f"result {view.position} ({view.describe(inputs)})" for view in copied),
        numbers,
        ep.graph.output_node().meta.get(COMPLEX_RESULTS, ()),
        tuple(i for i, node in enumerate(user_placeholders(ep)) if node.meta.get(COMPLEX_INPUT)),
    )


_AS_STRIDED = torch.ops.aten.as_strided.default
_AS_STRIDED_COPY = torch.ops.aten.as_strided_copy.default  # the same schema


@contextlib.contextmanager
def _as_strided_kept(graph: torch.fx.Graph) -> Iterator[set[str]]:
    """While importing, `as_strided` views stand as `as_strided_copy` (the names of those nodes are
    yielded): torch-mlir's importer would rewrite each into an `index` by constant tensors, a gather whose
    result has none of the view's strides that the ops reading it were traced with."""
    strided = list(graph.find_nodes(op="call_function", target=_AS_STRIDED))
    for node in strided:
        node.target = _AS_STRIDED_COPY
    try:
        yield {node.name for node in strided}
    finally:
        for node in strided:
            node.target = _AS_STRIDED


def _as_strided_views(block: ir.Block, strided: set[str]) -> None:
    """The `as_strided_copy` ops `_as_strided_kept` imported are the `as_strided` views they stood for."""
    for op in list(block.operations):
        if op.operation.name == "torch.aten.as_strided_copy" and _node_name(op.location) in strided:
            with ir.InsertionPoint(op), op.location:
                view = ir.Operation.create(
                    "torch.aten.as_strided",
                    results=[r.type for r in op.results],
                    operands=list(op.operands),
                    attributes={a.name: a.attr for a in op.attributes},
                )
            op.results[0].replace_all_uses_with(view.results[0])
            op.operation.erase()


# ------------------------------------------------------------------------------------ torch-mlir hooks


class _ContextCache(ContextCache):
    """Names every op after its FX node: `loc("node"(<callsite of the user's code>))`."""

    __slots__ = ()

    def get_node_location(self, node: torch.fx.Node) -> ir.Location | None:
        base = super().get_node_location(node) or ir.Location.unknown(self._c)
        return ir.Location.name(node.name, childLoc=base, context=self._c)


class _Hooks(FxImporterHooks):
    """Parameters, buffers and lifted constants become arguments (`_NodeImporter` makes their stores)."""

    def __init__(
        self, ep: torch.export.ExportedProgram, cache: ContextCache, derived: frozenset[str]
    ) -> None:
        self.cache = cache
        self.derived = derived
        self.constant_names = {
            id(ep.constants[spec.target]): spec.target
            for spec in ep.graph_signature.input_specs
            if spec.kind == InputKind.CONSTANT_TENSOR
        }
        self.arguments: list[ArgumentSpec] = []  # one per argument added, in first-use order
        self.tensors: list[torch.Tensor] = []  # the tensor behind each
        self.values: dict[int, ir.Value] = {}  # id(tensor) -> its argument (tied weights share one)

    def resolve_input(self, gni: GraphNodeImporter, value: Any, info: InputInfo) -> ir.Value:
        return self._argument(
            gni, value, info.ir_type, ArgumentSpec(_ROLES[info.input_spec.kind], info.input_spec.target)
        )

    def resolve_literal(
        self, gni: GraphNodeImporter, literal: Any, info: InputInfo | None
    ) -> ir.Value | None:
        if not isinstance(literal, torch.Tensor):
            return None  # scalars, dtypes, ...: torch-mlir's constants
        name = self.constant_names.get(id(literal))
        if name is None:
            raise UnsupportedError(
                f"a tensor literal of shape {list(literal.shape)} is not a lifted constant"
            )
        spec = ArgumentSpec("derived" if name in self.derived else "constant", name, value=literal)
        return self._argument(gni, literal, self.cache.tensor_to_vtensor_type(literal), spec)

    def _argument(
        self, gni: GraphNodeImporter, tensor: torch.Tensor, type_: ir.Type, spec: ArgumentSpec
    ) -> ir.Value:
        if id(tensor) not in self.values:
            self.values[id(tensor)] = gni._b.add_argument(type_, ir.Location.name(spec.name, context=gni._c))
            self.arguments.append(spec)
            self.tensors.append(tensor)
        return self.values[id(tensor)]


class _NodeImporter(GraphNodeImporter):
    """Binds lifted constants lazily (arguments then come in first-use order; folded numbers are made
    before their first user), keeps mutated user inputs as value tensors with `pygraph.overwrite` (instead
    of `!torch.tensor` and overwrite.tensor.contents), writes the buffers and parameters the model writes
    with `pygraph.overwrite` too, and names the return after FX's output node."""

    __slots__ = ()

    def import_constant(self, loc: ir.Location, node: torch.fx.Node, constant: Any) -> Any:
        if not isinstance(constant, torch.Tensor):
            return super().import_constant(loc, node, constant)
        hooks = self.fx_importer._hooks
        if node.meta.get(LITERAL):
            self.bind_node_value(node, lambda: self._number(constant))
        else:
            self.bind_node_value(node, lambda: hooks.resolve_literal(self, constant, None))
        return None

    def _number(self, tensor: torch.Tensor) -> ir.Value:
        """A folded 0-d constant as `torch.prim.NumToTensor.Scalar` of its value, in its dtype (a bool as
        the int 0 or 1: the op takes numbers)."""
        number = tensor.item()
        number = int(number) if isinstance(number, bool) else number
        name = self.fx_importer._hooks.constant_names[id(tensor)]
        with ir.Location.name(name, context=self._c), ir.InsertionPoint(self._b):
            scalar = LITERAL_CONVERTER_MAP.lookup(type(number))(number, self, self._cc)
            return ir.Operation.create(
                "torch.prim.NumToTensor.Scalar",
                results=[self._cc.tensor_to_vtensor_type(tensor)],
                operands=[scalar],
            ).result

    def import_mutable_to_vtensor(
        self, loc: ir.Location, node: torch.fx.Node, mutable_value: ir.Value, producer_node_name: str
    ) -> ir.Value:
        mutable_value.set_type(self._cc.node_val_to_type(node))
        self.bind_node_value(node, mutable_value)
        self._on_node_produced[producer_node_name] = lambda value: _overwrite(self._b, value, mutable_value)
        return mutable_value

    def lazy_import_buffer(
        self, loc: ir.Location, node: torch.fx.Node, buffer_value: Any, info: InputInfo
    ) -> None:
        super().lazy_import_buffer(loc, node, buffer_value, info)
        if info.store_producer_node is not None:
            self._write_back(node, info.store_producer_node, info.program)

    def lazy_import_parameter(
        self, loc: ir.Location, node: torch.fx.Node, parameter_value: Any, info: InputInfo
    ) -> None:
        """A parameter the model writes (`nn.Embedding(max_norm=...)` renormalizes its rows in place) is
        overwritten like a buffer; torch-mlir's importer binds stores for buffers only."""
        super().lazy_import_parameter(loc, node, parameter_value, info)
        writes = info.program.graph_signature.parameters_to_mutate  # producer node name -> parameter
        producer = next((name for name, target in writes.items() if target == info.input_spec.target), None)
        if producer is not None:
            self._write_back(node, producer, info.program)

    def _write_back(self, node: torch.fx.Node, producer: str, program: torch.export.ExportedProgram) -> None:
        """`pygraph.overwrite` of `node`'s argument with the value of the node named `producer`, once it is
        produced; at once where that value is an argument (`buf.copy_(x)`), which no op produces."""
        placeholders = {n.name: n for n in program.graph.find_nodes(op="placeholder")}
        if producer in placeholders:
            self._on_node_produced.pop(producer, None)
            _overwrite(
                self._b, self.resolve_node_value(placeholders[producer]), self.resolve_node_value(node)
            )
        else:
            self._on_node_produced[producer] = lambda value: _overwrite(
                self._b, value, self.resolve_node_value(node)
            )

    def return_node_values(self, loc: ir.Location, nodes: list, constants: dict) -> None:
        super().return_node_values(ir.Location.name("output", context=self._c), nodes, constants)


def _overwrite(block: ir.Block, value: ir.Value, target: ir.Value) -> None:
    """`pygraph.overwrite(value, target)` at the end of `block`, located where `value` was computed."""
    loc = value.owner.location if isinstance(value, ir.OpResult) else value.location
    with ir.InsertionPoint(block):
        dialect.create(dialect.OverwriteOp, [value, target], loc=loc)


def _user_outputs(ep: torch.export.ExportedProgram) -> int:
    return sum(spec.kind == OutputKind.USER_OUTPUT for spec in ep.graph_signature.output_specs)


# ------------------------------------------------------------------------------------------- checks


def _check_supported(ep: torch.export.ExportedProgram) -> None:
    """Fails early, naming the node and the user's source line, on what the contract cannot express."""
    nodes = {node.name: node for node in ep.graph.nodes}
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT and not isinstance(spec.arg, TensorArgument):
            raise UnsupportedError(
                f"input '{spec.arg.name}' is {spec.arg}, not a tensor: pygraph takes tensor inputs only"
            )
        if spec.kind not in (
            InputKind.USER_INPUT,
            InputKind.PARAMETER,
            InputKind.BUFFER,
            InputKind.CONSTANT_TENSOR,
        ):
            raise UnsupportedError(f"input '{spec.arg.name}' of kind {spec.kind.name} is not supported")
    written = {  # what a mutation may target: state by name, user inputs by placeholder
        spec.arg.name if spec.kind == InputKind.USER_INPUT else spec.target: nodes[spec.arg.name]
        for spec in ep.graph_signature.input_specs
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.USER_INPUT)
    }
    for i, spec in enumerate(ep.graph_signature.output_specs):
        if spec.kind not in (OutputKind.USER_OUTPUT, *MUTATIONS):
            raise UnsupportedError(f"output {i} of kind {spec.kind.name} is not supported")
        if spec.kind in MUTATIONS:
            _check_in_place(nodes, spec, written[spec.target])
        if not isinstance(spec.arg, TensorArgument):
            node = nodes.get(getattr(spec.arg, "name", ""))
            what = (
                describe_node(node)
                if node is not None
                else f"the constant {getattr(spec.arg, 'value', None)!r}"
            )
            raise UnsupportedError(
                f"output {i} of the model, {what}, is neither a tensor nor a constant: pygraph returns "
                "tensors, and None, numbers and strings the trace fixed"
            )
    for node in ep.graph.nodes:
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            raise UnsupportedError(f"{describe_node(node)} is the higher-order operator {node.target.name()}")
        _check_dtypes(node)


def _check_dtypes(node: torch.fx.Node) -> None:
    """A tensor of a dtype pygraph does not support (complex) fails before the import, naming its node: the
    importer would stop at a complex number in an argument (`x * 2j`) without saying where."""
    value = node.meta.get("val")
    for tensor in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(tensor, torch.Tensor):
            try:
                dtypes.from_name(str(tensor.dtype))
            except ValueError as e:
                raise UnsupportedError(f"{describe_node(node)}: {e}") from e


def _check_in_place(nodes: dict[str, torch.fx.Node], spec: Any, target: torch.fx.Node) -> None:
    """A mutation is written into the target's own bytes, so it must keep the target's dtype and shape. Eager
    may instead rebind a buffer attribute to a new tensor (`self.buf = x.float()`); pygraph refuses that."""
    node = nodes.get(spec.arg.name)
    new, old = (n.meta.get("val") for n in (node, target))
    if not isinstance(new, torch.Tensor) or not isinstance(old, torch.Tensor):
        return
    if new.dtype != old.dtype or new.shape != old.shape:
        raise UnsupportedError(
            f"{describe_node(node)} replaces '{spec.target}' ({_typed(old)}) with a {_typed(new)} tensor: pygraph "
            "writes buffers and inputs in place, keeping their dtype and shape"
        )


def _typed(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}"


def _check_mutations(ep: torch.export.ExportedProgram, block: ir.Block) -> None:
    """Every mutation in the graph signature must have become a `pygraph.overwrite` (never dropped silently)."""
    expected = [spec.target for spec in ep.graph_signature.output_specs if spec.kind in MUTATIONS]
    found = sum(op.operation.name == dialect.OverwriteOp.OPERATION_NAME for op in block.operations)
    if found != len(expected):
        raise UnsupportedError(f"mutations of {expected} became {found} pygraph.overwrite ops")


# ------------------------------------------------------------------------------------------ layouts


def _hint(size: int | torch.SymInt) -> int | None:
    """A size's example value: symbolic sizes carry it as a hint; sizes that depend on data have none.
    (`SymNode.hint` exists in every torch pygraph supports; newer helpers do not.)"""
    if isinstance(size, int):
        return size
    hint = size.node.hint
    return None if hint is None else int(hint)


def _example(size: int | torch.SymInt) -> int:
    value = _hint(size)
    if value is None:
        raise UnsupportedError(f"size {size} depends on the data and has no example value")
    return value


def _layout(tensor: torch.Tensor) -> Layout:
    """The tensor's layout; symbolic sizes and strides take the example's values."""
    return Layout(
        tuple(_example(s) for s in tensor.shape),
        tuple(_example(s) for s in tensor.stride()),
        _example(tensor.storage_offset()),
        dtypes.from_name(str(tensor.dtype)),
    )


def _fresh(layout: Layout) -> Layout:
    """The layout of a new tensor holding the values of one of `layout`: its strides where they cover it
    once, from offset 0, else contiguous (an expanded tensor's stride 0, a slice's gaps)."""
    return layout.with_offset(0) if layout.is_dense() else Layout.contiguous(layout.shape, layout.dtype)


def _argument_attrs(spec: ArgumentSpec, tensor: torch.Tensor) -> ir.DictAttr:
    if tensor.device.type not in ("cpu", "cuda"):
        raise UnsupportedError(f"{spec.role} '{spec.name}' is on device {tensor.device}, not cpu or cuda")
    return ir.DictAttr.get(
        {
            dialect.ROLE: string(spec.role),
            dialect.NAME: string(spec.name),
            dialect.LAYOUT: _layout(tensor).to_attr(),
            dialect.DEVICE: string(tensor.device.type),
        }
    )


def _annotate_layouts(nodes: dict[str, torch.fx.Node], block: ir.Block) -> None:
    """Sets `pygraph.layouts` on each op that computes an FX node's tensors, from the node's fake tensors.

    The importer may emit helper ops for a node (lists, constants) before the node's own op, all
    under the node's name: only an op whose results agree in number, sizes and dtypes with the
    node's value is annotated. `prim.ListUnpack` (the getitems of a split) gets the list's layouts.
    """
    # Bit-casts (eager's alias their input, pygraph's compute a new tensor) and the views of them.
    relaid: set[torch.fx.Node] = set()
    for op in block.operations:
        results = list(op.results)
        if not results or not all(torch_types.is_tensor(r.type) for r in results):
            continue
        node = nodes.get(_node_name(op.location))
        if node is None:
            continue
        if op.operation.name == "torch.prim.ListUnpack" and node.target is operator.getitem:
            node = node.args[0]
        if str(node.target) in aten.VIEW_OPS and node.args and node.args[0] in relaid:
            relaid.add(node)  # (laid out by pygraph's view algebra from the bit-cast's own layout)
            continue
        value = node.meta.get("val")
        fakes = list(value) if isinstance(value, (list, tuple)) else [value]
        if _agree(results, fakes):
            layouts = [_layout(f) for f in fakes]
            if node.target is torch.ops.aten.view.dtype:
                layouts = [_fresh(layout) for layout in layouts]
                relaid.add(node)
            op.attributes[dialect.LAYOUTS] = ir.ArrayAttr.get([layout.to_attr() for layout in layouts])
            if KERNEL_META in node.meta:  # routed to the generated attention kernel
                op.attributes[dialect.ATTENTION_KERNEL] = string(node.meta[KERNEL_META])
            dense = _dense_mask_results(node)
            if dense is not None:
                op.attributes[dialect.DENSE_MASK_LAYOUTS] = ir.ArrayAttr.get(
                    [_layout(f).to_attr() for f in dense]
                )


def _unsafe_in_graphs(nodes: Collection[torch.fx.Node]) -> dict[str, str]:
    """The ops called whose author tagged them `torch.Tag.cudagraph_unsafe` (they synchronise, or allocate in
    a way no replay repeats), by name, with the reason: reduce-overhead keeps them out of its graphs, and
    so does pygraph."""
    return {
        str(node.target): f"torch tags {node.target} cudagraph_unsafe"
        for node in nodes
        if isinstance(node.target, torch._ops.OpOverload) and torch.Tag.cudagraph_unsafe in node.target.tags
    }


def keep_outside_graphs(module: ir.Module, reasons: dict[str, str]) -> None:
    """Marks every call in `@main` of an op named in `reasons` (`ns.name.overload` -> why)
    `pygraph.outside_graphs`, which makes it a host op between graphs."""
    with module.context:
        for op in main_function(module).regions[0].blocks[0].operations:
            reason = reasons.get(aten.aten_name(op))
            if reason is not None:
                op.attributes[dialect.OUTSIDE_GRAPHS] = string(reason)


def called_op(module: ir.Module, node: str) -> str | None:
    """The name (`ns.name.overload`) of the op that FX node `node` calls in `@main`, None where none does."""
    for op in main_function(module).regions[0].blocks[0].operations:
        if _node_name(op.location) == node and aten.aten_name(op) is not None:
            return aten.aten_name(op)
    return None


def _dense_mask_results(node: torch.fx.Node) -> list[torch.Tensor] | None:
    """An attention call's results (fake) were its mask the dense [B, H, L, S] one in q's dtype that
    prepare-attention-masks may give it: ATen may then choose another kernel, whose results have other
    strides, so the plan must know them. None for other ops and masks that are no tensor."""
    if node.target is not torch.ops.aten.scaled_dot_product_attention.default:
        return None
    args = list(node.args)
    if len(args) < 4 or not isinstance(args[3], torch.fx.Node):
        return None
    q, k, v = (a.meta.get("val") for a in args[:3])
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)) or q.dim() != 4 or k.dim() != 4:
        return None
    mode = torch._guards.detect_fake_mode([q, k, v])
    if mode is None:
        return None
    with mode:
        args[3] = torch.empty((*q.shape[:3], k.shape[2]), dtype=q.dtype, device=q.device)
        inputs = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args[:3]] + args[3:]
        out = node.target(*inputs, **node.kwargs)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _node_name(loc: ir.Location) -> str | None:
    return loc.name_str if isinstance(loc, ir.NameLoc) else None


def _agree(results: list[ir.Value], fakes: list[Any]) -> bool:
    if len(results) != len(fakes):
        return False
    for result, fake in zip(results, fakes, strict=True):
        if not isinstance(fake, torch.Tensor):
            return False
        info = torch_types.tensor_info(result.type)
        if info is None:
            return False
        if any(_hint(s) is None for s in (*fake.shape, *fake.stride(), fake.storage_offset())):
            return False  # sizes that depend on data have no example value
        sizes = [-1 if isinstance(s, torch.SymInt) else s for s in fake.shape]
        if info != (sizes, dtypes.from_name(str(fake.dtype))):
            return False
    return True

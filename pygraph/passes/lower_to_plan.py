"""lower-to-plan: tensor-level IR -> plan-level buffers and nodes.

Every tensor becomes a `!pygraph.buf` with an explicit layout: views become `pygraph.view` (layout
algebra, no data movement), fused calls become `pygraph.kernel` launches writing `pygraph.alloc`
buffers, every other ATen op becomes a `pygraph.library` call (or `pygraph.host` for ops that need
the host), and an overwrite of an input or buffer becomes a copy into it. Scalars (constants, list
literals, sizes) are evaluated here and become attributes, since shapes are static in a plan.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten, attrs, dtypes
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.layout import Layout, view_layouts
from ..ir.plan import Device
from ..ir.torch_types import contiguous_layout, is_tensor, tensor_info
from .base import Pass, PassError, main_function
from .copies import emit_copy, launch_kernel


@dataclasses.dataclass
class LowerToPlan(Pass):
    """Lowers `@main` to the plan level: inputs staged by the runtime, outputs returned as copies, until
    parameter-indirection chooses better mechanisms."""

    name = "lower-to-plan"
    summary = "lower tensor-level IR to plan-level buffers, views, kernels and library calls"

    def run(self, module: ir.Module) -> None:
        if _stage(module) == "plan":
            return
        main = main_function(module)
        with module.context:
            _Lowering(module, main).run()
            module.operation.attributes[d.STAGE] = attrs.string("plan")


class _DependsOnFailure(Exception):
    """An operand comes from an op that already failed (reported once, at that op)."""


class _Lowering:
    def __init__(self, module: ir.Module, old: Any) -> None:
        self.module, self.old = module, old
        self.values: dict[ir.Value, Any] = {}  # torch value -> buf Value | python scalar | list
        self.layouts: dict[ir.Value, Layout] = {}  # buf Value -> layout
        self.symbols: dict[str, int] = {}  # symbolic dim name -> example size
        self.overwrites: list[Any] = []  # emitted just before the return
        self.errors: list[tuple[ir.Location, str]] = []
        self.failed: set[ir.Value] = set()  # results of ops that failed: their users are not reported again

    # ----------------------------------------------------------------------------------- driver

    def run(self) -> None:
        old_block = self.old.regions[0].blocks[0]
        arg_attrs = _dicts(self.old.attributes["arg_attrs"]) if "arg_attrs" in self.old.attributes else []
        buf = d.BufType.get()
        arg_layouts, new_arg_attrs = [], []
        for i, arg in enumerate(old_block.arguments):
            a = arg_attrs[i] if i < len(arg_attrs) else {}
            layout = Layout.from_attr(a[d.LAYOUT]) if d.LAYOUT in a else contiguous_layout(arg.type)
            if layout is None:
                raise PassError.at(self.old, f"argument {i} has a dynamic shape and no {d.LAYOUT}")
            role = ir.StringAttr(a[d.ROLE]).value if d.ROLE in a else "input"
            new = dict(a)
            new[d.ROLE] = attrs.string(role)
            new.setdefault(d.NAME, attrs.string(f"arg{i}"))
            new[d.LAYOUT] = layout.to_attr()
            new[d.IO] = attrs.string("stage" if role == "input" else "direct")
            new_arg_attrs.append(ir.DictAttr.get(new))
            arg_layouts.append(layout)
        self._bind_symbols(old_block, arg_layouts)

        with ir.InsertionPoint(self.old), self.old.location:
            new_fn = func.FuncOp(self.old.sym_name.value, ir.FunctionType.get([buf] * len(arg_layouts), []))
        self.new_fn = new_fn
        block = new_fn.add_entry_block(arg_locs=[a.location for a in old_block.arguments])
        for old_arg, new_arg, layout in zip(old_block.arguments, block.arguments, arg_layouts, strict=True):
            self.values[old_arg] = new_arg
            self.layouts[new_arg] = layout
        new_fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new_arg_attrs)

        with ir.InsertionPoint(block):
            for op in old_block.operations:
                try:
                    with op.location:  # what an op becomes keeps the user's source location
                        self._lower(op)
                except PassError as exc:
                    self.errors.extend(exc.errors)
                    self.failed.update(op.results)
                except _DependsOnFailure:
                    self.failed.update(op.results)
        if self.errors:
            new_fn.operation.erase()
            raise PassError(self.errors)
        self.old.operation.erase()

    def _lower(self, op: Any) -> None:
        name = op.operation.name
        if name == "func.return":
            return self._return(op)
        if name == "pygraph.overwrite":
            self.overwrites.append(op)  # the argument keeps its old value until the end of the call
            return None
        if name == "func.call":
            return self._kernel(op)
        if name in ("torch.bind_symbolic_shape",):
            return None
        cls = ir.StringAttr(op.attributes[d.CLASS]).value if d.CLASS in op.attributes else None
        if cls is None:
            raise PassError.at(op, f"'{name}' has no {d.CLASS}: run classify-ops first")
        if cls == "scalar":
            return self._scalar(op)
        if cls == "constant":
            return self._literal(op)
        if cls == "nop":
            return None
        if cls == "view":
            return self._view(op)
        if cls in ("pointwise", "reduction", "concat", "gather", "library", *d.KERNEL_TEMPLATES):
            return self._aten(op, d.LibraryOp)
        if cls == "host":
            return self._aten(op, d.HostOp)
        raise PassError.at(op, f"unknown {d.CLASS} '{cls}'")

    # ---------------------------------------------------------------------------------- helpers

    def _value(self, value: ir.Value, user: Any) -> Any:
        if value in self.failed:
            raise _DependsOnFailure
        try:
            return self.values[value]
        except KeyError:
            raise PassError.at(user, "uses a value that was not lowered") from None

    def _buf(self, value: ir.Value, user: Any) -> ir.Value:
        v = self._value(value, user)
        if not isinstance(v, ir.Value):
            raise PassError.at(user, f"expected a tensor operand, got {v!r}")
        return v

    def _define(self, value: ir.Value, buf: ir.Value, layout: Layout) -> None:
        self.values[value] = buf
        self.layouts[buf] = layout

    def _eager_layouts(self, op: Any) -> list[Layout]:
        """Layouts of the op's tensor results: eager's (annotated by the frontend) or contiguous."""
        tensor_results = [r for r in op.results if is_tensor(r.type)]
        if d.LAYOUTS in op.attributes:
            annotated = [Layout.from_attr(a) for a in ir.ArrayAttr(op.attributes[d.LAYOUTS])]
            if len(annotated) == len(tensor_results):
                return annotated
        layouts = []
        for r in tensor_results:
            layout = contiguous_layout(r.type)
            if layout is None:
                layout = self._specialize(r.type, op)
            layouts.append(layout)
        return layouts

    def _specialize(self, type_: ir.Type, op: Any) -> Layout:
        info = tensor_info(type_)
        raise PassError.at(
            op, f"result shape {info[0] if info else type_} is not known at compile time (no {d.LAYOUTS})"
        )

    def _alloc(self, layout: Layout) -> ir.Value:
        op = d.create(d.AllocOp, [], {"layout": layout.to_attr(), "arena_offset": attrs.i64(-1)}, 1)
        self.layouts[op.buf] = layout
        return op.buf

    # ---------------------------------------------------------------------------------- scalars

    def _bind_symbols(self, block: Any, layouts: list[Layout]) -> None:
        """Example sizes of symbolic dims, read from `torch.bind_symbolic_shape` on arguments."""
        names: dict[ir.Value, str] = {}
        for op in block.operations:
            if op.operation.name == "torch.symbolic_int":
                names[op.results[0]] = ir.StringAttr(op.attributes["symbol_name"]).value
            if op.operation.name != "torch.bind_symbolic_shape":
                continue
            target = op.operands[0]
            if not isinstance(target, ir.BlockArgument):
                continue
            symbols = [names.get(v) for v in list(op.operands)[1:]]
            exprs = str(op.attributes["shape_expressions"])  # affine_map<()[s0, s1] -> (s0, 16)>
            results = exprs.split("->")[1].strip().rstrip(">").strip().strip("()").split(",")
            for dim, expr in enumerate(r.strip() for r in results):
                if expr.startswith("s") and expr[1:].isdigit():
                    sym = symbols[int(expr[1:])]
                    if sym is not None:
                        self.symbols[sym] = layouts[target.arg_number].shape[dim]

    def _scalar(self, op: Any) -> None:
        name = op.operation.name
        a = op.attributes
        if name in (
            "torch.constant.int",
            "torch.constant.float",
            "torch.constant.bool",
            "torch.constant.str",
        ):
            result = a["value"].value
        elif name == "torch.constant.none":
            result = None
        elif name == "torch.constant.device":
            result = Device(ir.StringAttr(a["value"]).value.split(":")[0])
        elif name == "torch.constant.number":
            result = a["value"].value
        elif name == "torch.prim.ListConstruct":
            result = [self._value(v, op) for v in op.operands]
        elif name == "torch.prim.ListUnpack":
            items = self._value(op.operands[0], op)
            for r, item in zip(op.results, items, strict=True):
                self.values[r] = item
            return
        elif name == "torch.symbolic_int":
            symbol = ir.StringAttr(a["symbol_name"]).value
            if symbol not in self.symbols:
                raise PassError.at(op, f"symbolic size {symbol} is not bound to an argument's dimension")
            result = self.symbols[symbol]
        else:
            result = self._scalar_aten(op)
        self.values[op.results[0]] = result

    def _scalar_aten(self, op: Any) -> Any:
        name = aten.aten_name(op)
        args = [self._value(v, op) for v in op.operands]
        if name in ("aten.size.int", "aten.sym_size.int"):
            return self.layouts[args[0]].shape[args[1]]
        if name == "aten.__getitem__.t":
            return args[0][args[1]]
        binary = {
            "aten.add.int": lambda x, y: x + y,
            "aten.sub.int": lambda x, y: x - y,
            "aten.mul.int": lambda x, y: x * y,
            "aten.floordiv.int": lambda x, y: x // y,
            "aten.remainder.int": lambda x, y: x % y,
            "aten.add.float": lambda x, y: x + y,
            "aten.sub.float": lambda x, y: x - y,
            "aten.mul.float": lambda x, y: x * y,
            "aten.div.float": lambda x, y: x / y,
            "aten.eq.int": lambda x, y: x == y,
            "aten.ne.int": lambda x, y: x != y,
            "aten.lt.int": lambda x, y: x < y,
            "aten.gt.int": lambda x, y: x > y,
            "aten.le.int": lambda x, y: x <= y,
            "aten.ge.int": lambda x, y: x >= y,
        }
        if name in binary:
            return binary[name](*args)
        unary = {
            "aten.neg.int": lambda x: -x,
            "aten.Int.Scalar": int,
            "aten.Int.float": int,
            "aten.Int.bool": int,  # (a Python bool where a Scalar goes: `mask.scatter(-1, idx, False)`)
            "aten.Float.Scalar": float,
            "aten.ceil.float": math.ceil,
            "aten.sqrt.int": math.sqrt,
        }
        if name in unary:
            return unary[name](args[0])
        raise PassError.at(op, f"cannot evaluate scalar op '{op.operation.name}' at compile time")

    # ----------------------------------------------------------------------------------- tensors

    def _literal(self, op: Any) -> None:
        layout = contiguous_layout(op.results[0].type)
        if op.operation.name == "torch.prim.NumToTensor.Scalar":
            value = _splat(self._value(op.operands[0], op), layout)
        else:
            value = op.attributes["value"]
        if not isinstance(value, ir.DenseElementsAttr):
            raise PassError.at(
                op, f"literal {str(value)[:60]} is not dense elements (weights must be arguments)"
            )
        c = d.create(d.ConstantOp, [], {"value": value, "layout": layout.to_attr()}, 1)
        self._define(op.results[0], c.buf, layout)

    def _view(self, op: Any) -> None:
        name = aten.aten_name(op)
        source = self._buf(op.operands[0], op)
        src = self.layouts[source]
        args = [self._value(v, op) for v in list(op.operands)[1:]]
        try:
            layouts = view_layouts(
                name, src, args, [self.layouts.get(a) for a in args if isinstance(a, ir.Value)]
            )
        except ValueError as exc:
            raise PassError.at(op, f"{name}: {exc}") from None
        if layouts is None:  # reshape that needs a copy: ATen's reshape does it
            return self._aten(op, d.LibraryOp)
        expected = self._eager_layouts(op) if d.LAYOUTS in op.attributes else None
        bufs = []
        for i, layout in enumerate(layouts):
            if expected and i < len(expected):
                if not layout.addresses_like(expected[i]):
                    raise PassError.at(op, f"{name} gives {layout} but eager gives {expected[i]}")
                layout = expected[i]
            view = d.create(d.ViewOp, [source], {"layout": layout.to_attr()}, 1)
            self.layouts[view.buf] = layout
            bufs.append(view.buf)
        result = op.results[0]
        if is_tensor(result.type):
            self.values[result] = bufs[0]
        else:  # split / unbind / chunk: a list of views
            self.values[result] = bufs

    def _kernel(self, op: Any) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        inputs = [self._buf(v, op) for v in op.operands]
        outputs = []
        for result, layout in zip(op.results, self._eager_layouts(op), strict=True):
            out = self._alloc(layout)
            self.values[result] = out
            outputs.append(out)
        launch_kernel(callee, inputs, outputs)

    def _aten(self, op: Any, cls: type) -> None:
        operands: list[ir.Value] = []

        def encode(value: Any) -> ir.Attribute:
            if isinstance(value, ir.Value):
                if value not in operands:
                    operands.append(value)
                return attrs.index(operands.index(value))
            if value is None:
                return ir.UnitAttr.get()
            if isinstance(value, bool):
                return ir.BoolAttr.get(value)
            if isinstance(value, int):
                return attrs.i64(value)
            if isinstance(value, float):
                return attrs.f64(value)
            if isinstance(value, str):
                return attrs.string(value)
            if isinstance(value, Device):
                return d.DeviceAttr.get(attrs.string(value.kind))
            if isinstance(value, list):
                return ir.ArrayAttr.get([encode(v) for v in value])
            raise PassError.at(op, f"cannot pass {value!r} to an ATen call")

        args = [encode(self._value(v, op)) for v in op.operands]
        name = aten.aten_name(op)
        if cls is d.HostOp:
            layouts = [_host_layout(r, op) for r in op.results]
        elif any(not is_tensor(r.type) for r in op.results):
            raise PassError.at(
                op, f"{name} returns a non-tensor value, which pygraph cannot keep on the device"
            )
        else:
            layouts = self._eager_layouts(op)
        fields = {
            "op": attrs.string(name),
            "args": ir.ArrayAttr.get(args),
            "layouts": ir.ArrayAttr.get([x.to_attr() for x in layouts]),
        }
        if cls is d.HostOp:
            reason = f"{name} needs the host (it synchronises or has a data-dependent shape)"
            fields["reason"] = op.attributes[d.REASON] if d.REASON in op.attributes else attrs.string(reason)
            fields["slots"] = attrs.i64_array([-1] * len(layouts))
        new = d.create(cls, [operands], fields, len(layouts))
        for result, buf, layout in zip(op.results, new.results_, layouts, strict=True):
            self._define(result, buf, layout)

    def _overwrite(self, op: Any) -> None:
        value, target = self._buf(op.operands[0], op), self._buf(op.operands[1], op)
        if value == target:
            return
        src, dst = self.layouts[value], self.layouts[target]
        if src == dst and src.is_dense():
            d.create(d.CopyOp, [value, target])
            return
        emit_copy(self.module, value, target)

    def _return(self, op: Any) -> None:
        for overwrite in self.overwrites:
            self._overwrite(overwrite)
        bufs = [self._buf(v, op) for v in op.operands]
        fn = self.new_fn
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(ir.FunctionType(fn.type).inputs, [d.BufType.get()] * len(bufs))
        )
        fn.attributes["res_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get({d.LAYOUT: self.layouts[b].to_attr(), d.IO: attrs.string("copy")}) for b in bufs]
        )
        func.ReturnOp(bufs)


_NUMBERS = {"!torch.int": "int64", "!torch.float": "float64", "!torch.bool": "bool"}


def _host_layout(result: ir.Value, op: Any) -> Layout:
    """A host op's result: eager's layout, a dynamic one when its sizes depend on the data, or the 0-d
    tensor that holds a number."""
    if d.LAYOUTS in op.attributes:
        return Layout.from_attr(ir.ArrayAttr(op.attributes[d.LAYOUTS])[result.result_number])
    if str(result.type) in _NUMBERS:
        return Layout.contiguous((), dtypes.BY_NAME[_NUMBERS[str(result.type)]])
    info = tensor_info(result.type)
    if info is None:
        raise PassError.at(op, f"{aten.aten_name(op)} returns {result.type}, which a host op cannot hold")
    if -1 in info[0]:
        return Layout.dynamic(len(info[0]), info[1])
    return Layout.contiguous(info[0], info[1])


def _splat(scalar: Any, layout: Layout) -> ir.DenseElementsAttr:
    """A 0-d dense literal holding a compile-time scalar, in the layout's dtype."""
    element = ir.Type.parse(layout.dtype.mlir)
    if layout.dtype.is_float:
        attr = ir.FloatAttr.get(element, float(scalar))
    else:
        attr = ir.IntegerAttr.get(element, int(scalar))
    return ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], element), attr)


def _stage(module: ir.Module) -> str | None:
    attr = module.operation.attributes.get(d.STAGE, None)
    return ir.StringAttr(attr).value if attr is not None else None


def _dicts(array: ir.Attribute) -> list[dict[str, ir.Attribute]]:
    return [{a.name: a.attr for a in ir.DictAttr(x)} for x in ir.ArrayAttr(array)]

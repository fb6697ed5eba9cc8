"""move-scales: scale a vendor product's result, not its operand, by a power of two known at compile time.

DeBERTa computes its attention scores as `bmm(q, k.transpose(-1, -2) / scale)` with `scale` folded to 8.0
at compile time (`frontend/fold_constants.py`): the division reads the keys through a transpose and only
the vendor product reads its result, so it is a kernel of its own. A scale by a power of two commutes with
the product exactly: every product and partial sum of `q @ (k / 8)` is that of `q @ k` times 2^-3, each
rounding included, as long as no value leaves the dtype's normal range (a subnormal loses bits; a sum may
overflow unscaled that would not scaled). Only float32 and float64 products move, whose ranges attention
scores do not approach (float16's 65504 they may). The scale then divides the product's result in the
kernel that reads the scores (their mask and softmax), at no cost of its own.

A scale moves when it is `div` or `mul` (`.Tensor`, `.Scalar`) of a tensor by a number known at compile
time (a `torch.constant`, or `NumToTensor` of one: a folded constant) whose magnitude is a power of two
with a normal reciprocal; its result, of its input's dtype, is read by nothing but one vendor `bmm`, `mm` or
`matmul` (class `library`), directly or through views; the product's result reaches one op through views that
nothing else reads, and that op is a pointwise op of their shape or a reduction of it, so that the kernel
computing it computes the scale. The scale then reads the last of those views; the product reads the
scale's input, which must have the layout the scale's result had where views come between them (the views
stay as they are), or else be an operand the vendor library takes as it is (`products.vendor_reads_as_is`),
as ATen would otherwise copy it inside the call.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info
from .base import Pass, PassError, main_function
from .layouts import eager_layout, op_class, set_layouts
from .pointwise import NO_VALUE, constant_value
from .products import VENDOR_PRODUCTS, vendor_operand, vendor_reads_as_is

# Scale ops, with the positions their scaled tensor may take (the other operand is the number).
_SCALES = {
    "aten.div.Tensor": (0,),
    "aten.div.Scalar": (0,),
    "aten.mul.Tensor": (0, 1),
    "aten.mul.Scalar": (0,),
}
# The exponents of the powers of two whose reciprocals are normal numbers, by dtype.
_EXPONENTS = {"float32": range(-126, 127), "float64": range(-1022, 1023)}


@dataclasses.dataclass
class MoveScales(Pass):
    """Moves scales by powers of two from the operands of vendor products to the kernels reading their
    results."""

    name = "move-scales"
    summary = "scale a vendor product's result, not its operand, by a power of two known at compile time"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        with module.context:
            for op in list(main.regions[0].blocks[0].operations):
                if aten.aten_name(op) not in VENDOR_PRODUCTS:
                    continue
                if op_class(op) is None:
                    raise PassError.at(op, f"the product has no {d.CLASS}: run classify-ops first")
                if op_class(op) != "library":
                    continue
                for i in (0, 1):
                    scale = _scale_of_operand(op, i)
                    reader = _kernel_reading(op.results[0]) if scale is not None else None
                    if reader is not None:
                        _move(scale, *reader)


def _scale_of_operand(product: Any, i: int) -> tuple[Any, int] | None:
    """(scale op, position of its scaled tensor) when operand `i` of `product` is a scale that may move,
    directly or through views (module docstring)."""
    views, value = [], product.operands[i]
    while isinstance(value, ir.OpResult) and op_class(value.owner) == "view" and _single_use(value):
        views.append(value.owner)
        value = value.owner.operands[0]
    if not isinstance(value, ir.OpResult) or not _single_use(value):
        return None
    scale = value.owner
    position = next((p for p in _SCALES.get(aten.aten_name(scale) or "", ()) if _exact(scale, p)), None)
    if position is None:
        return None
    source, result = eager_layout(scale.operands[position]), eager_layout(value)
    if source is None or result is None:
        return None
    if not source.addresses_like(result) and (
        views or not vendor_reads_as_is(vendor_operand(product, i, source))
    ):
        return None
    return scale, position


def _exact(scale: Any, position: int) -> bool:
    """Whether `scale` multiplies or divides its operand `position` by a power of two that float32 or
    float64, the dtype of its result and of that operand, holds with its reciprocal as normal numbers."""
    operands = list(scale.operands)
    number = _number(operands[1 - position])
    infos = [tensor_info(v.type) for v in (operands[position], scale.results[0])]
    if number is None or any(info is None for info in infos) or infos[0][1] != infos[1][1]:
        return False
    exponents = _EXPONENTS.get(infos[1][1].name)
    if exponents is None or not isinstance(number, (int, float)) or not math.isfinite(number) or not number:
        return False
    mantissa, exponent = math.frexp(abs(number))
    return mantissa == 0.5 and exponent - 1 in exponents


def _number(value: ir.Value) -> int | float | None:
    """The number an operand holds when known at compile time: a constant, or `NumToTensor` of one."""
    if isinstance(value, ir.OpResult) and value.owner.operation.name == "torch.prim.NumToTensor.Scalar":
        value = value.owner.operands[0]
    number = constant_value(value)
    return None if number is NO_VALUE or isinstance(number, (bool, list, str)) else number


def _kernel_reading(result: ir.Value) -> tuple[ir.Value, Any] | None:
    """(the end of `result`'s chain of views that nothing else reads, its one reader) when that reader is
    a pointwise op of the end's shape or a reduction of it, which a kernel computes."""
    end = result
    while True:
        readers = [u for u in end.uses if op_class(u.owner) != "nop"]
        if len(readers) != 1:
            return None
        user = readers[0].owner
        if op_class(user) != "view" or readers[0].operand_number != 0 or len(user.results) != 1:
            break
        end = user.results[0]
    shape = tensor_info(end.type)[0]
    if eager_layout(end) is None:
        return None
    if op_class(user) == "pointwise" and [tensor_info(r.type)[0] for r in user.results] == [shape]:
        return end, user
    if op_class(user) == "reduction" and readers[0].operand_number == 0:
        return end, user
    return None


def _move(scale: tuple[Any, int], end: ir.Value, reader: Any) -> None:
    """The scale's reader (the product, or a view it reads) reads the scale's input instead; a copy of
    the scale reads `end`, and `reader` reads the copy."""
    op, position = scale
    use = next(iter(op.results[0].uses))
    use.owner.operands[use.operand_number] = op.operands[position]
    operands = list(op.operands)
    operands[position] = end
    with ir.InsertionPoint.after(end.owner), op.location:
        moved = ir.Operation.create(op.operation.name, results=[end.type], operands=operands)
    moved.attributes[d.CLASS] = attrs.string("pointwise")
    set_layouts(moved, [_dense(eager_layout(end))])
    for use in list(end.uses):
        if use.owner.operation == reader.operation:
            reader.operands[use.operand_number] = moved.results[0]
    op.operation.erase()


def _single_use(value: ir.Value) -> bool:
    return len(list(value.uses)) == 1


def _dense(layout: Layout) -> Layout:
    """The layout eager gives a pointwise op's result on an operand of `layout`: its strides where they
    are dense, else contiguous."""
    if layout.is_dense():
        return Layout(layout.shape, layout.strides, 0, layout.dtype)
    return Layout.contiguous(layout.shape, layout.dtype)

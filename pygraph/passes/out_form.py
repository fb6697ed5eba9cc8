"""out-form: vendor matrix products write buffers the plan owns (ATen's `out=` forms) instead of
allocating their results.

A library call allocates its result. Recorded into a graph, the result comes from the recordings' pool,
which lives beside the arena and shares no bytes with the generated kernels' buffers; and a result the
call returns is allocated there once more while the call's fresh output waits to be written (an MT5's
logits held twice at the first call). In its out form (`aten.mm.out`, ...) the product writes a buffer of
the plan instead: an arena buffer, which plan-memory places among the kernels' buffers (on the bytes of
buffers dead by then), or the call's fresh output, whose address the runtime patches into the recording
each call as it does into a kernel's parameters (parameter-indirection chose "patch" for it).

Matrix products only (`mm`, `addmm`, `bmm`, `baddbmm`): their ATen kernels hand an `out` of the result's
layout to cuBLAS as it is, where most other ops' out forms compute into a temporary and copy. The result
must be a layout cuBLAS writes directly (rows or columns of unit stride; ATen copies otherwise). `linear`
becomes `addmm` (`mm` without a bias) on two-dimensional views, which is how eager computes a linear of a
contiguous input, when the input's leading dims merge into one: `linear.out` would add the bias in a
second kernel. Every rewritten call is still exactly one ATen op.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.buffers import argument_operand, buffer_layout
from ..ir.layout import Layout
from .base import Pass, PassError, main_function

# Functional ATen products -> their out forms, whose schema is the functional one plus a last `out`.
OUT_FORMS = {
    "aten.mm.default": "aten.mm.out",
    "aten.addmm.default": "aten.addmm.out",
    "aten.bmm.default": "aten.bmm.out",
    "aten.baddbmm.default": "aten.baddbmm.out",
}
LINEAR = "aten.linear.default"


@dataclasses.dataclass
class _Call:
    """A product in out form, before the buffer it writes exists."""

    op: str
    inputs: list[ir.Value]
    args: list[ir.Attribute]  # the functional form's arguments; the out operand comes last
    write: Layout  # the layout the call writes: the result's, or a two-dimensional view of it


@dataclasses.dataclass
class OutForm(Pass):
    """Rewrites vendor matrix products into out forms writing arena buffers or the call's outputs."""

    name = "out-form"
    summary = "vendor matrix products write arena buffers or the call's outputs (ATen out= forms)"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        if any(not isinstance(t, d.BufType) for t in main.type.inputs):
            raise PassError.at(main, "the function is not at the plan level: run lower-to-plan first")
        block = main.regions[0].blocks[0]
        ret = block.operations[len(block.operations) - 1]
        patched = _patched_outputs(main)
        with module.context:
            for op in [o for o in block.operations if isinstance(o, d.LibraryOp)]:
                with ir.InsertionPoint(op), op.location:
                    call = _out_form(op)
                    if call is None:
                        continue
                    result = op.results_[0]
                    layout = buffer_layout(result)
                    returned = [i for i, v in enumerate(ret.operands) if v == result]
                    if len(returned) == 1 and returned[0] in patched:
                        fields = {"index": attrs.i64(returned[0]), "layout": layout.to_attr()}
                        target = d.create(d.OutputOp, [], fields, 1).buf
                    else:
                        fields = {"layout": layout.to_attr(), "arena_offset": attrs.i64(-1)}
                        target = d.create(d.AllocOp, [], fields, 1).buf
                    written = target if call.write == layout else _view(target, call.write)
                    fields = {
                        "op": attrs.string(call.op),
                        "args": ir.ArrayAttr.get([*call.args, attrs.index(len(call.inputs))]),
                        "layouts": ir.ArrayAttr.get([]),
                    }
                    d.create(d.LibraryOp, [[*call.inputs, written]], fields, 0)
                result.replace_all_uses_with(target)
                op.operation.erase()


def _patched_outputs(main: Any) -> set[int]:
    """Outputs that parameter-indirection has the call write into the fresh tensor by patching ("patch")."""
    if "res_attrs" not in main.attributes:
        return set()
    found = set()
    for i, a in enumerate(ir.ArrayAttr(main.attributes["res_attrs"])):
        entries = ir.DictAttr(a)
        if d.IO in entries and ir.StringAttr(entries[d.IO]).value == "patch":
            found.add(i)
    return found


def _out_form(op: Any) -> _Call | None:
    """The out form of a product call whose one result cuBLAS can write as it is, or None. Views it
    needs of its operands are created at the current insertion point."""
    if len(op.results_) != 1:
        return None
    layout = buffer_layout(op.results_[0])
    if layout.is_dynamic or layout.numel == 0 or not layout.dtype.is_float:
        return None
    name = op.op.value
    if name in OUT_FORMS:
        call = _Call(OUT_FORMS[name], list(op.inputs), list(op.args), layout)
        return call if _written_directly(layout) else None
    return _linear(op, layout) if name == LINEAR else None


def _linear(op: Any, layout: Layout) -> _Call | None:
    """`linear(x, w, b)` as `addmm(b, x2, t(w))` (or `mm(x2, t(w))`), x2 the input's rows as a matrix."""
    operands = [argument_operand(op, i) for i in range(len(op.args))]
    if len(operands) != 3 or operands[0] is None or operands[1] is None:
        return None
    x, w = buffer_layout(operands[0]), buffer_layout(operands[1])
    bias = buffer_layout(operands[2]) if operands[2] is not None else None
    if x.rank < 2 or w.rank != 2 or (bias is not None and bias.rank != 1):
        return None
    rows = math.prod(x.shape[:-1])
    matrix, written = x.view([rows, x.shape[-1]]), layout.view([rows, layout.shape[-1]])
    if matrix is None or written is None or not _written_directly(written):
        return None
    mat1 = operands[0] if matrix == x else _view(operands[0], matrix)
    mat2 = _view(operands[1], w.transpose(0, 1))
    if bias is None:
        return _Call("aten.mm.out", [mat1, mat2], [attrs.index(0), attrs.index(1)], written)
    one = attrs.i64(1)
    return _Call(
        "aten.addmm.out", [operands[2], mat1, mat2], [*map(attrs.index, range(3)), one, one], written
    )


def _written_directly(layout: Layout) -> bool:
    """Whether cuBLAS writes a product of this layout as it is: each matrix has rows or columns of unit
    stride, the other stride at least as long as they are (ATen's rule for `out`; otherwise it computes
    into a temporary and copies)."""
    if layout.rank not in (2, 3):
        return False
    (m, n), (sm, sn) = layout.shape[-2:], layout.strides[-2:]
    return (sn == 1 and (m == 1 or sm >= max(1, n))) or (sm == 1 and (n == 1 or sn >= max(1, m)))


def _view(source: ir.Value, layout: Layout) -> ir.Value:
    return d.create(d.ViewOp, [source], {"layout": layout.to_attr()}, 1).buf

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
second kernel. `matmul` becomes `mm` where its second operand is a matrix (on the first's rows, as eager
folds them) and `bmm` for two batches alike (of any rank, where their batch dims merge). Every rewritten
call is still exactly one ATen op.

A product whose result only a copy reads (a generated kernel that returns its input unchanged, through
views covering the result once) writes the copy's destination instead, each element where the copy would
have put it, when cuBLAS writes that layout directly; the copy goes. Attention heads returning to
[B, S, H * D] are such copies (`bmm(p, v).view(B, H, S, D).permute(0, 2, 1, 3).contiguous()`: DeBERTa's
and XLNet's context in every layer): for one sequence the product writes [H, S, D] at strides
(D, H * D, 1), a strided batched GEMM (`bench/probes/probe_out_form.py`, H200, TF32: 12 heads of 128 x 64
4.4 us writing there against 6.3 for the product and a copy kernel; 16 heads of 512 x 64, 7.9 against
10.7).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import argument_operand, buffer_layout, users, view_of
from ..ir.layout import Layout
from .base import Pass, plan_function, walk

# Functional ATen products -> their out forms, whose schema is the functional one plus a last `out`.
OUT_FORMS = {
    "aten.mm.default": "aten.mm.out",
    "aten.addmm.default": "aten.addmm.out",
    "aten.bmm.default": "aten.bmm.out",
    "aten.baddbmm.default": "aten.baddbmm.out",
}
LINEAR = "aten.linear.default"
MATMUL = "aten.matmul.default"


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
        main = plan_function(module)
        block = main.regions[0].blocks[0]
        ret = block.operations[len(block.operations) - 1]
        patched = _patched_outputs(main)
        fused = {f.sym_name.value: f for f in module.body.operations if isinstance(f, func.FuncOp)}
        with module.context:
            for op in [o for o in block.operations if isinstance(o, d.LibraryOp)]:
                with ir.InsertionPoint(op), op.location:
                    call = _out_form(op)
                    if call is None:
                        continue
                    result = op.results_[0]
                    layout = buffer_layout(result)
                    copy = _copy_of(result, call, block, fused, patched)
                    returned = [i for i, v in enumerate(ret.operands) if v == result]
                    if copy is not None:
                        target = copy.destination
                        target.owner.move_before(op.operation)  # (an alloc or output: no operands)
                        written = view_of(target, copy.write)
                    else:
                        if len(returned) == 1 and returned[0] in patched:
                            fields = {"index": attrs.i64(returned[0]), "layout": layout.to_attr()}
                            target = d.create(d.OutputOp, [], fields, 1).buf
                        else:
                            fields = {"layout": layout.to_attr(), "arena_offset": attrs.i64(-1)}
                            target = d.create(d.AllocOp, [], fields, 1).buf
                        written = target if call.write == layout else view_of(target, call.write)
                    fields = {
                        "op": attrs.string(call.op),
                        "args": ir.ArrayAttr.get([*call.args, attrs.index(len(call.inputs))]),
                        "layouts": ir.ArrayAttr.get([]),
                    }
                    d.create(d.LibraryOp, [[*call.inputs, written]], fields, 0)
                if copy is not None:
                    copy.erase()
                else:
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
    if name == LINEAR:
        return _linear(op, layout)
    return _matmul(op, layout) if name == MATMUL else None


def _linear(op: Any, layout: Layout) -> _Call | None:
    """`linear(x, w, b)` as `addmm(b, x2, t(w))` (or `mm(x2, t(w))`), x2 the input's rows as a matrix."""
    operands = [argument_operand(op, i) for i in range(len(op.args))]
    if len(operands) != 3 or operands[0] is None or operands[1] is None:
        return None
    w = buffer_layout(operands[1])
    bias = buffer_layout(operands[2]) if operands[2] is not None else None
    if w.rank != 2 or (bias is not None and bias.rank != 1):
        return None  # (a weight vector [K] makes `linear` a matrix-vector product without the last dim)
    if (rows := _rows(operands[0], layout)) is None:
        return None
    mat1, written = rows
    mat2 = view_of(operands[1], w.transpose(0, 1))
    if bias is None:
        return _Call("aten.mm.out", [mat1, mat2], [attrs.index(0), attrs.index(1)], written)
    one = attrs.i64(1)
    return _Call(
        "aten.addmm.out", [operands[2], mat1, mat2], [*map(attrs.index, range(3)), one, one], written
    )


def _matmul(op: Any, layout: Layout) -> _Call | None:
    """`matmul(a, b)` where eager computes it as one product: `mm(a2, b)` for a matrix `b`, a2 `a`'s rows as a
    matrix (how eager folds a batch of rows), or `bmm` for two batches of matrices alike, their batch dims
    (and the result's) viewed as one where the strides merge (a hand-written attention's
    `q @ k.transpose(-1, -2)` of [B, H, L, E] heads: [B * H, L, E] by [B * H, E, S])."""
    operands = [argument_operand(op, i) for i in range(len(op.args))]
    if len(operands) != 2 or operands[0] is None or operands[1] is None:
        return None
    a, b = buffer_layout(operands[0]), buffer_layout(operands[1])
    args = [attrs.index(0), attrs.index(1)]
    if b.rank == 2 and (rows := _rows(operands[0], layout)) is not None:
        return _Call("aten.mm.out", [rows[0], operands[1]], args, rows[1])
    if a.rank != b.rank or a.rank < 3 or a.shape[:-2] != b.shape[:-2]:
        return None
    batch = math.prod(a.shape[:-2])
    batches = [x.view([batch, *x.shape[-2:]]) for x in (a, b, layout)]
    if None in batches or not _written_directly(batches[2]):
        return None
    inputs = [v if x == m else view_of(v, m) for v, x, m in zip(operands, (a, b), batches[:2], strict=True)]
    return _Call("aten.bmm.out", inputs, args, batches[2])


def _rows(x: ir.Value, result: Layout) -> tuple[ir.Value, Layout] | None:
    """A product's first operand (rank >= 2) as one matrix of its rows, and the result's layout viewed as
    the matrix the product writes, where both views exist and cuBLAS writes that layout directly."""
    layout = buffer_layout(x)
    if layout.rank < 2 or result.rank != layout.rank:
        return None
    rows = math.prod(layout.shape[:-1])
    matrix, written = layout.view([rows, layout.shape[-1]]), result.view([rows, result.shape[-1]])
    if matrix is None or written is None or not _written_directly(written):
        return None
    return (x if matrix == layout else view_of(x, matrix)), written


@dataclasses.dataclass
class _Copy:
    """A kernel that only copies a product's result (through views) into a buffer of its own, and the
    layout in which the product writes that buffer instead."""

    kernel: Any
    views: list[Any]  # the views between the result and the kernel, the kernel's input last
    function: Any  # the kernel's fused function
    destination: ir.Value
    write: Layout  # the product's result's elements where the copy puts them, in the call's written shape

    def erase(self) -> None:
        self.kernel.operation.erase()
        for view in reversed(self.views):
            view.operation.erase()
        if not _symbol_users(self.function):
            self.function.operation.erase()


def _copy_of(
    result: ir.Value, call: _Call, block: Any, fused: dict[str, Any], patched: set[int]
) -> _Copy | None:
    """The copy that is the only reader of `result` when the product can write the copy's destination in
    its place: the copy reads every element once (views of the result that cover it densely), its
    destination is an arena buffer (or an output the runtime patches) that nothing touches before the copy,
    and cuBLAS writes the result's elements at the destination's addresses directly (DeBERTa's and
    XLNet's context, `bmm(probs, v).view(B, H, S, D).permute(0, 2, 1, 3)` copied to [B, S, H, D]: for one
    sequence, [H, S, D] with strides (D, H * D, 1)). Views it needs are created at the current insertion
    point."""
    views, value = [], result
    while len(uses := list(value.uses)) == 1 and isinstance(uses[0].owner, d.ViewOp):
        views.append(uses[0].owner)
        value = uses[0].owner.buf
    readers = list(value.uses)
    if len(readers) != 1 or not isinstance(kernel := readers[0].owner, d.KernelOp):
        return None
    function = fused.get(ir.FlatSymbolRefAttr(kernel.kernel).value)
    args, modes = list(kernel.args), [ir.StringAttr(m).value for m in kernel.access]
    if function is None or modes != ["r", "w"] or args[0] != value or not _only_copies(function):
        return None
    destination = args[1]
    if not _fresh_destination(destination, kernel, block, patched):
        return None
    source, own, target = buffer_layout(value), buffer_layout(result), buffer_layout(destination)
    if source.numel != own.numel or source.offset != own.offset or not own.is_contiguous():
        return None
    if not source.is_dense():
        return None
    # The result's elements in storage order are the source's dims by falling stride: lay the
    # destination's strides out in that order, then view it with the result's shape.
    order = sorted((d for d in range(source.rank) if source.shape[d] > 1), key=lambda d: -source.strides[d])
    placed = Layout(
        tuple(source.shape[d] for d in order),
        tuple(target.strides[d] for d in order),
        target.offset,
        target.dtype,
    ).view(own.shape)
    write = placed.view(call.write.shape) if placed is not None else None
    if write is None or not _written_directly(write):
        return None
    return _Copy(kernel, views, function, destination, write)


def _only_copies(function: Any) -> bool:
    """Whether a fused function returns its one argument unchanged: as it is, or through `aten.clone`."""
    block = function.regions[0].blocks[0]
    ops = list(block.operations)
    argument, ret = block.arguments[0], ops[-1]
    if len(block.arguments) != 1 or len(ret.operands) != 1:
        return False
    value = ret.operands[0]
    if value == argument:
        return True
    computed = [o for o in ops[:-1] if not o.operation.name.startswith("torch.constant.")]
    return (
        len(computed) == 1
        and computed[0].results[0] == value
        and computed[0].operation.name == "torch.aten.clone"
        and computed[0].operands[0] == argument
    )


def _fresh_destination(destination: ir.Value, kernel: Any, block: Any, patched: set[int]) -> bool:
    """Whether the copy writes the whole of a buffer of the plan first: an arena buffer, or an output the
    runtime patches into each call's fresh tensor."""
    owner = destination.owner
    if isinstance(owner, d.OutputOp):
        if ir.IntegerAttr(owner.index).value not in patched:
            return False
    elif not isinstance(owner, d.AllocOp):
        return False
    order = {o.operation: i for i, o in enumerate(block.operations)}
    at = order[kernel.operation]
    return all(order.get(u.operation, at) >= at for u in users(destination))


def _symbol_users(function: Any) -> list[Any]:
    """Kernel launches calling `function` in its module."""
    name = function.sym_name.value
    module = function.operation.parent
    return [
        op
        for op in walk(module.opview if hasattr(module, "opview") else module)
        if isinstance(op, d.KernelOp) and ir.FlatSymbolRefAttr(op.kernel).value == name
    ]


def _written_directly(layout: Layout) -> bool:
    """Whether cuBLAS writes a product of this layout as it is: each matrix has rows or columns of unit
    stride, the other stride at least as long as they are (ATen's rule for `out`; otherwise it computes
    into a temporary and copies)."""
    if layout.rank not in (2, 3):
        return False
    (m, n), (sm, sn) = layout.shape[-2:], layout.strides[-2:]
    return (sn == 1 and (m == 1 or sm >= max(1, n))) or (sm == 1 and (n == 1 or sn >= max(1, m)))

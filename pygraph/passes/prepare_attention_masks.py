"""prepare-attention-masks: give each attention call its mask in the form the vendor kernel reads as is.

`scaled_dot_product_attention(q, k, v, mask)` on CUDA runs the memory-efficient kernel, which wants an
additive mask in q's dtype, materialized as [B, H, L, S] with 16-element aligned strides. Given anything
else, ATen converts it inside every call: a boolean mask becomes `where(mask, 0, -inf)` and a broadcast
mask (the usual [1, 1, L, S] or [B, 1, 1, S]) is copied to [B, H, L, S], a few small kernels per call
and per layer (BERT: 4 of them in each of its 12 layers, 14% of its GPU time on an H200).

This pass computes that form once per mask: `where(expand(mask), 0.0, -inf)` (a boolean mask) or
`clone(expand(mask))`, ahead of the first attention call that reads it, and points every such call at
it. The ops are pointwise and a view, so fuse-pointwise makes one kernel of them (with the mask's own
computation). Adding 0 or -inf is what ATen's conversion does, so results do not change.

With that mask ATen may choose another attention kernel, whose result has other strides: the frontend
states them (`pygraph.dense_mask_layouts`, from ATen's own choice on the example's fake tensors), they
become the call's `pygraph.layouts`, and the views that read the result get the layouts that follow. A
call without them is left alone, and so is one whose result a view could not view with those strides.

Left alone: attentions routed to the generated kernel (class `attention`: it reads any mask at its own
strides, a boolean one as bytes), masks already dense [B, H, L, S] in q's dtype, calls that are not 4-D, key lengths that are
not a multiple of 16 (ATen pads those: a padded layout is not worth a kernel here), masks of another
float dtype than q's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout, view_layouts
from ..ir.torch_types import tensor_info, vtensor_type
from . import builders
from .base import Pass, PassError, main_function
from .pointwise import NO_VALUE, constant_value

_ATTENTION = "aten.scaled_dot_product_attention.default"
_ALIGNMENT = 16  # elements: the memory-efficient kernel's alignment of the mask's strides
_FLOATS = ("float32", "float16", "bfloat16")


@dataclasses.dataclass
class PrepareAttentionMasks(Pass):
    """Materializes each attention mask once as the dense additive mask the vendor kernel reads as is."""

    name = "prepare-attention-masks"
    summary = "compute each attention mask once in the dense additive form the vendor kernel reads"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        prepared: dict[tuple[ir.Value, tuple[int, ...]], ir.Value] = {}
        with module.context:
            for op in list(main.regions[0].blocks[0].operations):
                if aten.aten_name(op) != _ATTENTION:
                    continue
                if d.CLASS not in op.attributes:
                    raise PassError.at(op, f"the attention call has no {d.CLASS}: run classify-ops first")
                if ir.StringAttr(op.attributes[d.CLASS]).value == "attention":
                    continue  # the generated kernel reads the mask as it is
                shape = _dense_shape(op)
                if shape is None or d.DENSE_MASK_LAYOUTS not in op.attributes:
                    continue  # (without the frontend's layouts, the results' strides would be unknown)
                views = _relayout_views(op)
                if views is None:
                    continue
                mask = op.operands[3]
                key = (mask, shape)
                if key not in prepared:
                    with ir.InsertionPoint(op), op.location:
                        prepared[key] = _prepare(mask, shape, tensor_info(op.operands[0].type)[1])
                op.operands[3] = prepared[key]
                op.attributes[d.LAYOUTS] = op.attributes[d.DENSE_MASK_LAYOUTS]
                for view, layouts in views:
                    view.attributes[d.LAYOUTS] = ir.ArrayAttr.get([layout.to_attr() for layout in layouts])


def _dense_shape(op: Any) -> tuple[int, ...] | None:
    """[B, H, L, S] when the call's mask needs preparing, else None (see the module docstring)."""
    q, k, mask = (tensor_info(op.operands[i].type) for i in (0, 1, 3))
    if q is None or k is None or mask is None or len(q[0]) != 4 or len(k[0]) != 4:
        return None
    shape = (*q[0][:3], k[0][2])
    if -1 in shape or shape[3] % _ALIGNMENT or q[1].name not in _FLOATS:
        return None
    if mask[1].name != "bool" and mask[1] != q[1]:
        return None
    if mask[1] == q[1] and tuple(mask[0]) == shape and _dense(op.operands[3]):
        return None
    return shape


def _relayout_views(op: Any) -> list[tuple[Any, list[Layout]]] | None:
    """The views reading the call's result (transitively) with their layouts once the result has its
    dense-mask layout; None when one of them could not view it so (eager's `view` of other strides)."""
    result = op.results[0]
    old, new = (
        Layout.from_attr(ir.ArrayAttr(op.attributes[a])[0]) for a in (d.LAYOUTS, d.DENSE_MASK_LAYOUTS)
    )
    if old == new:
        return []
    updates, pending = [], [(result, new)]
    while pending:
        value, source = pending.pop()
        for use in value.uses:
            user = use.owner
            if d.CLASS not in user.attributes or ir.StringAttr(user.attributes[d.CLASS]).value != "view":
                continue
            args = [constant_value(v) for v in list(user.operands)[1:]]
            if use.operand_number != 0 or any(a is NO_VALUE for a in args):
                return None
            try:
                layouts = view_layouts(aten.aten_name(user), source, args, [])
            except ValueError:
                return None
            if layouts is None:
                return None
            updates.append((user, layouts))
            pending.extend(zip(user.results, layouts, strict=False))
    return updates


def _dense(value: ir.Value) -> bool:
    """Whether eager's layout of `value` is contiguous (the mask ATen reads without copying)."""
    owner = value.owner
    if isinstance(value, ir.OpResult) and d.LAYOUTS in owner.attributes:
        layout = Layout.from_attr(ir.ArrayAttr(owner.attributes[d.LAYOUTS])[value.result_number])
        return layout.strides == Layout.contiguous(layout.shape, layout.dtype).strides and layout.offset == 0
    return False


def _prepare(mask: ir.Value, shape: tuple[int, ...], dtype: Any) -> ir.Value:
    """The ops computing the dense additive mask, inserted at the current insertion point."""
    mask_dtype = tensor_info(mask.type)[1]
    size_list = builders.int_list(shape, classified=True)
    implicit = builders.constant(False, classified=True)
    expanded = builders.value(
        "torch.aten.expand", [mask, size_list, implicit], vtensor_type(shape, mask_dtype), "view"
    )
    if mask_dtype.name == "bool":
        zero = builders.constant(0.0, classified=True)
        minus_inf = builders.constant(float("-inf"), classified=True)
        operands, name = [expanded, zero, minus_inf], "torch.aten.where.Scalar"
    else:
        operands, name = (
            [expanded, builders.constant(None, classified=True)],
            "torch.aten.clone",
        )
    dense = builders.value(name, operands, vtensor_type(shape, dtype), "pointwise")
    dense.owner.attributes[d.LAYOUTS] = ir.ArrayAttr.get([Layout.contiguous(shape, dtype).to_attr()])
    return dense

"""split-bias: take the bias out of a library convolution (or matmul) whose result only feeds kernels.

`conv2d(x, w, b, ...)` becomes `conv2d(x, w, None, ...)` followed by `add(y, b.view(C, 1, 1))`;
`addmm(b, x, w)` becomes `mm(x, w)`, and with `matmuls` also `linear(x, w, b)` becomes `linear(x, w, None)`
(each still exactly one ATen op), followed by `add(y, b)`. The add is a pointwise op, so fuse-pointwise puts
it in the kernel of the ops that read the result (batch norm, ReLU, a residual add, layer norm). The add
follows the chain of views that alone read the result and keep the bias's dim whole (reshapes,
transposes, permutes: GPT-2's `view(addmm(...))`, ViT's `conv2d(...).flatten(2).transpose(1, 2)`), the
bias viewed to run along that dim there. A split happens only when every op reading the chain's end is a
pointwise op of its shape or a reduction of it, or when its one reader is the list of pieces of a
concatenation that a kernel computes (ViT's `cat([cls, patches])`: fuse-pointwise computes the piece in
the cat's kernel); otherwise a bias add of its own would cost a kernel.

Why convolutions and addmm but not linear by default (measured on an H200, torch 2.11, TF32): ATen adds a
convolution's bias with a kernel of its own after cuDNN's (4 kernels with the bias, 3 without), so the
split saves one. cuBLASLt adds a linear's bias in its epilogue for free: `linear` of [128, 768] by
[768, 768] is one kernel with its bias and two without (cuBLAS then picks split-K, whose reduction is a
kernel of its own). addmm's bias goes through cuBLAS's beta = 1 path instead, whose kernels are slower
than mm's (GPT-2's 48 addmm: 544 us against 377 us for mm with split-K and the bias in the next kernel;
the whole model 0.939 -> 0.752 ms, distilgpt2_I16 2.540 -> 2.477 ms: `bench/probes/probe_addmm.py`).
`matmuls=true` also splits linear, for vendors or shapes where that pays. By default a linear is split
where the epilogue measured slower: many rows (`min-rows`, 4096) and no more outputs than inputs
(`bench/probes/probe_linear_bias.py`, H200, TF32: [8192, 512] x [512, 512] 18.6 us with the bias, 16.0
without; MobileBERT's [16384, 512] x [512, 128] 15.8 against 13.2; with more outputs, or few rows
(GPT-2's [32, 768] x [768, 2304]: 6.1 against 7.6), the epilogue is as fast or faster).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.torch_types import tensor_info
from . import builders
from .base import Pass, PassError, main_function
from .fuse_pointwise import concat_space
from .pointwise import constant_value

_CONVOLUTIONS = ("aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default")
# Views the bias add may follow (those that keep the bias's dim whole).
_VIEWS = aten.RESHAPES | {"aten.transpose.int", "aten.permute.default"}


@dataclasses.dataclass
class SplitBias(Pass):
    """Splits the bias add out of convolutions, addmm and linear of many rows (all linear with `matmuls`)
    that feed only kernels."""

    name = "split-bias"
    summary = "split the bias add out of a library convolution (or matmul) when a kernel can take it"
    addmm: bool = True  # addmm (see the module docstring for why)
    matmuls: bool = False  # also linear (see the module docstring for why not by default)
    min_rows: int = 4096  # a linear with this many rows and no more outputs than inputs is split

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        with module.context:
            for op in list(main.regions[0].blocks[0].operations):
                name = aten.aten_name(op)
                if name in _CONVOLUTIONS or (name == "aten.linear.default" and self._splits_linear(op)):
                    bias = op.operands[2]
                elif (
                    (self.addmm or self.matmuls)
                    and name == "aten.addmm.default"
                    and all(constant_value(v) == 1 for v in op.operands[3:])
                ):
                    bias = op.operands[0]
                else:
                    continue
                if tensor_info(bias.type) is None:
                    continue  # no bias (None)
                end, dim = _fed_value(op.results[0], _bias_dim(op, name))
                if _only_kernels_read(end):
                    _split(op, name, bias, end, dim)

    def _splits_linear(self, op: Any) -> bool:
        if self.matmuls:
            return True
        x, w = (tensor_info(v.type) for v in op.operands[:2])
        if x is None or w is None or -1 in x[0] or len(w[0]) != 2:
            return False
        rows, (outputs, inputs) = math.prod(x[0][:-1]), w[0]
        return rows >= self.min_rows and outputs <= inputs


def _bias_dim(op: Any, name: str) -> int:
    """The dim of `op`'s result the bias runs along: the channels of a convolution (dim 0 when unbatched),
    else the last."""
    rank = len(tensor_info(op.results[0].type)[0])
    return rank - int(name[len("aten.conv")]) - 1 if name in _CONVOLUTIONS else rank - 1


def _fed_value(value: ir.Value, dim: int) -> tuple[ir.Value, int]:
    """The value the bias add follows and the dim of it the bias runs along: the end of `value`'s chain of
    single-use views that keep dim `dim` whole."""
    while len(uses := [u.owner for u in value.uses]) == 1 and (moved := _moved_dim(uses[0], dim)) is not None:
        value, dim = uses[0].results[0], moved
    return value, dim


def _moved_dim(op: Any, dim: int) -> int | None:
    """Where dim `dim` of `op`'s source is in its result, if `op` is a reshape, transpose or permute that
    keeps the dim whole (a reshape keeps it where the result has a dim of its size over the same number
    of elements after it), else None."""
    name = aten.aten_name(op)
    if name not in _VIEWS:
        return None
    (source, _), (result, _) = (tensor_info(v.type) for v in (op.operands[0], op.results[0]))
    args = [constant_value(v) for v in op.operands[1:]]
    if name in aten.RESHAPES:
        after = source[dim + 1 :]
        kept = (
            k
            for k, size in enumerate(result)
            if size == source[dim]
            and -1 not in (*after, *result[k:])
            and math.prod(result[k + 1 :]) == math.prod(after)
        )
        return next(kept, None)
    if name == "aten.transpose.int" and all(isinstance(a, int) for a in args):
        a, b = (n % len(source) for n in args)
        return b if dim == a else a if dim == b else dim
    if name == "aten.permute.default" and isinstance(args[0], list):
        return [n % len(source) for n in args[0]].index(dim)
    return None


def _only_kernels_read(value: ir.Value) -> bool:
    """Whether every op reading `value` is fusible with an add of its shape: a pointwise op of that
    shape, or a reduction of it, or, alone, a list of pieces whose concatenation a kernel computes (no-ops
    such as metadata asserts do not count)."""
    shape = tensor_info(value.type)[0]
    readers = [u.owner for u in value.uses if _class(u.owner) != "nop"]
    if len(readers) == 1 and readers[0].operation.name == "torch.prim.ListConstruct":
        cats = [u.owner for u in readers[0].results[0].uses]
        return len(cats) == 1 and _checked_class(cats[0]) == "concat" and concat_space(cats[0]) is not None
    for op in readers:
        cls = _checked_class(op)
        if cls == "pointwise" and all(tensor_info(r.type) is not None for r in op.results):
            if any(tensor_info(r.type)[0] != shape for r in op.results):
                return False
        elif cls != "reduction" or op.operands[0] != value:
            return False
    return bool(readers)


def _split(op: Any, name: str, bias: ir.Value, end: ir.Value, dim: int) -> None:
    loc = op.location
    if name == "aten.addmm.default":
        with ir.InsertionPoint(op), loc:
            product = builders.create(
                "torch.aten.mm", list(op.operands[1:3]), [op.results[0].type], _class(op)
            )
        _copy_layouts(op, product)
        if d.MATMUL_KERNEL in op.attributes:  # (a generated matmul's precision)
            product.attributes[d.MATMUL_KERNEL] = op.attributes[d.MATMUL_KERNEL]
        end = product.results[0] if end == op.results[0] else end
        op.results[0].replace_all_uses_with(product.results[0])
        op.operation.erase()
    else:
        with ir.InsertionPoint(op), loc:
            none = builders.constant(None, classified=True)
        op.operands[2] = none
    owner = end.owner
    with ir.InsertionPoint.after(owner), loc:
        trailing = len(tensor_info(end.type)[0]) - 1 - dim
        if trailing:  # the bias runs along `dim`: view it as [C, 1, ...]
            bias = builders.view(bias, tensor_info(bias.type)[0] + [1] * trailing, classified=True)
        add = builders.create(
            "torch.aten.add.Tensor",
            [end, bias, builders.constant(1, classified=True)],
            [end.type],
            "pointwise",
        )
    _copy_layouts(owner, add, end.result_number)
    for use in list(end.uses):
        if use.owner.operation != add:
            use.owner.operands[use.operand_number] = add.results[0]


def _copy_layouts(source: Any, target: Any, index: int = 0) -> None:
    """The eager layout of `source`'s result `index` becomes `target`'s (same shape, same storage)."""
    if d.LAYOUTS in source.attributes:
        target.attributes[d.LAYOUTS] = ir.ArrayAttr.get([ir.ArrayAttr(source.attributes[d.LAYOUTS])[index]])


def _checked_class(op: Any) -> str | None:
    """`op`'s class; an error for an ATen op without one."""
    if aten.aten_name(op) is not None and _class(op) is None:
        raise PassError.at(op, f"'{op.operation.name}' has no {d.CLASS}: run classify-ops first")
    return _class(op)


def _class(op: Any) -> str | None:
    return ir.StringAttr(op.attributes[d.CLASS]).value if d.CLASS in op.attributes else None

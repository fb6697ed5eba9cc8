"""The generated scatter kernel: `index_put` of one index tensor, written in place into its target.

A decoding step writes each layer's new keys and values into its cache at the step's position
(`cache.index_copy_(2, pos, k)`, `cache[:, :, pos] = k`: both `index_put` with one index tensor and the
other dims whole). write-in-place makes that an in-place update of the cache; ATen's `index_put_` then
costs a launch of its general indexing kernel, 2.9 us on an H200 for one position of a Llama layer's cache,
where a kernel specialized to the shapes takes 1.2 to 1.5 (`bench/probes/probe_cache_write.py`,
`bench/results/probe-cache-write-s25-h200.log`). write-in-place therefore launches this kernel instead
when it can compute the op (`emit_scatter`): a fused function holding the `index_put` (class `scatter`),
launched with the target both as its first input and as its output, so that the kernel writes only the
indexed elements and every other element keeps its value.

Semantics are eager's (`index_put_` with accumulate=False): with the index tensor at position `dim` of the
list (None before it, the list possibly shorter than the target's rank), element p of the indexed shape
`target.shape[:dim] + index.shape + target.shape[dim + 1:]` takes the value of `values` (broadcast to that
shape) at p, and goes to the target at p's own position in the other dims and at the index's value at p
in `dim`. Indices count negatives from the end and must lie in [-n, n): as for gathers (`gathers.py`),
a lane out of range stores nothing and stops the kernel (eager CUDA fails a device-side assert, CPU
raises). Where an index repeats, which of its values lands is unspecified, as in eager CUDA. The values'
dtype must be the target's (ATen refuses others); an accumulating `index_put` (`index_add`) stays ATen's.

The kernel is 1-D over the indexed shape, in the memory order of the target's elements it writes, each
buffer addressed at its strides like a pointwise kernel's (`Writer`); the index is loaded at its strides
over the dims it spans, checked, and multiplied by the target's stride in `dim`. The values may be
computed by pointwise ops before the `index_put` (fuse-scatter-values puts there the kernel that made
them for the scatter alone), emitted as a pointwise kernel's over the indexed shape.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_layout
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info, vtensor_type
from .codegen_triton import Kernel, Writer, _Strided, checked_index, conjunction, term
from .copies import fused_function, launch_kernel
from .gathers import single_index
from .pointwise import constant_value

INDEX_PUT = "aten.index_put.default"
INDEX_DTYPES = ("int64", "int32")  # (ATen's other index dtypes, bool and uint8, are masks)


@dataclasses.dataclass(frozen=True)
class Scatter:
    """One `index_put`: `values` into `target` at `index` along `dim`; the index spans `span` dims of the
    indexed shape, from `dim`."""

    target: ir.Value
    index: ir.Value
    values: ir.Value
    dim: int
    span: int

    def indexed_shape(self) -> tuple[int, ...]:
        target, index = (tuple(tensor_info(v.type)[0]) for v in (self.target, self.index))
        return (*target[: self.dim], *index, *target[self.dim + 1 :])

    def target_strides(self, target: Layout) -> tuple[int, ...]:
        """The target's strides over the indexed shape: 0 along the index's dims (the index gives them)."""
        strides = target.strides
        return (*strides[: self.dim], *(0,) * self.span, *strides[self.dim + 1 :])

    def index_strides(self, index: Layout, rank: int) -> tuple[int, ...]:
        """The index's strides over the indexed shape (of `rank` dims): its own along the dims it spans."""
        return (0,) * self.dim + index.strides + (0,) * (rank - self.dim - self.span)


def read_scatter(op: Any) -> Scatter:
    """The scatter `op` computes; ValueError saying why when this kernel cannot compute it."""
    if aten.aten_name(op) != INDEX_PUT:
        raise ValueError(f"{aten.aten_name(op)} is not {INDEX_PUT}")
    target, indices, values, accumulate = op.operands
    if constant_value(accumulate) is not False:
        raise ValueError("it accumulates (only a plain index_put is a scatter)")
    dim, index = single_index(indices)
    infos = {
        what: tensor_info(v.type) for what, v in (("target", target), ("index", index), ("values", values))
    }
    for what, info in infos.items():
        if info is None or -1 in info[0]:
            raise ValueError(f"its {what} has no static shape")
    (target_shape, dtype), (index_shape, index_dtype), (values_shape, values_dtype) = infos.values()
    if dim >= len(target_shape):
        raise ValueError(f"it indexes dim {dim} of a {len(target_shape)}-d target")
    if index_dtype.name not in INDEX_DTYPES:
        raise ValueError(f"its index is {index_dtype.name}, not {' or '.join(INDEX_DTYPES)}")
    if values_dtype != dtype:
        raise ValueError(f"its values are {values_dtype.name}, its target {dtype.name}")
    scatter = Scatter(target, index, values, dim, len(index_shape))
    shape = scatter.indexed_shape()
    lead = len(shape) - len(values_shape)
    if lead < 0 or any(n not in (1, m) for n, m in zip(values_shape, shape[lead:], strict=True)):
        raise ValueError(f"its values {values_shape} do not broadcast to the indexed shape {list(shape)}")
    return scatter


def emit_scatter(module: ir.Module, maker: Any) -> Any:
    """Launches, before `maker` (a `pygraph.library` calling index_put on a target it may write), a scatter
    kernel that writes the target in place; returns the launch, or why it cannot (a string; the function
    made to check the op is erased again)."""
    args = list(maker.args)
    if len(args) != 4 or not (
        _is_operand(args[0]) and _is_operand(args[2]) and isinstance(args[3], ir.BoolAttr)
    ):
        return "its target, indices, values and accumulate are not two tensors, a list and a constant"
    entries = list(ir.ArrayAttr(args[1])) if isinstance(args[1], ir.ArrayAttr) else []
    if not entries or not all(_is_operand(e) or isinstance(e, ir.UnitAttr) for e in entries):
        return "its indices are not a list of tensors and None"
    inputs = list(maker.inputs)
    buffers = [
        inputs[ir.IntegerAttr(a).value] for a in (args[0], *(e for e in entries if _is_operand(e)), args[2])
    ]
    if len(buffers) != 3:
        return f"it indexes by {len(buffers) - 2} tensors, not one"
    types = [vtensor_type(layout.shape, layout.dtype) for layout in map(buffer_layout, buffers)]
    fn = fused_function(module, "scatter", types, types[:1])
    block = fn.regions[0].blocks[0]
    with ir.InsertionPoint(block):
        items = [
            block.arguments[1] if _is_operand(e) else _create("torch.constant.none", "!torch.none")
            for e in entries
        ]
        index_list = _create("torch.prim.ListConstruct", "!torch.list<optional<vtensor>>", items)
        accumulate = _create("torch.constant.bool", "!torch.bool", value=args[3])
        put = ir.Operation.create(
            "torch.aten.index_put",
            results=types[:1],
            operands=[block.arguments[0], index_list, block.arguments[2], accumulate],
            attributes={d.CLASS: attrs.string("scatter")},
        )
        func.ReturnOp([put.result])
    try:
        read_scatter(put)
    except ValueError as exc:
        fn.operation.erase()
        return str(exc)
    return launch_kernel(fn.sym_name.value, buffers, buffers[:1])


class ScatterWriter(Writer):
    """Writes the kernel of a fused function holding one `index_put` of class `scatter` (module docstring):
    its first input is the target, which the launch also passes as its output."""

    def __init__(self, fn: Any, layouts: list[Layout], max_block: int, indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        compute = [op for op in self.body_ops if aten.aten_name(op) is not None]
        if not compute or len(self.results) != 1 or self.results[0] != compute[-1].results[0]:
            raise ValueError("a scatter kernel computes one index_put last and returns its result")
        self.put, self.values_ops = compute[-1], compute[:-1]
        self.scatter = read_scatter(self.put)
        s = self.scatter
        if not all(isinstance(v, ir.BlockArgument) for v in (s.target, s.index)):
            raise ValueError("the target and index of a scatter kernel must be its inputs")
        if isinstance(s.values, ir.BlockArgument) == bool(self.values_ops):
            raise ValueError("the values of a scatter kernel are its input or what its other ops compute")
        if any(s.target in op.operands or s.index in op.operands for op in self.values_ops):
            raise ValueError(
                "the ops computing a scatter kernel's values read neither its target nor its index"
            )
        if s.target.arg_number != 0:
            raise ValueError("the target of a scatter kernel must be its first input")
        if not layouts[0].addresses_like(layouts[len(self.args)]):
            raise ValueError(
                "a scatter kernel's output must be its target (it writes only the indexed elements)"
            )
        self.shape = s.indexed_shape()
        self._blocks(max_block)

    def write(self) -> Kernel:
        s, out = self.scatter, len(self.args)
        names = self._emit_ops([op for op in self.body_ops if op.operation != self.put.operation])
        values = self._operand(s.values)
        a = s.index.arg_number
        strides = s.index_strides(self.layouts[a], len(self.shape))
        self.index_name = self._access(_Strided(a, "ix", self._over_space(strides, list(self.shape))))
        target = self.layouts[out]
        self.step, self.bound = target.strides[s.dim], target.shape[s.dim]
        return Kernel(
            params=[f"in{b}" for b in range(out)] + ["out0"],
            body=self._render([(out, values.expr)]),
            signature=[
                self._signature(x, off is not None)
                for x, off in zip(self.layouts, self.indirect, strict=True)
            ],
            grid=self.grid,
            num_warps=self.num_warps,
            ops=[*names, "index_put"],
        )

    def _strides(self, a: int) -> tuple[int, ...]:
        if a == len(self.args):
            return self.scatter.target_strides(self.layouts[a])
        return super()._strides(a)

    def _order_strides(self, a: int) -> tuple[int, ...]:
        """The target's strides over the indexed shape as if the index's dims were laid out contiguously
        in its indexed dim, so that lanes follow the order of the elements they write."""
        s, strides = self.scatter, self.layouts[a].strides
        index_shape = self.shape[s.dim : s.dim + s.span]
        inner = [math.prod(index_shape[j + 1 :]) for j in range(s.span)]
        return (*strides[: s.dim], *(strides[s.dim] * n for n in inner), *strides[s.dim + 1 :])

    def _stored(self, lines: list[str], stores: list[tuple[int, str]], offset: Any, mask: str) -> str:
        ((a, value),) = stores
        index_dtype = self.layouts[self.scatter.index.arg_number].dtype
        lines += checked_index("s", self.index_name, index_dtype, self.bound, True, self.wide, mask)
        base = offset(a)
        address = f"out0 + {'' if base == '0' else f'{base} + '}{term('ats', self.step)}"
        lines.append(f"tl.store({address}, {value}, mask={conjunction(mask, 'oks')})")
        return "".join(f"    {line}\n" for line in lines)


def _is_operand(attr: ir.Attribute) -> bool:
    return isinstance(attr, ir.IntegerAttr) and isinstance(attr.type, ir.IndexType)


def _create(name: str, result: str, operands: list[ir.Value] | None = None, **attributes: Any) -> ir.Value:
    """A scalar op (a constant, the list of indices) of the scatter's function."""
    attributes[d.CLASS] = attrs.string("scalar")
    return ir.Operation.create(
        name, results=[ir.Type.parse(result)], operands=operands or [], attributes=attributes
    ).result

"""Complex tensors computed as pairs of real numbers.

Models use complex numbers for rotary position embeddings: Meta's Llama, torchtitan and Gemma's reference
code multiply `view_as_complex(q.reshape(..., -1, 2))` by a complex `freqs_cis` and take `view_as_real` of
the product. pygraph's kernels and plans hold real tensors, so each complex value of the program becomes
the tensor `view_as_real` gives of it: the same sizes and one more dim of 2 (the real and the imaginary
part), of the real dtype of the same precision. `view_as_complex` and `view_as_real` become nothing; views
move the same dims; arithmetic becomes CUDA's formulas on the parts (c10's `complex`: the product as
`(ac - bd, ad + bc)`, the quotient scaled by the divisor's larger part), which the fuser makes one kernel
with what surrounds them. A real operand is promoted as eager promotes it, to a pair with an imaginary
part of zeros. Complex state (a `freqs_cis` buffer, a constant) is read as its `view_as_real`, which
derived state holds without a copy and renews when the tensor changes (`derived_state.py`). A complex
product is one real product (`_matmul`); FFTs call ATen's on complex views of the pairs (`pair_ops.py`).

A complex input of the model is its pair in the program, which each call passes as `view_as_real` of the
caller's tensor (`COMPLEX_INPUT`), and a complex result its pair, which each call returns as `view_as_complex`
of it (`COMPLEX_RESULTS`): views both, no copies. What has no formula here (powers, complex state or
inputs the model writes, complex state returned) is refused before anything runs, naming the op and its line.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

from .. import pair_ops
from .rewrite import MUTATIONS, UnsupportedError, describe_node, propagate_fake_tensors, replace_node

aten = torch.ops.aten
Node = torch.fx.Node
Value = Node | float | bool  # a real value while rewriting: a node, or a number the formulas fold in Python
_STATE = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
# Node meta: on the output node, the positions of the model's complex results among its results; on a
# placeholder, that it is a complex input, which the program takes as its pair.
COMPLEX_RESULTS, COMPLEX_INPUT = "pygraph_complex_results", "pygraph_complex_input"


def complex_as_real(ep: torch.export.ExportedProgram) -> int:
    """Rewrites every op on complex tensors of `ep` as ops on their real pairs, in place; returns how many
    ops it rewrote (0: the program holds no complex tensor and is left as it was)."""
    if not any(_complex(node.meta.get("val")) for node in ep.graph.nodes):
        return 0
    rewrite = _Rewrite(ep)
    for node in list(ep.graph.nodes):
        rewrite.visit(node)
    ep.graph.eliminate_dead_code()
    propagate_fake_tensors(ep)
    return rewrite.count


def _complex(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(map(_complex, value))
    return isinstance(value, complex) or (isinstance(value, torch.Tensor) and value.dtype.is_complex)


class _Rewrite:
    """The walk over the program: `pairs` maps each complex node to the node of its real pair."""

    def __init__(self, ep: torch.export.ExportedProgram) -> None:
        self.ep, self.graph, self.count = ep, ep.graph, 0
        self.pairs: dict[Node, Node] = {}
        self.specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
        self.written = {spec.target for spec in ep.graph_signature.output_specs if spec.kind in MUTATIONS}

    def visit(self, node: Node) -> None:
        if node.op == "placeholder":
            if _complex(node.meta.get("val")):
                self._placeholder(node)
            return
        if node.op == "output":
            self._results(node)
            return
        touches = any(n in self.pairs for n in node.all_input_nodes) or _complex(node.meta.get("val"))
        if not touches and not any(map(_complex, (*node.args, *node.kwargs.values()))):
            return
        if node.target is aten._assert_tensor_metadata.default:
            self.graph.erase_node(node)  # (a check of a complex tensor's dtype, which the pair does not have)
            return
        translate = _TRANSLATIONS.get(node.target)
        if translate is None:
            raise UnsupportedError(
                f"{describe_node(node)}: {node.target} of complex tensors is not supported (pygraph computes "
                f"complex values as pairs of reals, for {', '.join(sorted(_NAMES))})"
            )
        with self.graph.inserting_before(node):
            result = translate(_Ops(self, node), *node.args, **node.kwargs)
        self.count += 1
        if _complex(node.meta.get("val")):
            self.pairs[node] = result
        else:  # a real result (`view_as_real`, `abs`, `.real`) takes the node's place, and its value
            result.meta.setdefault("val", node.meta["val"])
            replace_node(self.ep, node, result)

    def _results(self, output: Node) -> None:
        """Complex results of the model become their pairs; their positions among the model's results go
        into the output node's `COMPLEX_RESULTS`, for each call to return the complex views of the pairs."""
        values, specs = list(output.args[0]), self.ep.graph_signature.output_specs
        user = [i for i, spec in enumerate(specs) if spec.kind == OutputKind.USER_OUTPUT]
        positions = []
        for position, i in enumerate(user):
            if isinstance(values[i], Node) and values[i] in self.pairs:
                self._refuse_state_view(values[i])
                values[i] = self.pairs[values[i]]
                specs[i] = dataclasses.replace(specs[i], arg=TensorArgument(name=values[i].name))
                positions.append(position)
        output.args = (tuple(values), *output.args[1:])
        output.meta[COMPLEX_RESULTS] = tuple(positions)

    def _refuse_state_view(self, result: Node) -> None:
        """A complex result that is complex state or a view of it: eager returns the state's own memory,
        which the program, reading the state as a derived pair, would return a copy of."""
        node = result
        while node.op == "call_function" and getattr(node.target, "is_view", False):
            node = node.args[0]
        if node.op == "placeholder" and self.specs[node.name].kind in _STATE:
            spec = self.specs[node.name]
            raise UnsupportedError(
                f"{describe_node(result)} is the complex {spec.kind.name.lower().replace('_', ' ')} "
                f"'{spec.target}' or a view of it, returned: pygraph reads complex state as pairs of reals "
                "and would return a copy where eager returns the state's memory (return a `.clone()` of it)"
            )

    def _placeholder(self, node: Node) -> None:
        spec = self.specs[node.name]
        if spec.kind == InputKind.USER_INPUT:
            if spec.arg.name in self.written:
                raise UnsupportedError(
                    f"the complex input '{spec.arg.name}' is written by the model: pygraph takes complex "
                    "inputs as pairs of reals and cannot write them"
                )
            node.meta["val"] = torch.view_as_real(node.meta["val"])  # each call passes the pair's view
            node.meta[COMPLEX_INPUT] = True
            self.pairs[node] = node
            return
        if spec.kind not in _STATE:
            raise UnsupportedError(f"input '{spec.arg.name}' is a complex {spec.kind.name.lower()}")
        if spec.target in self.written:
            raise UnsupportedError(
                f"the complex {spec.kind.name.lower().replace('_', ' ')} '{spec.target}' is written by the "
                "model: pygraph reads complex state as pairs of reals and cannot write it"
            )
        if not node.users:  # (state forward does not read: nothing to import)
            self.ep.graph_signature.input_specs.remove(spec)
            self.graph.erase_node(node)
            return
        first_op = next(n for n in self.graph.nodes if n.op != "placeholder")
        with self.graph.inserting_before(first_op):
            self.pairs[node] = self.graph.call_function(aten.view_as_real.default, (node,))


class _Ops:
    """Real arithmetic for one translated node: its operands' parts and pairs, and ops on values that are
    nodes or numbers (numbers combine in Python, in double precision: a complex number's quotient factors
    may then differ from c10's float32 ones in the last bit)."""

    def __init__(self, rewrite: _Rewrite, node: Node) -> None:
        self.rewrite, self.node = rewrite, node
        value = node.meta["val"]
        value = value[0] if isinstance(value, (list, tuple)) else value
        dtype = value.dtype if isinstance(value, torch.Tensor) else torch.get_default_dtype()
        self.real_dtype = dtype.to_real()
        self.device = value.device if isinstance(value, torch.Tensor) else None

    def call(self, target: Any, *args: Any, **kwargs: Any) -> Node:
        return self.rewrite.graph.call_function(target, args, kwargs)

    def is_pair(self, operand: Any) -> bool:
        return isinstance(operand, Node) and operand in self.rewrite.pairs

    def pair(self, operand: Any) -> Node:
        """The real pair of an operand in the result's real dtype: a complex operand's, or a real tensor
        promoted (its imaginary part zeros)."""
        if not self.is_pair(operand):
            return self.stack(*self.parts(operand))
        pair = self.rewrite.pairs[operand]
        return self.cast(pair, operand.meta["val"].dtype.to_real())

    def parts(self, operand: Any) -> tuple[Value, Value]:
        """The real and the imaginary part of an operand (a complex or real tensor, or a number); a tensor's
        keep the pair's last dim, of size 1, so that formulas on them broadcast against pairs."""
        if self.is_pair(operand):
            pair = self.pair(operand)
            return self.call(aten.slice.Tensor, pair, -1, 0, 1), self.call(aten.slice.Tensor, pair, -1, 1, 2)
        if isinstance(operand, Node):
            real = self.lane(self.cast(operand, operand.meta["val"].dtype))
            return real, self.call(aten.zeros_like.default, real)
        number = complex(operand)
        return number.real, number.imag

    def lane(self, node: Node) -> Node:
        """A real tensor with the pair's last dim, of size 1."""
        return self.call(aten.unsqueeze.default, node, -1)

    def squeezed(self, node: Node) -> Node:
        """A real result computed on parts, without their last dim."""
        return self.call(aten.squeeze.dims, node, [-1])

    def cast(self, node: Node, dtype: torch.dtype) -> Node:
        return (
            node
            if dtype == self.real_dtype
            else self.call(aten._to_copy.default, node, dtype=self.real_dtype)
        )

    def stack(self, real: Node, imag: Node) -> Node:
        """The pair of two parts (of last dim 1): each lane of the pair's last dim picks its part. (A `cat`
        of the parts would be a kernel of its own reading them from memory; a `where` broadcasting them
        is pointwise, so the kernel computing the parts writes the pair.)"""
        lanes = self.call(aten.arange.start_step, 0, 2, dtype=torch.int64, device=self.device)
        return self.call(aten.where.self, self.call(aten.eq.Scalar, lanes, 0), real, imag)

    def _apply(self, target: Any, python: Callable[..., Any], *values: Value) -> Value:
        if not any(isinstance(v, Node) for v in values):
            return python(*values)
        first, *rest = values
        if not isinstance(first, Node):  # a number first: ATen's ops take a tensor there
            if target in (aten.add.Tensor, aten.mul.Tensor):
                first, rest = rest[0], [first]
            elif target is aten.sub.Tensor:
                target, first, rest = aten.rsub.Scalar, rest[0], [first]
            else:
                first = self._tensor(first, rest[0])
        return self.call(target, first, *rest)

    def add(self, a: Value, b: Value) -> Value:
        return self._apply(aten.add.Tensor, operator.add, a, b)

    def sub(self, a: Value, b: Value) -> Value:
        return self._apply(aten.sub.Tensor, operator.sub, a, b)

    def mul(self, a: Value, b: Value) -> Value:
        return self._apply(aten.mul.Tensor, operator.mul, a, b)

    def div(self, a: Value, b: Value) -> Value:
        return self._apply(aten.div.Tensor, _python_div, a, b)

    def abs(self, a: Value) -> Value:
        return self._apply(aten.abs.default, abs, a)

    def ge(self, a: Value, b: Value) -> Value:
        return self._apply(aten.ge.Tensor, operator.ge, a, b)

    def both_zero(self, a: Value, b: Value) -> Value:
        zero = [self._apply(aten.eq.Scalar, operator.eq, x, 0.0) for x in (a, b)]
        return self._apply(aten.logical_and.default, operator.and_, *zero)

    def where(self, condition: Value, a: Value, b: Value) -> Value:
        if not isinstance(condition, Node):
            return a if condition else b
        return self.call(aten.where.self, condition, *(self._tensor(v, condition) for v in (a, b)))

    def _tensor(self, value: Value, like: Node) -> Node:
        if isinstance(value, Node):
            return value
        return self.call(aten.full_like.default, like, value, dtype=self.real_dtype)

    def dims(self, operand: Node, dims: list[int] | None) -> list[int]:
        """Dims of a complex operand counted from its front (its pair has one more dim, at the end); none
        or an empty list: all its dims."""
        rank = operand.meta["val"].dim()
        return [d % rank for d in dims] if dims else list(range(rank))


def _python_div(a: float, b: float) -> float:
    return a / b if b else (a * float("inf") if a else float("nan"))


# ------------------------------------------------------------------------------------------ arithmetic


def _product(ops: _Ops, a: tuple[Value, Value], b: tuple[Value, Value]) -> tuple[Value, Value]:
    """The parts of the product of two complex values given by their parts: `(ac - bd, ad + bc)`."""
    (ar, ai), (br, bi) = a, b
    return ops.sub(ops.mul(ar, br), ops.mul(ai, bi)), ops.add(ops.mul(ar, bi), ops.mul(ai, br))


def _mul(ops: _Ops, a: Any, b: Any) -> Node:
    return ops.stack(*_product(ops, ops.parts(a), ops.parts(b)))


def _add(ops: _Ops, a: Any, b: Any, *, alpha: Any = 1, subtract: bool = False) -> Node:
    """`a ± alpha * b` with alpha a complex number, as ATen's kernels compute it, even for 1: an infinite
    part of `b` makes the other part NaN (`0 * inf`)."""
    (ar, ai), (br, bi) = ops.parts(a), _product(ops, ops.parts(b), ops.parts(complex(alpha)))
    combine = ops.sub if subtract else ops.add
    return ops.stack(combine(ar, br), combine(ai, bi))


def _div(ops: _Ops, a: Any, b: Any) -> Node:
    """c10's complex division: scaled by the divisor's larger part, which keeps `c * c + d * d` from
    overflowing; a zero divisor divides each part by zero."""
    (ar, ai), (c, d) = ops.parts(a), ops.parts(b)
    wide = ops.ge(ops.abs(c), ops.abs(d))
    big, small = ops.where(wide, c, d), ops.where(wide, d, c)
    ratio = ops.div(small, big)
    scale = ops.div(1.0, ops.add(big, ops.mul(small, ratio)))
    real = ops.where(wide, ops.add(ar, ops.mul(ai, ratio)), ops.add(ops.mul(ar, ratio), ai))
    imag = ops.where(wide, ops.sub(ai, ops.mul(ar, ratio)), ops.sub(ops.mul(ai, ratio), ar))
    real, imag = ops.mul(real, scale), ops.mul(imag, scale)
    zero = ops.both_zero(c, d)
    real = ops.where(zero, ops.div(ar, ops.abs(c)), real)
    imag = ops.where(zero, ops.div(ai, ops.abs(d)), imag)
    return ops.stack(real, imag)


def _reciprocal(ops: _Ops, a: Any) -> Node:
    return _div(ops, 1.0, a)


def _exp(ops: _Ops, a: Any) -> Node:
    real, imag = ops.parts(a)
    magnitude = ops.call(aten.exp.default, real)
    return ops.stack(
        ops.mul(magnitude, ops.call(aten.cos.default, imag)),
        ops.mul(magnitude, ops.call(aten.sin.default, imag)),
    )


def _polar(ops: _Ops, magnitude: Node, angle: Node) -> Node:
    magnitude, angle = ops.lane(magnitude), ops.lane(angle)
    return ops.stack(
        ops.mul(magnitude, ops.call(aten.cos.default, angle)),
        ops.mul(magnitude, ops.call(aten.sin.default, angle)),
    )


def _complex_of(ops: _Ops, real: Node, imag: Node) -> Node:
    return ops.stack(ops.lane(real), ops.lane(imag))  # (the parts broadcast against each other there)


def _conj(ops: _Ops, a: Any) -> Node:
    real, imag = ops.parts(a)
    return ops.stack(real, ops.call(aten.neg.default, imag))


def _abs(ops: _Ops, a: Any) -> Node:
    return ops.squeezed(ops.call(aten.hypot.default, *ops.parts(a)))


def _angle(ops: _Ops, a: Any) -> Node:
    real, imag = ops.parts(a)
    return ops.squeezed(ops.call(aten.atan2.default, imag, real))


def _matmul(ops: _Ops, a: Node, b: Node) -> Node:
    """One real product (both operands are complex: torch multiplies no mixed ones): `a`'s pair read as rows
    of interleaved parts [..., M, 2K] (a view where its last two dims are dense), times `b`'s real form
    [..., 2K, 2N], whose rows 2k hold the pairs (br, bi) of `b`'s row k and rows 2k+1 the pairs (-bi, br),
    gives the result's pairs as rows [..., M, 2N]. Four products of the parts would be four vendor calls and
    a kernel combining them; where `b` is state (a Fourier layer's weights), derived state computes its real
    form once (or, where it would hold more than the state's bytes, a kernel per call: `derived_state.py`)."""
    result, shapes = list(ops.node.meta["val"].shape), [list(x.meta["val"].shape) for x in (a, b)]
    rows, pairs = ops.pair(a), ops.pair(b)
    vector_a, vector_b = len(shapes[0]) == 1, len(shapes[1]) == 1
    if vector_a:  # (a row of one vector: [K] -> [1, K])
        rows = ops.call(aten.unsqueeze.default, rows, 0)
        shapes[0].insert(0, 1)
        result.insert(len(result) - (0 if vector_b else 1), 1)
    if vector_b:  # (a column: [K] -> [K, 1])
        pairs = ops.call(aten.unsqueeze.default, pairs, 1)
        shapes[1].append(1)
        result.append(1)
    rows = ops.call(aten.reshape.default, rows, [*_sizes(ops, rows, shapes[0][:-1]), -1])
    real, imag = (ops.call(aten.slice.Tensor, pairs, -1, i, i + 1) for i in (0, 1))
    turned = ops.stack(ops.call(aten.neg.default, imag), real)
    rank = len(shapes[1])
    form = ops.call(
        aten.cat.default, [ops.call(aten.unsqueeze.default, x, rank - 1) for x in (pairs, turned)], rank - 1
    )  # [..., K, 2, N, 2]
    columns = _sizes(ops, pairs, shapes[1])[-1]
    columns = columns * 2 if isinstance(columns, int) else ops.call(operator.mul, columns, 2)
    form = ops.call(aten.reshape.default, form, [*_sizes(ops, pairs, shapes[1][:-2]), -1, columns])
    product = ops.call(ops.node.target, rows, form)
    pair = ops.call(aten.reshape.default, product, [*_sizes(ops, product, result[:-1]), -1, 2])
    squeezed = [len(result) - 2] * vector_a + [len(result) - 1] * vector_b
    return ops.call(aten.squeeze.dims, pair, squeezed) if squeezed else pair


def _sizes(ops: _Ops, node: Node, sizes: list[Any]) -> list[Any]:
    """`sizes`, the symbolic ones read from the dims of `node` (a tensor whose leading dims they are)."""
    return [
        size if isinstance(size, int) else ops.call(aten.sym_size.int, node, d)
        for d, size in enumerate(sizes)
    ]


def _where(ops: _Ops, condition: Node, a: Any, b: Any) -> Node:
    keep = ops.call(aten.unsqueeze.default, condition, -1)
    return ops.call(aten.where.self, keep, ops.pair(a), ops.pair(b))


def _full(ops: _Ops, size: list[Any], value: Any, **kwargs: Any) -> Node:
    kwargs["dtype"] = ops.real_dtype
    value = complex(value)
    return ops.stack(
        *(ops.call(aten.full.default, [*size, 1], part, **kwargs) for part in (value.real, value.imag))
    )


def _zeros_like(ops: _Ops, a: Node, **kwargs: Any) -> Node:
    return ops.call(aten.zeros_like.default, ops.pair(a), **{**kwargs, "dtype": ops.real_dtype})


def _to_copy(ops: _Ops, a: Node, **kwargs: Any) -> Node:
    """A cast or a device move: complex to complex moves the pair, complex to real keeps the real part (as
    eager does, with its warning), real to complex pairs the value with zeros."""
    kwargs.pop("memory_format", None)  # (the pair's own layout)
    if not _complex(ops.node.meta["val"]):
        real = ops.call(aten.select.int, ops.pair(a), -1, 0)
        return ops.call(aten._to_copy.default, real, **kwargs)
    pair = ops.rewrite.pairs[a] if ops.is_pair(a) else ops.pair(a)
    return ops.call(aten._to_copy.default, pair, **{**kwargs, "dtype": ops.real_dtype})


def _sum(target: Any) -> Callable[..., Node]:
    """`sum` and `mean` over dims of the complex value: the same dims of its pair."""

    def reduce(
        ops: _Ops, a: Node, dims: list[int] | None = None, keepdim: bool = False, **kwargs: Any
    ) -> Node:
        if kwargs.get("dtype") is not None:
            kwargs["dtype"] = kwargs["dtype"].to_real()
        return ops.call(target, ops.pair(a), ops.dims(a, dims), keepdim, **kwargs)

    return reduce


def _reshape(ops: _Ops, a: Node, shape: list[Any]) -> Node:
    return ops.call(aten.reshape.default, ops.pair(a), [*shape, 2])


def _expand(ops: _Ops, a: Node, shape: list[Any], implicit: bool = False) -> Node:
    return ops.call(aten.expand.default, ops.pair(a), [*shape, 2])


def _repeat(ops: _Ops, a: Node, repeats: list[Any]) -> Node:
    return ops.call(aten.repeat.default, ops.pair(a), [*repeats, 1])


def _at_dim(target: Any, rank_offset: int = 0) -> Callable[..., Node]:
    """A view or an op of the first operand at one dim (`slice`, `select`, `unsqueeze`, `split`...): the
    same dim of its pair, counted from the front (`unsqueeze` counts in the result's rank)."""

    def at_dim(ops: _Ops, a: Node, dim: int = 0, *args: Any, **kwargs: Any) -> Node:
        rank = a.meta["val"].dim() + rank_offset
        return ops.call(target, ops.pair(a), dim % rank, *args, **kwargs)

    return at_dim


def _squeeze(ops: _Ops, a: Node, dims: list[int] | int | None = None) -> Node:
    shape = a.meta["val"].shape
    dims = [dims] if isinstance(dims, int) else dims
    if dims is None:
        dims = [d for d, size in enumerate(shape) if size == 1]
    return ops.call(aten.squeeze.dims, ops.pair(a), ops.dims(a, dims) if dims else [])


def _permute(ops: _Ops, a: Node, dims: list[int]) -> Node:
    return ops.call(aten.permute.default, ops.pair(a), [*ops.dims(a, dims), len(dims)])


def _transpose(ops: _Ops, a: Node, first: int, second: int) -> Node:
    return ops.call(aten.transpose.int, ops.pair(a), *ops.dims(a, [first, second]))


def _t(ops: _Ops, a: Node) -> Node:
    return _transpose(ops, a, 0, 1) if a.meta["val"].dim() == 2 else ops.pair(a)


def _cat(ops: _Ops, tensors: list[Node], dim: int = 0) -> Node:
    return ops.call(aten.cat.default, [ops.pair(t) for t in tensors], dim % ops.node.meta["val"].dim())


def _stack(ops: _Ops, tensors: list[Node], dim: int = 0) -> Node:
    """A `cat` of the pairs given a dim of 1 (as torch decomposes `stack`, which the fuser takes)."""
    dim %= ops.node.meta["val"].dim()
    return ops.call(
        aten.cat.default, [ops.call(aten.unsqueeze.default, ops.pair(t), dim) for t in tensors], dim
    )


def _split(ops: _Ops, a: Node, sizes: Any, dim: int = 0) -> Node:
    return ops.call(ops.node.target, ops.pair(a), sizes, dim % a.meta["val"].dim())


def _index(ops: _Ops, a: Node, indices: list[Node | None]) -> Node:
    return ops.call(aten.index.Tensor, ops.pair(a), indices)  # (indices reach the leading dims only)


def _same(target: Any) -> Callable[..., Node]:
    """An op that treats both parts alike (a copy, a negation): the op of the pair."""

    def same(ops: _Ops, a: Node, *args: Any, **kwargs: Any) -> Node:
        return ops.call(target, ops.pair(a), *args, **kwargs)

    return same


def _part(index: int) -> Callable[..., Node]:
    def part(ops: _Ops, a: Node) -> Node:
        return ops.call(aten.select.int, ops.pair(a), -1, index)

    return part


def _pair_itself(ops: _Ops, a: Node) -> Node:
    return ops.pair(a)


def _view_as_complex(ops: _Ops, a: Node) -> Node:
    return a


def _getitem(ops: _Ops, a: Node, index: int) -> Node:
    return ops.call(operator.getitem, ops.rewrite.pairs[a], index)


def _sym_size(ops: _Ops, a: Node, dim: int) -> Node:
    return ops.call(aten.sym_size.int, ops.pair(a), dim % a.meta["val"].dim())


def _slice_scatter(ops: _Ops, a: Node, src: Any, dim: int = 0, *args: Any) -> Node:
    return ops.call(aten.slice_scatter.default, ops.pair(a), ops.pair(src), dim % a.meta["val"].dim(), *args)


def _copy(ops: _Ops, a: Node, src: Any, non_blocking: bool = False) -> Node:
    """`a`'s shape and dtype with `src`'s values: a real `a` takes a complex `src`'s real part, as eager
    does (with its warning)."""
    if not _complex(ops.node.meta["val"]):
        return ops.call(aten.copy.default, a, ops.call(aten.select.int, ops.pair(src), -1, 0))
    return ops.call(aten.copy.default, ops.pair(a), ops.pair(src))


def _roll(ops: _Ops, a: Node, shifts: list[int], dims: list[int] | None = None) -> Node:
    """The same dims of the pair; without dims eager rolls the flattened value, which is the pair's rows."""
    if dims:
        return ops.call(aten.roll.default, ops.pair(a), shifts, ops.dims(a, dims))
    rows = ops.call(aten.reshape.default, ops.pair(a), [-1, 2])
    rolled = ops.call(aten.roll.default, rows, shifts, [0])
    return ops.call(aten.reshape.default, rolled, [*a.meta["val"].shape, 2])


def _pad(ops: _Ops, a: Node, pad: list[int], mode: str = "constant", value: Any = None) -> Node:
    """Each part padded alike, constant parts with their part of the value."""
    value = complex(value or 0)
    parts = zip(ops.parts(a), (value.real, value.imag), strict=True)
    return ops.stack(
        *(
            ops.lane(
                ops.call(aten.pad.default, ops.squeezed(part), pad, mode, v if mode == "constant" else None)
            )
            for part, v in parts
        )
    )


def _fft_r2c(ops: _Ops, x: Node, dim: list[int], normalization: int, onesided: bool) -> Node:
    return ops.call(pair_ops.fft_r2c, x, dim, normalization, onesided)


def _fft_c2c(ops: _Ops, a: Any, dim: list[int], normalization: int, forward: bool) -> Node:
    return ops.call(pair_ops.fft_c2c, ops.pair(a), dim, normalization, forward)


def _fft_c2r(ops: _Ops, a: Any, dim: list[int], normalization: int, last_dim_size: int) -> Node:
    return ops.call(pair_ops.fft_c2r, ops.pair(a), dim, normalization, last_dim_size)


_TRANSLATIONS: dict[Any, Callable[..., Node]] = {
    aten.view_as_complex.default: _view_as_complex,
    aten.view_as_real.default: _pair_itself,
    aten.resolve_conj.default: _pair_itself,
    aten.resolve_neg.default: _pair_itself,
    aten.alias.default: _pair_itself,
    operator.getitem: _getitem,
    aten.sym_size.int: _sym_size,
    aten.real.default: _part(0),
    aten.imag.default: _part(1),
    aten.polar.default: _polar,
    aten.complex.default: _complex_of,
    aten.mul.Tensor: _mul,
    aten.mul.Scalar: _mul,
    aten.add.Tensor: _add,
    aten.add.Scalar: _add,
    aten.sub.Tensor: lambda ops, a, b, alpha=1: _add(ops, a, b, alpha=alpha, subtract=True),
    aten.sub.Scalar: lambda ops, a, b, alpha=1: _add(ops, a, b, alpha=alpha, subtract=True),
    aten.rsub.Scalar: lambda ops, a, b, alpha=1: _add(ops, b, a, alpha=alpha, subtract=True),
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.reciprocal.default: _reciprocal,
    aten.exp.default: _exp,
    aten.neg.default: _same(aten.neg.default),
    aten.conj.default: _conj,
    aten._conj.default: _conj,
    aten.conj_physical.default: _conj,
    aten.abs.default: _abs,
    aten.angle.default: _angle,
    aten.mm.default: _matmul,
    aten.bmm.default: _matmul,
    aten.matmul.default: _matmul,
    aten.where.self: _where,
    aten.full.default: _full,
    aten.zeros.default: lambda ops, size, **kwargs: _full(ops, size, 0, **kwargs),
    aten.ones.default: lambda ops, size, **kwargs: _full(ops, size, 1, **kwargs),
    aten.zeros_like.default: _zeros_like,
    aten.clone.default: lambda ops, a, memory_format=None: ops.call(aten.clone.default, ops.pair(a)),
    aten._to_copy.default: _to_copy,
    aten.sum.dim_IntList: _sum(aten.sum.dim_IntList),
    aten.sum.default: lambda ops, a, dtype=None: _sum(aten.sum.dim_IntList)(ops, a, None, dtype=dtype),
    aten.mean.dim: _sum(aten.mean.dim),
    aten.mean.default: lambda ops, a, dtype=None: _sum(aten.mean.dim)(ops, a, None, dtype=dtype),
    aten.view.default: _reshape,
    aten._unsafe_view.default: _reshape,
    aten.reshape.default: _reshape,
    aten.expand.default: _expand,
    aten.repeat.default: _repeat,
    aten.slice.Tensor: _at_dim(aten.slice.Tensor),
    aten.select.int: _at_dim(aten.select.int),
    aten.index_select.default: _at_dim(aten.index_select.default),
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split,
    aten.unsqueeze.default: _at_dim(aten.unsqueeze.default, rank_offset=1),
    aten.squeeze.default: _squeeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.permute.default: _permute,
    aten.transpose.int: _transpose,
    aten.t.default: _t,
    aten.cat.default: _cat,
    aten.stack.default: _stack,
    aten.index.Tensor: _index,
    aten.slice_scatter.default: _slice_scatter,
    aten.copy.default: _copy,
    aten.roll.default: _roll,
    aten.flip.default: lambda ops, a, dims: ops.call(
        aten.flip.default, ops.pair(a), ops.dims(a, dims) if dims else []
    ),
    aten.constant_pad_nd.default: lambda ops, a, pad, value=0: _pad(ops, a, pad, "constant", value),
    aten.pad.default: _pad,
    aten._fft_r2c.default: _fft_r2c,
    aten._fft_c2c.default: _fft_c2c,
    aten._fft_c2r.default: _fft_c2r,
}
_NAMES = {
    str(target).removeprefix("aten.").split(".")[0]
    for target in _TRANSLATIONS
    if target is not operator.getitem
}

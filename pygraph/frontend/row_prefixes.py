"""Which dims declared dynamic a call may be padded along: those whose prefixes every op keeps.

Compiling a program for every size a dynamic dim takes costs an export and a compilation each (seconds),
so a workload of many sizes spends its time compiling, or runs eagerly past PYGRAPH_MAX_VARIANTS. vLLM
pads a batch to the next size it captured, which it may do because it knows its models. pygraph pads only
where it proves, on the program traced with the dims symbolic (`declared_dims`), that padding changes
nothing the caller sees. For a symbol `s`: every tensor whose shape holds `s` holds it in dims of size
`s * c` (`c` free of `s`), or `B` blocks of that where a reshape merged `s` inside another dim, and the
tensor computed with `s = n` is the one computed with `s = m > n` cut to the first `n * c` entries (of
each block) along each such dim; every tensor whose shape does not hold `s` is the same for both. The
inputs' dims are so by construction (the call's entries first, then padding). An op keeps the property
where it computes no entry inside the prefix from one past it and reads `s` only as a size: pointwise ops,
reductions and products over other dims, reshapes that keep `s` outermost in what they merge or merge it
inside as blocks, scans along `s` and causal attention along it (not in blocks). Then each result's prefix
is what the unpadded call returns (results holding `s` in blocks are refused: their cut would be a copy).
The batch dims of most inference models qualify, and so do the lengths of causal models that take no
padding mask. An op pygraph knows no rule for, or one that mixes entries along `s` (a softmax over it, a
sum of everything, a sort, a convolution along it, a write into the model's state), refuses `s`, naming
the op and its line, once a value it computes reaches a result, a write of state or a check: calls then
compile for their own sizes as before.

Size 1 is never padded: torch.export traces dims as at least 2 (its 0/1 specialization), so the symbolic
program says nothing about a call of one entry.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

from .branches import user_frames

aten = torch.ops.aten


@dataclass(frozen=True)
class Padding:
    """Whether calls may be padded along one symbol (`refusal` None) and, for each user output, the dims
    holding it, which a padded call's results are cut along (empty where none)."""

    symbol: str
    outputs: tuple[tuple[int, ...], ...] = ()
    refusal: str | None = None


class _Mixed:
    """A value a padded call computes otherwise than its own call: it may be computed, but not reach a
    result, a write of state or a check."""

    def __init__(self, why: str) -> None:
        self.why = why


class _Size:
    """A number holding `s`: it may only say how large a tensor is."""


_SIZE = _Size()
_SAME: frozenset[int] = frozenset()  # a tensor (or number) that does not depend on `s`
Value = Any  # frozenset[int] (a tensor's dims holding `s`), _Mixed, _Size, or a tuple of them


def paddable(program: torch.export.ExportedProgram, symbols: list[str]) -> dict[str, Padding]:
    """For each of `symbols` (names of the symbols in `program`'s user inputs), whether calls may be padded
    along it and how their results are cut."""
    found = {str(s): s for n in program.graph.nodes for s in _free_symbols(n.meta.get("val"))}
    return {
        name: _Analysis(found[name]).run(program)
        if name in found
        else Padding(name, (), "not in the program")
        for name in symbols
    }


def _free_symbols(value: Any) -> set[sympy.Symbol]:
    if isinstance(value, torch.Tensor):
        return set().union(*(_free_symbols(size) for size in value.shape))
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return set(value.node.expr.free_symbols)
    return set()


class _Analysis:
    """One walk over the program's nodes, in order, giving each its `Value` for the symbol `s`."""

    def __init__(self, s: sympy.Symbol) -> None:
        self.s = s
        self.values: dict[torch.fx.Node, Value] = {}
        # tensors holding `s` in one dim whose entries are their own index along it (`arange(s)` and views
        # that add unit dims or broadcast it): indices that read each row where it is (`x[arange(b), i]`)
        self.positions: set[torch.fx.Node] = set()
        # dims holding `s` in blocks: a dim of size `B * s * c` whose entries run through `B` blocks of
        # `s * c`, the first `n * c` of each in the prefix (a reshape merging `s` inside another dim, as
        # `nn.MultiheadAttention` folds the batch into rows of each position); by node, {dim: B} for the
        # dims with B > 1 (a list of them for a node with several results)
        self.blocks: dict[torch.fx.Node, Any] = {}

    def run(self, program: torch.export.ExportedProgram) -> Padding:
        kinds = {spec.arg.name: spec.kind for spec in program.graph_signature.input_specs}
        for node in program.graph.nodes:
            if node.op == "placeholder":
                self.values[node] = self.placeholder(node, kinds.get(node.name))
                if isinstance(self.values[node], _Mixed):  # (padding would pad it, read or not)
                    return Padding(str(self.s), (), self.values[node].why)
            elif node.op == "call_function":
                self.values[node] = self.call(node)
            elif node.op == "output":
                return self.outputs(program, node)
        raise AssertionError("a graph without an output node")

    def holds(self, value: Any) -> bool:
        return self.s in _free_symbols(value)

    def dims(self, tensor: torch.Tensor) -> frozenset[int] | _Mixed:
        """The dims of `tensor` holding `s`, each of size `s` times a factor free of it."""
        held = frozenset(d for d, size in enumerate(tensor.shape) if self.holds(size))
        for d in held:
            size = tensor.shape[d].node.expr
            try:
                linear = size.subs(self.s, 0) == 0 and self.s not in sympy.diff(size, self.s).free_symbols
            except Exception:  # (torch's own functions of sizes: FloorDiv, Mod)
                linear = False
            if not linear:
                return _Mixed(f"a size {size} that is not {self.s} times a number")
        return held

    def placeholder(self, node: torch.fx.Node, kind: InputKind | None) -> Value:
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor):
            return _SIZE if self.holds(value) else _SAME
        dims = self.dims(value)
        if dims and kind != InputKind.USER_INPUT:
            return _Mixed(f"the model's tensor {node.name} is sized by {self.s}")
        return dims

    def call(self, node: torch.fx.Node) -> Value:
        if node.target is operator.getitem:
            whole, blocks = self.values[node.args[0]], self.blocks.get(node.args[0])
            if isinstance(blocks, list) and blocks[node.args[1]]:
                self.blocks[node] = blocks[node.args[1]]
            return whole[node.args[1]] if isinstance(whole, tuple) else whole
        arguments = _arguments(node)
        values = {name: self.value_of(a) for name, a in arguments.items()}
        leaves = _leaves(values.values())
        mixed = next((v for v in leaves if isinstance(v, _Mixed)), None)
        if mixed is not None:
            return mixed
        result = node.meta.get("val")
        target, where = node.target, _where(node)
        if not any(v is _SIZE or (isinstance(v, frozenset) and v) for v in leaves):
            return self.result(result, f"{target}{where}", touched=False)
        if not isinstance(target, torch._ops.OpOverload):
            if isinstance(result, (torch.SymInt, torch.SymFloat, torch.SymBool)):  # arithmetic on sizes
                return _SIZE if self.holds(result) else _SAME
            return _Mixed(f"{getattr(target, '__name__', target)}{where} reads {self.s}")
        name = target.overloadpacket.__name__ if target.namespace == "aten" else str(target)
        sizes = _SIZE_ARGUMENTS.get(name, frozenset())
        for argument, value in values.items():
            if argument not in sizes and any(v is _SIZE for v in _leaves([value])):
                return _Mixed(f"{target}{where} reads the size {self.s} as a number (its {argument})")
        rule = _pointwise if torch.Tag.pointwise in target.tags else _RULES.get(name)
        if rule is None:
            return _Mixed(f"{target}{where} (pygraph knows no rule for how it treats {self.s})")
        why = rule(self, node, arguments, values)
        if why is not None:
            return _Mixed(f"{target}{where} {why}")
        value = self.result(result, f"{target}{where}", touched=name not in _READS_SIZES_ONLY)
        if node not in self.blocks:  # (a reshape places its own)
            blocks = self.carried_blocks(result, value, arguments)
            if isinstance(blocks, _Mixed):
                return _Mixed(f"{target}{where} {blocks.why}")
            if any(blocks if isinstance(blocks, list) else [blocks]):
                self.blocks[node] = blocks
        if self.is_position(node, name, arguments, value):
            self.positions.add(node)
        return value

    def block(self, tensor: Any, dim: int) -> sympy.Expr:
        """The blocks `dim` of the tensor `tensor` (an FX node) holds `s` in (see `blocks`)."""
        blocks = self.blocks.get(tensor)
        return blocks.get(dim, sympy.Integer(1)) if isinstance(blocks, dict) else sympy.Integer(1)

    def carried_blocks(self, result: Any, value: Value, arguments: dict[str, Any]) -> Any:
        """The blocks of each dim of `result` holding `s`: those of the operands' dims of the same size
        (an op that keeps a dim keeps its blocks; one that makes a dim holding `s`, one block), which must
        agree."""
        if isinstance(result, (tuple, list)):
            found = [self.carried_blocks(r, v, arguments) for r, v in zip(result, value, strict=True)]
            mixed = next((b for b in found if isinstance(b, _Mixed)), None)
            return mixed if mixed is not None else found
        if not isinstance(result, torch.Tensor) or not isinstance(value, frozenset):
            return {}
        operands = [
            (a, k)
            for a in _leaves(arguments.values())
            if isinstance(a, torch.fx.Node) and isinstance(self.values.get(a), frozenset)
            for k in self.values[a]
        ]
        blocks = {}
        for d in value:
            size = result.shape[d].node.expr
            found = {self.block(a, k) for a, k in operands if _expr(a.meta["val"].shape[k]) == size}
            if len(found) > 1:
                return _Mixed(f"combines entries of {self.s} in blocks of different sizes")
            if found and found != {1}:
                blocks[d] = found.pop()
        return blocks

    def is_position(self, node: torch.fx.Node, name: str, arguments: dict[str, Any], value: Value) -> bool:
        """Whether `node` computes a tensor of positions along `s` (see `positions`)."""
        if not (isinstance(value, frozenset) and len(value) == 1):
            return False
        if name == "arange":
            return arguments.get("start", 0) == 0 and arguments.get("step", 1) == 1
        source = arguments.get("self")
        if source not in self.positions or name not in _KEEPS_POSITIONS:
            return False
        if name in ("view", "_unsafe_view", "reshape"):  # (only where it adds or drops unit dims)
            sizes = [n for n in node.meta["val"].shape if n != 1]
            return sizes == [n for n in source.meta["val"].shape if n != 1]
        if name == "_to_copy":
            return not node.meta["val"].dtype.is_floating_point
        return name != "slice" or (arguments.get("start", 0) == 0 and arguments.get("step", 1) == 1)

    def value_of(self, argument: Any) -> Value:
        if isinstance(argument, torch.fx.Node):
            return self.values[argument]
        if isinstance(argument, (list, tuple)):
            return tuple(self.value_of(a) for a in argument)
        return _SAME

    def result(self, result: Any, op: str, touched: bool) -> Value:
        """The value of `op`'s result from its shape: a result without `s` computed from values holding it
        is the padded call's own, unless the op reads only their sizes (`touched` False)."""
        if isinstance(result, (tuple, list)):
            return tuple(self.result(r, op, touched) for r in result)
        if not isinstance(result, torch.Tensor):
            return _SIZE if self.holds(result) else _SAME
        dims = self.dims(result)
        if isinstance(dims, _Mixed):
            return _Mixed(f"{op} gives {dims.why}")
        if touched and dims == _SAME:
            return _Mixed(f"{op} computes a result without {self.s} from values holding it")
        return dims

    def outputs(self, program: torch.export.ExportedProgram, node: torch.fx.Node) -> Padding:
        symbol = str(self.s)
        users = {s.arg.name for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
        cuts: list[tuple[int, ...]] = []
        for spec, arg in zip(program.graph_signature.output_specs, node.args[0], strict=True):
            value = self.value_of(arg)
            if isinstance(value, _Mixed):
                return Padding(symbol, (), value.why)
            if value is _SIZE:
                return Padding(symbol, (), f"a result is the size {self.s} itself")
            if spec.kind != OutputKind.USER_OUTPUT:
                if value:
                    return Padding(
                        symbol, (), f"the model writes {spec.target} from values sized by {self.s}"
                    )
                continue
            if value and isinstance(spec.arg, TensorArgument) and _views(arg, users):
                return Padding(symbol, (), "a result is a view of an input, which padding copies")
            if isinstance(self.blocks.get(arg), dict):
                return Padding(symbol, (), f"a result holds {self.s} in blocks (a cut would be a copy)")
            cuts.append(tuple(sorted(value)) if isinstance(value, frozenset) else ())
        for check in (n for n in program.graph.nodes if n.target in _CHECKS):
            if any(isinstance(self.value_of(a), _Mixed) for a in check.args):
                return Padding(symbol, (), f"a check{_where(check)} reads values a padded call changes")
        return Padding(symbol, tuple(cuts))


_CHECKS = {aten._assert_scalar.default, aten._assert_async.msg, aten._assert_async.default}


def _arguments(node: torch.fx.Node) -> dict[str, Any]:
    """A node's arguments by schema name, defaults included."""
    if not isinstance(node.target, torch._ops.OpOverload):
        return {str(i): a for i, a in enumerate(node.args)}
    arguments = {}
    for i, spec in enumerate(node.target._schema.arguments):
        if i < len(node.args):
            arguments[spec.name] = node.args[i]
        elif spec.name in node.kwargs:
            arguments[spec.name] = node.kwargs[spec.name]
        elif spec.has_default_value():
            arguments[spec.name] = spec.default_value
    return arguments


def _leaves(values: Any) -> list[Any]:
    out: list[Any] = []
    for value in values:
        out.extend(_leaves(value) if isinstance(value, (tuple, list)) else [value])
    return out


def _expr(size: Any) -> sympy.Expr:
    return size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(int(size))


def _whole(expr: sympy.Expr) -> bool:
    """Whether a quotient of sizes is a whole size (no denominator left)."""
    return sympy.fraction(sympy.cancel(expr))[1] == 1


def _where(node: torch.fx.Node) -> str:
    frames = user_frames(node.meta.get("stack_trace") or "")
    if not frames:
        return ""
    path, line, code = frames[-1]
    return f" at {path}:{line}" + (f" (`{code}`)" if code else "")


def _views(node: Any, users: set[str]) -> bool:
    """Whether `node` is a user input or a chain of views of one."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and _is_view(node.target):
        node = node.args[0]
    return isinstance(node, torch.fx.Node) and node.op == "placeholder" and node.name in users


def _is_view(target: Any) -> bool:
    if not isinstance(target, torch._ops.OpOverload) or not target._schema.arguments:
        return False
    alias = target._schema.arguments[0].alias_info
    return alias is not None and not alias.is_write


# ---- rules ---------------------------------------------------------------------------------------------
# Each takes the analysis, the node, its arguments and their values, and says why the op breaks the
# prefixes along `s`, or None where it keeps them (its result's dims then come from the result's shape).

Rule = Callable[[_Analysis, torch.fx.Node, dict[str, Any], dict[str, Value]], str | None]


def _held(values: dict[str, Value], name: str) -> frozenset[int]:
    value = values.get(name, _SAME)
    return value if isinstance(value, frozenset) else _SAME


def _ndim(arguments: dict[str, Any], name: str) -> int:
    return arguments[name].meta["val"].dim()


def _normalized(dims: Any, ndim: int) -> set[int] | None:
    """`dims` (an int or a list) as non-negative dims; None for all of them (None or an empty list)."""
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return None
    return {d % max(ndim, 1) for d in ([dims] if isinstance(dims, int) else dims)}


def _pointwise(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    return None  # each entry reads the entries of its position (broadcast), or its own sizes


def _along(dim_argument: str, tensors: tuple[str, ...] = ("self",), what: str = "works") -> Rule:
    """An op working along the dims `dim_argument` names (all of them where it names none): none of them
    may hold `s` in `tensors`."""

    def rule(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
        for name in (t for t in tensors if t in arguments):
            held = _held(values, name)
            along = _normalized(arguments.get(dim_argument), _ndim(arguments, name))
            if held and (along is None or held & along):
                return f"{what} along {analysis.s}"
        return None

    return rule


def _cat(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    dim = arguments["dim"]
    for tensor, value in zip(arguments["tensors"], values["tensors"], strict=True):
        if isinstance(value, frozenset) and dim % max(tensor.meta["val"].dim(), 1) in value:
            return f"concatenates along {analysis.s}"
    return None


def _trailing(count: Callable[[dict[str, Any]], int], fixed: tuple[str, ...] = ()) -> Rule:
    """An op working on each sample's last `count(arguments)` dims (a norm's normalized shape, a pooling's
    spatial dims), whose `fixed` tensors (weights) must not depend on `s`."""

    def rule(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
        name = "input" if "input" in arguments else "self"
        first = _ndim(arguments, name) - count(arguments)
        if any(d >= first for d in _held(values, name)):
            return f"works along {analysis.s}"
        if any(_held(values, f) for f in fixed):
            return f"takes weights sized by {analysis.s}"
        return None

    return rule


def _spatial(node_name: str) -> Callable[[dict[str, Any]], int]:
    rank = int(re.search(r"(\d)d", node_name).group(1))
    return lambda arguments: rank


def _products(contracted: Callable[[dict[str, Any]], dict[str, list[int]]]) -> Rule:
    """A product: no contracted dim may hold `s` (each entry of the result sums along all of it)."""

    def rule(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
        for name, dims in contracted(arguments).items():
            ndim = _ndim(arguments, name)
            if _held(values, name) & {d % ndim for d in dims}:
                return f"sums products along {analysis.s}"
        return None

    return rule


def _matmul_contracted(arguments: dict[str, Any]) -> dict[str, list[int]]:
    return {"self": [-1], "other": [-2 if _ndim(arguments, "other") >= 2 else 0]}


def _einsum(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    equation = arguments["equation"].replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    if "..." in equation or not arrow:
        return "(pygraph reads only einsums with named output letters and no ellipsis)"
    for letters, value in zip(inputs.split(","), values["tensors"], strict=True):
        if isinstance(value, frozenset) and any(letters[d] not in output for d in value):
            return f"sums products along {analysis.s}"
    return None


def _attention(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    """Query rows and the batch and head dims keep prefixes; keys only under the causal mask (query `i`
    reads keys up to `i`), the head size never."""
    if arguments.get("dropout_p", 0.0):
        return f"drops out attention weights sized by {analysis.s}"
    mask = arguments.get("attn_mask", arguments.get("attn_bias"))
    causal = bool(arguments.get("is_causal", False)) and mask is None
    for name in ("query", "key", "value"):
        ndim, held = _ndim(arguments, name), _held(values, name)
        if ndim - 1 in held:
            return f"works along {analysis.s} in the head size"
        if name != "query" and ndim - 2 in held and not causal:
            return f"attends to keys sized by {analysis.s} without a causal mask"
        if causal and ndim - 2 in held and analysis.block(arguments[name], ndim - 2) != 1:
            return f"masks causally along {analysis.s} held in blocks"
    name = "attn_mask" if "attn_mask" in arguments else "attn_bias"
    if mask is not None and _ndim(arguments, name) - 1 in _held(values, name):
        return f"attends to keys sized by {analysis.s}"
    return None


def _convolution(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    batched = _ndim(arguments, "input") == _ndim(arguments, "weight")
    if _held(values, "input") - ({0} if batched else set()):
        return f"convolves along {analysis.s}"
    if _held(values, "weight") or _held(values, "bias"):
        return f"takes weights sized by {analysis.s}"
    return None


def _batch_norm(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    if arguments.get("training", False):
        return f"computes statistics along {analysis.s}"
    return f"works along {analysis.s} as channels" if 1 in _held(values, "input") else None


def _fixed(*names: str) -> Rule:
    """An op whose tensors `names` (a table, boundaries, a set to test against) must not depend on `s`."""

    def rule(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
        return f"reads a table sized by {analysis.s}" if any(_held(values, n) for n in names) else None

    return rule


def _from_start(start_argument: str) -> Rule:
    """A slice or narrowing of a dim holding `s` keeps its prefix only from the dim's start (one of another
    dim up to a size holding `s`, a table of positions cut to the length, is a prefix of it)."""

    def rule(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
        dim = arguments["dim"] % _ndim(arguments, "self")
        if dim not in _held(values, "self"):
            return None
        if arguments.get(start_argument) not in (None, 0) or arguments.get("step", 1) != 1:
            return f"cuts {analysis.s} from other than its start"
        cut = node.meta["val"].shape[dim] != arguments["self"].meta["val"].shape[dim]
        if cut and analysis.block(arguments["self"], dim) != 1:
            return f"cuts {analysis.s} held in blocks"
        return None

    return rule


def _in_order(dims: Callable[[dict[str, Any]], list[int]], what: str) -> Rule:
    """An op whose result depends on the entries' positions along the dims `dims(arguments)` gives (a scan
    reads the entries before each, a triangle compares positions): none of them may hold `s` in blocks,
    whose entries' positions differ between sizes."""

    def rule(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
        ndim = _ndim(arguments, "self")
        for d in (d % ndim for d in dims(arguments)):
            if d in _held(values, "self") and analysis.block(arguments["self"], d) != 1:
                return f"{what} along {analysis.s} held in blocks"
        return None

    return rule


def _repeat(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    repeats = list(arguments["repeats"])
    lead = len(repeats) - _ndim(arguments, "self")
    if any(repeats[lead + d] != 1 for d in _held(values, "self")):
        return f"repeats {analysis.s}'s entries in a cycle"
    return None


def _reshape(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    """A reshape keeps prefixes where each dim holding `s` lands on a result dim that holds it with as many
    blocks before each of its own (the dims before it and its blocks hold as many entries in the input as
    in the result): `s` outermost in what it merges or splits, or inside a merge as blocks (`[t, s, e] ->
    [t * s, e]`: `t` blocks of `s` rows), which the dims it merges back into again drop."""
    source, result = arguments["self"].meta["val"].shape, node.meta["val"].shape
    blocks = {}
    for d in _held(values, "self"):
        outer = _product(source[:d]) * analysis.block(arguments["self"], d)
        for j in range(len(result)):
            if not analysis.holds(result[j]):
                continue
            inner = sympy.cancel(outer / _product(result[:j]))
            if analysis.s not in inner.free_symbols and _whole(inner) and _whole(_expr(result[j]) / inner):
                if inner != 1:
                    blocks[j] = inner
                break
        else:
            return f"reshapes {analysis.s}'s entries into another order"
    analysis.blocks[node] = blocks
    return None


def _product(sizes: Any) -> sympy.Expr:
    out = sympy.Integer(1)
    for size in sizes:
        out *= _expr(size)
    return sympy.expand(out)


def _index(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    """Reading by index tensors: an indexed dim of the source may hold `s` only where its index is the
    positions along `s` (`mask[arange(batch)[:, None], j]` reads each row where it is); the indices' own
    dims may hold it (each entry of the result reads the source at its own indices)."""
    held = _held(values, "self")
    for d, index in enumerate(arguments["indices"]):
        if index is None or d not in held:
            continue
        if index not in analysis.positions or analysis.block(arguments["self"], d) != 1:
            return f"indexes {analysis.s} by data"
    return None


def _index_put(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    """Writing by index tensors: an indexed dim holding `s` only by the positions along it (each row
    writes into its own row), other indices not sized by `s` (one past the prefix writes into it)."""
    held, indices = _held(values, "self"), values["indices"]
    for d, index in enumerate(arguments["indices"]):
        if index is None:
            continue
        if d in held and (index not in analysis.positions or analysis.block(arguments["self"], d) != 1):
            return f"writes by indices sized by {analysis.s}"
        if d not in held and isinstance(indices[d], frozenset) and indices[d]:
            return f"writes by indices sized by {analysis.s}"
    return None


def _scatter(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    """Scattering along a dim: the index and the source may hold `s` only in the destination's dims that
    hold it (each row writes into its own row), never along the scattered dim."""
    held = _held(values, "self")
    dim = arguments["dim"] % _ndim(arguments, "self")
    others = [_held(values, n) for n in ("index", "src")]
    if dim in held or any(dim in o or not o <= held for o in others):
        return f"scatters along {analysis.s}"
    return None


def _scatter_into(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    held = _held(values, "self")
    dim = arguments.get("dim", 0) % _ndim(arguments, "self")
    if dim in held or not _held(values, "src") <= held:
        return f"writes along {analysis.s}"
    return None


def _random(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    return f"draws random numbers sized by {analysis.s}"


def _dropout(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    return _random(analysis, node, arguments, values) if arguments.get("train", False) else None


def _one_hot(analysis: _Analysis, node: Any, arguments: dict, values: dict) -> str | None:
    return "counts its classes from the data" if arguments.get("num_classes", -1) < 0 else None


_POOLINGS = [
    f"{kind}{rank}d{suffix}"
    for rank in (1, 2, 3)
    for kind, suffix in [
        ("max_pool", ""),
        ("max_pool", "_with_indices"),
        ("avg_pool", ""),
        ("adaptive_avg_pool", ""),
        ("_adaptive_avg_pool", ""),
        ("adaptive_max_pool", ""),
        ("upsample_nearest", ""),
        ("_upsample_nearest_exact", ""),
        ("reflection_pad", ""),
        ("replication_pad", ""),
    ]
] + [
    "upsample_linear1d",
    "upsample_bilinear2d",
    "upsample_bicubic2d",
    "upsample_trilinear3d",
    "_upsample_bilinear2d_aa",
    "_upsample_bicubic2d_aa",
]

# ops making a tensor of the sizes they are given, and those reading only the sizes of their tensors: a
# result without `s` is the same for every size (`_READS_SIZES_ONLY`)
_FACTORIES = [
    "zeros",
    "ones",
    "empty",
    "full",
    "new_zeros",
    "new_ones",
    "new_empty",
    "new_full",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
]
_READS_SIZES_ONLY = frozenset(
    [
        *_FACTORIES,
        *["sym_size", "sym_numel", "sym_stride", "_assert_tensor_metadata", "arange", "empty_strided"],
    ]
)

_RULES: dict[str, Rule] = {
    # pointwise ops torch does not tag as such, views that move dims, and ops that read only sizes
    **dict.fromkeys(
        [
            *[
                "_to_copy",
                "to",
                "clone",
                "alias",
                "detach",
                "lift_fresh_copy",
                "contiguous",
                "copy",
                "fill",
                "hardswish",
                "log_sigmoid_forward",
            ],
            *[
                "prelu",
                "_prelu_kernel",
                "__and__",
                "__or__",
                "__xor__",
                "__lshift__",
                "__rshift__",
                "masked_fill",
                "where",
                "type_as",
            ],
            *[
                "floor_divide",
                "_conj",
                "resolve_conj",
                "resolve_neg",
                "complex",
                "polar",
                "outer",
                "view_as_real",
                "view_as_complex",
            ],
            *["expand", "expand_as", "permute", "transpose", "t", "unsqueeze", "squeeze", "movedim"],
            *_READS_SIZES_ONLY,
        ],
        _pointwise,
    ),
    **dict.fromkeys(
        ["view", "_unsafe_view", "reshape", "_reshape_alias", "view_copy", "flatten", "unflatten"], _reshape
    ),
    "slice": _from_start("start"),
    "narrow": _from_start("start"),
    "repeat": _repeat,
    "cat": _cat,
    "unfold": _along("dimension"),
    **dict.fromkeys(
        [
            *[
                "select",
                "unbind",
                "split",
                "split_with_sizes",
                "chunk",
                "index_select",
                "gather",
                "diff",
                "glu",
                "repeat_interleave",
            ],
            *[
                "softmax",
                "_softmax",
                "log_softmax",
                "_log_softmax",
                "_safe_softmax",
                "sort",
                "argsort",
                "topk",
                "kthvalue",
                "median",
            ],
            *["nanmedian", "mode"],
        ],
        _along("dim"),
    ),
    **dict.fromkeys(["flip", "roll"], _along("dims")),
    **dict.fromkeys(["_fft_r2c", "_fft_c2c", "_fft_c2r"], _along("dim", what="transforms")),
    # scans: each entry reads those before it, which are in the prefix where it is
    **dict.fromkeys(
        ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"], _in_order(lambda a: [a["dim"]], "scans")
    ),
    **dict.fromkeys(["tril", "triu"], _in_order(lambda a: [-2, -1], "compares positions")),
    **dict.fromkeys(
        [
            *[
                "sum",
                "mean",
                "amax",
                "amin",
                "max",
                "min",
                "argmax",
                "argmin",
                "var",
                "var_mean",
                "std",
                "std_mean",
                "prod",
                "any",
                "all",
            ],
            *["logsumexp", "nansum", "count_nonzero", "norm", "aminmax"],
        ],
        _along("dim", ("self", "input"), "reduces"),
    ),
    **dict.fromkeys(
        ["layer_norm", "native_layer_norm"],
        _trailing(lambda a: len(a["normalized_shape"]), ("weight", "bias")),
    ),
    "rms_norm": _trailing(lambda a: len(a["normalized_shape"]), ("weight",)),
    **dict.fromkeys(
        ["group_norm", "native_group_norm"], _trailing(lambda a: _ndim(a, "input") - 1, ("weight", "bias"))
    ),
    "batch_norm": _batch_norm,
    **{name: _trailing(_spatial(name)) for name in _POOLINGS},
    **dict.fromkeys(["constant_pad_nd", "pad"], _trailing(lambda a: len(a["pad"]) // 2)),
    **dict.fromkeys(["pixel_shuffle", "pixel_unshuffle"], _trailing(lambda a: 3)),
    **dict.fromkeys(
        [
            "convolution",
            "_convolution",
            "conv1d",
            "conv2d",
            "conv3d",
            "conv_transpose1d",
            "conv_transpose2d",
            "conv_transpose3d",
        ],
        _convolution,
    ),
    "mm": _products(lambda a: {"self": [1], "mat2": [0]}),
    "_int_mm": _products(lambda a: {"self": [1], "mat2": [0]}),
    "addmm": _products(lambda a: {"mat1": [1], "mat2": [0]}),
    "bmm": _products(lambda a: {"self": [2], "mat2": [1]}),
    "baddbmm": _products(lambda a: {"batch1": [2], "batch2": [1]}),
    "addbmm": _products(lambda a: {"batch1": [0, 2], "batch2": [0, 1]}),
    "matmul": _products(_matmul_contracted),
    "linear": _products(lambda a: {"input": [-1], "weight": [1]}),
    "mv": _products(lambda a: {"self": [1], "vec": [0]}),
    "addmv": _products(lambda a: {"mat": [1], "vec": [0]}),
    "dot": _products(lambda a: {"self": [0], "tensor": [0]}),
    "einsum": _einsum,
    **dict.fromkeys(
        [
            "scaled_dot_product_attention",
            "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_flash_attention_for_cpu",
            "_scaled_dot_product_efficient_attention",
            "_scaled_dot_product_cudnn_attention",
        ],
        _attention,
    ),
    "embedding": _fixed("weight"),
    **dict.fromkeys(["index", "_unsafe_index"], _index),
    **dict.fromkeys(["index_put", "_unsafe_index_put"], _index_put),
    **dict.fromkeys(["scatter", "scatter_add", "scatter_reduce"], _scatter),
    **dict.fromkeys(["slice_scatter", "select_scatter"], _scatter_into),
    "bucketize": _fixed("boundaries"),
    "searchsorted": _fixed("sorted_sequence"),
    "isin": _fixed("test_elements"),
    "one_hot": _one_hot,
    "dropout": _dropout,
    **dict.fromkeys(
        [
            *[
                "rand",
                "randn",
                "randint",
                "rand_like",
                "randn_like",
                "randint_like",
                "randperm",
                "bernoulli",
                "normal",
                "uniform",
            ],
            *[
                "exponential",
                "geometric",
                "log_normal",
                "cauchy",
                "multinomial",
                "native_dropout",
                "rrelu_with_noise",
                "poisson",
            ],
            "_standard_gamma",
        ],
        _random,
    ),
}

# views and copies of a tensor of positions that keep it one (`is_position`)
_KEEPS_POSITIONS = frozenset(
    ["unsqueeze", "slice", "expand", "alias", "clone", "view", "_unsafe_view", "reshape", "_to_copy"]
)

# the arguments in which an op may take a number holding `s` (a size): any other reads it as a value
_SIZE_ARGUMENTS: dict[str, frozenset[str]] = {
    **dict.fromkeys(["view", "_unsafe_view", "view_copy", "expand", *_FACTORIES], frozenset({"size"})),
    "reshape": frozenset({"shape"}),
    **dict.fromkeys(
        ["_reshape_alias", "empty_strided", "_assert_tensor_metadata"], frozenset({"size", "stride"})
    ),
    "unflatten": frozenset({"sizes"}),
    "arange": frozenset({"end"}),
    "slice": frozenset({"end"}),
    "narrow": frozenset({"length"}),
    "repeat": frozenset({"repeats"}),
}

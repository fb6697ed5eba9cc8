"""Results a program need not compute: constants of the trace, views of the inputs, of the model's state and
of other results.

A model may return what the trace fixed (None, `x.shape[0]`, a string) and, as eager does, tensors that
alias its arguments or its state: `return x, f(x)`, `x[1:]`, `self.weight`, or the input it wrote in place
(`x.add_(1); return x`). A program computing those would copy them into fresh outputs: equal values, but
not the input's memory eager returns (a write into the result would not reach the input). They leave the
program instead, and each call rebuilds them from what it was given, as AOTAutograd regenerates aliases of
inputs: the constant, or the input or state tensor (after the call's own writes to it, which go into its
bytes) through the same chain of view ops; a result that is another result, or a view of one (`return y,
y` or `y, y.t()`), is that result or its view, as in eager. Aliases of lifted constants are computed, since
eager makes a new tensor for them in every call.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.export.graph_signature import (
    ConstantArgument,
    InputKind,
    OutputKind,
    SymBoolArgument,
    SymFloatArgument,
    SymIntArgument,
    TensorArgument,
)

_WRITES = {
    OutputKind.USER_INPUT_MUTATION: "input",
    OutputKind.BUFFER_MUTATION: "buffer",
    OutputKind.PARAMETER_MUTATION: "parameter",
}


@dataclass(frozen=True)
class Regenerated:
    """A result rebuilt by each call at `position` among the model's flat results: `constant`, or the
    tensor `source` names (`("input", index)` among the plan's inputs, `("result", position)` among the
    model's results, `("parameter" | "buffer", name)`) through `views` (op, other arguments, keyword arguments), applied in order."""

    position: int
    constant: Any = None
    source: tuple[str, int | str] | None = None
    views: tuple[tuple[Any, tuple[Any, ...], dict[str, Any]], ...] = ()

    def describe(self, input_names: Sequence[str]) -> str:
        """`view of input 'x'`, `the parameter 'fc.weight'`, `result 5`, `the constant None`."""
        if self.source is None:
            return f"the constant {self.constant!r}"
        role, key = self.source
        what = (
            f"input '{input_names[key]}'"
            if role == "input"
            else f"{role} {key if role == 'result' else repr(key)}"
        )
        return f"view of {what}" if self.views else ("" if role == "result" else "the ") + what

    def value(self, inputs: Sequence[Any], results: list[Any], model: torch.nn.Module) -> Any:
        if self.source is None:
            return self.constant
        role, key = self.source
        if role in ("input", "result"):
            value = (inputs if role == "input" else results)[key]
        else:
            value = model.get_parameter(key) if role == "parameter" else model.get_buffer(key)
        for op, args, kwargs in self.views:
            value = op(value, *args, **kwargs)
        return value


def drop_regenerated_outputs(
    ep: torch.export.ExportedProgram,
) -> tuple[tuple[Regenerated, ...], tuple[Regenerated, ...]]:
    """Removes from `ep`'s results the constants of the trace and the views of inputs and state, and gives
    how each call rebuilds them, in the order of their positions; and, kept in the program, the results
    eager returns as views of an input or of the state at a place the data decide (`state[i.item()]`): the
    program computes them, so the caller gets copies (the place is known on the host only once the call
    has run), which neither see later writes to their source nor write into it."""
    (output,) = ep.graph.find_nodes(op="output")
    values, specs = list(output.args[0]), ep.graph_signature.output_specs
    sources = _sources(ep)
    user = [i for i, spec in enumerate(specs) if spec.kind == OutputKind.USER_OUTPUT]
    regenerated: dict[int, Regenerated] = {}
    copied = []
    for position, i in enumerate(user):
        if isinstance(specs[i].arg, ConstantArgument):
            regenerated[i] = Regenerated(position, constant=specs[i].arg.value)
        elif isinstance(values[i], torch.fx.Node) and (chain := _view_chain(values[i], sources)) is not None:
            view = Regenerated(position, source=chain[0], views=chain[1])
            if chain[2]:
                copied.append(view)
            else:
                regenerated[i] = view
    # Results that are another result or views of one (`return y, y`, `return y, y.t()`): rebuilt from the
    # result that is no view of another, at its first position.
    computed = {position: values[i] for position, i in enumerate(user) if i not in regenerated}
    first: dict[torch.fx.Node, tuple[str, int]] = {}
    for position, node in computed.items():
        first.setdefault(node, ("result", position))
    bases = {
        node: key
        for node, key in first.items()
        if _alias(node, {n: k for n, k in first.items() if n is not node}) is None
    }
    for position, i in enumerate(user):
        if position in computed and bases.get(values[i]) != ("result", position):
            alias = _alias(values[i], {n: k for n, k in bases.items() if k != ("result", position)})
            if alias is not None:
                regenerated[i] = Regenerated(position, source=alias[0], views=alias[1])
    output.args = (tuple(v for i, v in enumerate(values) if i not in regenerated),)
    ep.graph_signature.output_specs[:] = [spec for i, spec in enumerate(specs) if i not in regenerated]
    return tuple(sorted(regenerated.values(), key=lambda result: result.position)), tuple(copied)


# The dtype a number result travels in: its Python type's values exactly (a float is a double)
_NUMBER_DTYPES = {SymBoolArgument: torch.bool, SymIntArgument: torch.int64, SymFloatArgument: torch.float64}


def numbers_as_tensors(ep: torch.export.ExportedProgram) -> tuple[int, ...]:
    """Makes each result that is a Python number computed from the data (`return y, (y > 0).all().item()`)
    a 0-d tensor of the program, of a dtype that holds the number exactly; gives their positions among the
    model's flat results (constants included), where each call turns the tensor back into the number
    (`Tensor.item`: a wait for the GPU, as eager's `.item()` is)."""
    (output,) = ep.graph.find_nodes(op="output")
    values, specs = list(output.args[0]), ep.graph_signature.output_specs
    user = [i for i, spec in enumerate(specs) if spec.kind == OutputKind.USER_OUTPUT]
    positions, items = [], []
    for position, i in enumerate(user):
        dtype = _NUMBER_DTYPES.get(type(specs[i].arg))
        if dtype is None:
            continue
        number = values[i]
        if number.target is torch.ops.aten.item.default:  # (the tensor it reads holds the number exactly)
            tensor = number.args[0]
            items.append(number)
        else:  # (Python arithmetic on numbers read from the data)
            with ep.graph.inserting_before(output):
                tensor = ep.graph.call_function(
                    torch.ops.aten.scalar_tensor.default, (number,), {"dtype": dtype}
                )
            with torch._guards.detect_fake_mode([n.meta.get("val") for n in ep.graph.nodes]):
                tensor.meta["val"] = torch.empty((), dtype=dtype)
        values[i] = tensor
        specs[i] = dataclasses.replace(specs[i], arg=TensorArgument(name=tensor.name))
        positions.append(position)
    output.args = (tuple(values),)
    for item in dict.fromkeys(items):  # (one that only gave a result: torch-mlir imports no bool `item`)
        if not item.users:
            ep.graph.erase_node(item)
    return tuple(positions)


def _sources(ep: torch.export.ExportedProgram) -> dict[torch.fx.Node, tuple[str, int | str]]:
    """The nodes whose value is an input's or the model's state's own memory once the call is done: the
    placeholders of inputs, parameters and buffers that the program does not write, and the values written
    into those it does (which the plan writes into their bytes)."""
    nodes = {node.name: node for node in ep.graph.nodes}
    user = [s for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    keys: dict[str, tuple[str, int | str]] = {s.arg.name: ("input", i) for i, s in enumerate(user)}
    for spec in ep.graph_signature.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            keys[spec.arg.name] = ("parameter" if spec.kind == InputKind.PARAMETER else "buffer", spec.target)
    sources = {nodes[name]: key for name, key in keys.items()}
    for spec in ep.graph_signature.output_specs:
        if spec.kind in _WRITES and isinstance(spec.arg, TensorArgument):
            key = (
                keys[spec.target]
                if spec.kind == OutputKind.USER_INPUT_MUTATION
                else (_WRITES[spec.kind], spec.target)
            )
            old = next(node for node, k in sources.items() if k == key)
            del sources[old]  # its value before the write is not what the input holds after the call
            sources[nodes[spec.arg.name]] = key
    return sources


def _alias(
    node: torch.fx.Node, sources: dict[torch.fx.Node, tuple[str, int | str]]
) -> tuple[tuple[str, int | str], tuple[tuple[Any, tuple[Any, ...], dict[str, Any]], ...]] | None:
    """The source `node` is a view of, and the view ops from it; None if `node` computes anything (a view
    whose arguments are computed too: not rebuilt)."""
    chain = _view_chain(node, sources)
    return None if chain is None or chain[2] else chain[:2]


def _view_chain(
    node: torch.fx.Node, sources: dict[torch.fx.Node, tuple[str, int | str]]
) -> tuple[tuple[str, int | str], tuple[tuple[Any, tuple[Any, ...], dict[str, Any]], ...], bool] | None:
    """The source `node` is a view of, the view ops from it, and whether any of their arguments is
    computed; None if `node` computes anything but those arguments."""
    steps, computed = [], False
    while node not in sources:
        if node.op != "call_function":
            return None
        base, *rest = node.args
        if not (node.target is operator.getitem or _is_view(node.target)) or not isinstance(
            base, torch.fx.Node
        ):
            return None
        read: list[torch.fx.Node] = []
        torch.fx.node.map_arg((rest, node.kwargs), read.append)
        computed = computed or bool(read)
        steps.append((_REPLAYED.get(node.target, node.target), tuple(rest), dict(node.kwargs)))
        node = base
    return sources[node], tuple(reversed(steps)), computed


# `view` as traced from a `reshape` of a contiguous example: a call's input of other strides is reshaped as
# eager would (a copy where no view exists), not refused.
_REPLAYED = {torch.ops.aten.view.default: torch.ops.aten.reshape.default}


def _is_view(target: Any) -> bool:
    """An ATen view (`OpOverload.is_view`, as `derived_state.py` reads it: `view`, `slice`, `transpose`,
    `expand`, `split`, ...), except `as_strided`, whose strides and offset are the example's absolute ones."""
    return getattr(target, "is_view", False) and target is not torch.ops.aten.as_strided.default


def describe_results(
    regenerated: tuple[Regenerated, ...], computed: int, input_names: Sequence[str]
) -> list[str]:
    """Per result of the model, in order: `output K` for the program's K-th result, else how each call
    rebuilds it (`dialect.RESULTS`)."""
    rebuilt = {result.position: result.describe(input_names) for result in regenerated}
    outputs = iter(range(computed))
    return [rebuilt[p] if p in rebuilt else f"output {next(outputs)}" for p in range(computed + len(rebuilt))]

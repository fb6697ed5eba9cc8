"""Helpers for rewrites of an exported program's graph (pooling.py, channels_last.py, freeze.py, ...)."""

from __future__ import annotations

import operator
import re

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch.export.graph_signature import InputKind, InputSpec, OutputKind, TensorArgument
from torch.fx.experimental.symbolic_shapes import guard_or_false, guard_or_true
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)
_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)
# the outputs of an exported program that write its state or inputs in place
MUTATIONS = (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION, OutputKind.USER_INPUT_MUTATION)


class UnsupportedError(NotImplementedError):
    """The program holds something pygraph cannot import; the message names the node and its source line."""


def describe_node(node: torch.fx.Node) -> str:
    """`node 'name' (file.py:12)`: the FX node and the innermost frame of the user's code that made it."""
    frames = re.findall(r'File "([^<"][^"]*)", line (\d+)', node.stack_trace or "")  # not <eval_with_key>
    where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "unknown location"
    return f"node '{node.name}' ({where})"


def replace_node(ep: torch.export.ExportedProgram, old: torch.fx.Node, new: torch.fx.Node) -> None:
    """`new` takes `old`'s place, as an operand and as an output of the program, and `old` goes."""
    redirect_uses(ep, old, new)
    ep.graph.erase_node(old)


def redirect_uses(ep: torch.export.ExportedProgram, old: torch.fx.Node, new: torch.fx.Node) -> None:
    """Every use of `old` but `new`'s own becomes a use of `new`, as an operand and as an output of the
    program (the signature names outputs by node)."""
    for user in [u for u in old.users if u is not new]:
        user.replace_input_with(old, new)
    for spec in ep.graph_signature.output_specs:
        if isinstance(spec.arg, TensorArgument) and spec.arg.name == old.name:
            spec.arg = TensorArgument(name=new.name)


def views_as_reshapes(ep: torch.export.ExportedProgram) -> None:
    """Every `view` becomes a `reshape`, after a rewrite that changed strides (NHWC, padded rows): `view`
    needs strides that can express the new shape, which the new ones may not; `reshape` computes the same
    values, as a view where it can and a copy where not."""
    for node in ep.graph.nodes:
        if node.op == "call_function" and node.target in _VIEWS:
            node.target = torch.ops.aten.reshape.default


def propagate_fake_tensors(ep: torch.export.ExportedProgram) -> None:
    """Every node's `meta["val"]` recomputed under the program's fake mode, so that shapes, dtypes and
    the eager layouts the importer annotates follow ATen's rules for the rewritten graph. Under the Python
    dispatcher, as export traces: a composite's C++ kernel takes concrete sizes only, its Python definition
    sizes the data decide (`interpolate` to a size read by `.item()`, ViLT's position embeddings). A number
    the data decide that the trace's checks have since fixed (`u == 2` asserted) stays symbolic: its node
    and the check reading it are imported, where a literal would leave the check nothing to compute."""
    ep.graph_module.recompile()
    placeholders = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"]
    mode = torch._guards.detect_fake_mode(placeholders)
    symbolic = {n: n.meta["val"] for n in ep.graph.nodes if isinstance(n.meta.get("val"), _SYMBOLIC)}
    with enable_python_dispatcher():
        FakeTensorProp(ep.graph_module, mode).propagate_dont_convert_inputs(*placeholders)
    for node, value in symbolic.items():
        if not isinstance(node.meta.get("val"), _SYMBOLIC):
            node.meta["val"] = value
    for node in ep.graph.nodes:
        node.meta.pop("tensor_meta", None)  # export's, from before the rewrite; the importer reads it first


def state_value(ep: torch.export.ExportedProgram, spec: InputSpec) -> torch.Tensor:
    """The tensor behind a parameter, buffer or constant placeholder of `ep`."""
    if spec.kind == InputKind.CONSTANT_TENSOR or (spec.kind == InputKind.BUFFER and not spec.persistent):
        return ep.constants[spec.target].detach()
    return ep.state_dict[spec.target].detach()


def add_constant(ep: torch.export.ExportedProgram, name: str, value: torch.Tensor) -> torch.fx.Node:
    """A new lifted constant `name` holding `value` (its layout kept): a placeholder before the user
    inputs with the fake tensor export keeps in `meta["val"]`, its input spec and its value."""
    graph = ep.graph
    specs = ep.graph_signature.input_specs
    first_input = next((i for i, s in enumerate(specs) if s.kind == InputKind.USER_INPUT), len(specs))
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if first_input < len(specs):
        anchor = next(n for n in placeholders if n.name == specs[first_input].arg.name)
        insertion = graph.inserting_before(anchor)
    else:
        insertion = graph.inserting_after(placeholders[-1])
    with insertion:
        node = graph.placeholder(name)
    node.meta["val"] = placeholders[0].meta["val"].fake_mode.from_tensor(value, static_shapes=True)
    specs.insert(first_input, InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name), name))
    ep.constants[name] = value
    return node


def output_layouts(ep: torch.export.ExportedProgram) -> list[tuple[int, ...] | None]:
    """The strides of each of the program's results as export traced them (None: not a tensor)."""
    return [
        tuple(value.stride())
        if isinstance(value := getattr(node, "meta", {}).get("val"), torch.Tensor)
        else None
        for node in ep.graph.output_node().args[0]
    ]


def keep_output_layouts(ep: torch.export.ExportedProgram, before: list[tuple[int, ...] | None]) -> None:
    """Results of the user's that rewrites left in another layout (NHWC after channels_last.py, a padded
    view after align_matmuls.py) are copied back into the layout eager returns: values alone are not
    enough when the caller goes on with `.view()` or a data pointer."""
    output = ep.graph.output_node()
    results = list(output.args[0])
    changed = False
    for i, (spec, node, strides) in enumerate(
        zip(ep.graph_signature.output_specs, results, before, strict=True)
    ):
        value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        if spec.kind != OutputKind.USER_OUTPUT or strides is None or _same(value, value.stride(), strides):
            continue
        formats = [torch.contiguous_format] + ([torch.channels_last] if value.dim() == 4 else [])
        wanted = next((f for f in formats if _same(value, _strides(value, f), strides)), None)
        if wanted is None:
            continue  # a layout no memory format gives: eager's values, in ATen's layout for the rewrite
        with ep.graph.inserting_before(output):
            results[i] = ep.graph.call_function(
                torch.ops.aten.clone.default, (node,), {"memory_format": wanted}
            )
        spec.arg = TensorArgument(name=results[i].name)
        changed = True
    if changed:
        output.args = (tuple(results), *output.args[1:])
        propagate_fake_tensors(ep)


def _strides(value: torch.Tensor, memory_format: torch.memory_format) -> tuple[int, ...]:
    return torch.empty(value.shape, device="meta", memory_format=memory_format).stride()


def _same(value: torch.Tensor, strides: tuple[int, ...], other: tuple[int, ...]) -> bool:
    """The same layout for `value`'s shape (the stride of a dimension of size 1 does not matter). A size
    or stride the data decides (nonzero's count) is compared without a guard, which export cannot add."""
    return all(
        guard_or_false(a == b)
        for size, a, b in zip(value.shape, strides, other, strict=True)
        if guard_or_true(size != 1)
    )


def written_placeholders(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The placeholders an in-place op of `graph` (export's graph keeps them: `self.calls.add_(1)`) writes,
    directly or through views of them (an op's result aliases the arguments its schema says it does)."""
    base = {node: node for node in graph.find_nodes(op="placeholder")}
    written = set()
    for node in graph.nodes:
        if node.target is operator.getitem and node.args[0] in base:  # one of the views `split` returns
            base[node] = base[node.args[0]]
        if not isinstance(node.target, torch._ops.OpOverload):
            continue
        schema = node.target._schema
        given = [
            *zip(schema.arguments, node.args, strict=False),  # (trailing defaults left out)
            *((a, node.kwargs[a.name]) for a in schema.arguments if a.name in node.kwargs),
        ]
        for argument, value in given:
            if argument.alias_info is None or not isinstance(value, torch.fx.Node) or value not in base:
                continue
            if argument.alias_info.is_write:
                written.add(base[value])
            base[node] = base[value]
    return written

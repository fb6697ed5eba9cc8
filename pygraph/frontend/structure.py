"""Arguments nested in lists, tuples and dicts, and arguments torch.export specializes (None, strings).

torch.export flattens a model's arguments with torch's pytree: the program's inputs are the leaves, in
order (a list of images, as torchvision's detection models take them, is one input per image). Tensor
leaves, and Python numbers (lifted into 0-d tensors, `numbers.py`), are the plan's inputs; None and
strings are baked into the traced program (torch.export guards them), so they must come again as they
were. A call's arguments are flattened the same way, and their structure and those constants checked
against the example's, before the plan sees the tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export.graph_signature import InputKind, TensorArgument

CONSTANT_LEAVES = (type(None), str)  # leaves torch.export specializes the program to


def is_input_leaf(value: Any) -> bool:
    """A leaf the plan takes as an input: a tensor, or a Python number (lifted into a 0-d tensor)."""
    return isinstance(value, (torch.Tensor, bool, int, float))


@dataclass(frozen=True)
class InputStructure:
    """How a call's arguments map onto the plan's inputs where they are not a flat tuple of tensors and
    numbers: their tree, which leaves the plan takes (in order) and the constants the program was traced
    with, each leaf named as the user would write it (`images[1]`, `batch['mask']`)."""

    spec: pytree.TreeSpec
    inputs: tuple[int, ...]
    constants: tuple[tuple[int, Any], ...]
    names: tuple[str, ...]
    # `_gatherer`'s function for the example's tree: pytree's flattening costs microseconds per container,
    # which a decoding step given its cache as a tuple of tuples would pay in every call
    gather: Gather | None = field(default=None, compare=False)

    @staticmethod
    def of(names: list[str], example_inputs: tuple[Any, ...]) -> InputStructure | None:
        """The structure of `example_inputs` (forward's argument `names`); None where each argument is a
        tensor or a number, which the plan takes as they are."""
        if all(is_input_leaf(value) for value in example_inputs):
            return None
        paths, spec = pytree.tree_flatten_with_path(tuple(example_inputs))
        leaf_names = tuple(names[path[0].idx] + pytree.keystr(path[1:]) for path, _ in paths)
        leaves = [value for _, value in paths]
        gather, gathered = _gatherer(tuple(example_inputs)), []
        if gather is not None and not (
            gather(tuple(example_inputs), gathered)
            and len(gathered) == len(leaves)
            and all(a is b for a, b in zip(gathered, leaves, strict=True))
        ):
            gather = None  # (a torch whose pytree orders or counts leaves otherwise: pytree's way only)
        return InputStructure(
            spec,
            tuple(i for i, leaf in enumerate(leaves) if is_input_leaf(leaf)),
            tuple((i, leaf) for i, leaf in enumerate(leaves) if not is_input_leaf(leaf)),
            leaf_names,
            gather,
        )

    def flatten(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The leaves of `args` the plan takes; a different structure, or a constant that differs from the
        example's, raises naming the argument."""
        leaves: list[Any] = []
        if self.gather is None or not self.gather(args, leaves):
            leaves, spec = pytree.tree_flatten(args)
            if spec != self.spec:
                raise TypeError(
                    f"the compiled model takes arguments structured as {_describe(self.spec)}, "
                    f"got {_describe(spec)}"
                )
        for i, value in self.constants:
            if type(leaves[i]) is not type(value) or leaves[i] != value:
                raise ValueError(
                    f"argument '{self.names[i]}' is {leaves[i]!r:.60}; the model was traced and compiled with "
                    f"{value!r:.60}, which torch.export bakes into the program: compile again for this value"
                )
        return tuple(map(leaves.__getitem__, self.inputs))

    def replaced(self, args: tuple[Any, ...], inputs: dict[int, Any]) -> tuple[Any, ...]:
        """`args` with the plan's inputs at the indices of `inputs` replaced by their values there."""
        leaves, spec = pytree.tree_flatten(args)
        for i, value in inputs.items():
            leaves[self.inputs[i]] = value
        return pytree.tree_unflatten(leaves, spec)


Gather = Callable[[Any, list[Any]], bool]


def _gatherer(example: Any) -> Gather | None:
    """A function that appends the leaves of a value shaped like `example` to a list, in pytree's order, and
    returns False where the value is shaped otherwise (another container type, length or dict keys); for
    trees of tuples, lists and dicts. None where `example` holds another container (a named tuple, a class
    registered with pytree), which pytree flattens alone."""
    kind = type(example)
    if kind not in (tuple, list, dict):
        leaf = isinstance(example, (torch.Tensor, bool, int, float, *CONSTANT_LEAVES))
        return _append if leaf else None
    items = list(example.values()) if kind is dict else list(example)
    children = [_gatherer(item) for item in items]
    if any(child is None for child in children):
        return None
    keys, size, flat = (
        (list(example) if kind is dict else None),
        len(items),
        all(c is _append for c in children),
    )

    def gather(value: Any, leaves: list[Any]) -> bool:
        if type(value) is not kind or len(value) != size or (keys is not None and list(value) != keys):
            return False
        values = value.values() if keys is not None else value
        if flat:
            leaves.extend(values)
            return True
        for child, item in zip(children, values, strict=True):  # noqa: SIM110 (a generator costs per call)
            if not child(item, leaves):
                return False
        return True

    return gather


def _append(value: Any, leaves: list[Any]) -> bool:
    leaves.append(value)
    return True


class _Leaf:
    def __repr__(self) -> str:
        return "value"


def _describe(spec: pytree.TreeSpec) -> str:
    """A tree as `(value, [value, value], {'a': value})`."""
    return repr(pytree.tree_unflatten([_Leaf()] * spec.num_leaves, spec))


def drop_constant_inputs(ep: torch.export.ExportedProgram) -> None:
    """Removes the inputs torch.export specialized the program to (None, strings: placeholders nothing
    reads), so that the program's inputs are the tensors `InputStructure.flatten` gives."""
    placeholders = {node.name: node for node in ep.graph.find_nodes(op="placeholder")}
    specs = ep.graph_signature.input_specs
    for spec in [
        s for s in specs if s.kind == InputKind.USER_INPUT and not isinstance(s.arg, TensorArgument)
    ]:
        node = placeholders.get(spec.arg.name)
        if node is not None:
            if node.users:
                raise AssertionError(f"the constant input {spec.arg.name} is read by {list(node.users)}")
            ep.graph.erase_node(node)
        specs.remove(spec)

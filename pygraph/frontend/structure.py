"""Arguments nested in lists, tuples and dicts, and arguments torch.export specializes (None, strings).

torch.export flattens a model's arguments with torch's pytree: the program's inputs are the leaves, in
order (a list of images, as torchvision's detection models take them, is one input per image). Tensor
leaves, and Python numbers (lifted into 0-d tensors, `numbers.py`), are the plan's inputs; None and
strings are baked into the traced program (torch.export guards them), so they must come again as they
were. A call's arguments are flattened the same way, and their structure and those constants checked
against the example's, before the plan sees the tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    @staticmethod
    def of(names: list[str], example_inputs: tuple[Any, ...]) -> InputStructure | None:
        """The structure of `example_inputs` (forward's argument `names`); None where each argument is a
        tensor or a number, which the plan takes as they are."""
        if all(is_input_leaf(value) for value in example_inputs):
            return None
        paths, spec = pytree.tree_flatten_with_path(tuple(example_inputs))
        leaf_names = tuple(names[path[0].idx] + pytree.keystr(path[1:]) for path, _ in paths)
        leaves = [value for _, value in paths]
        return InputStructure(
            spec,
            tuple(i for i, leaf in enumerate(leaves) if is_input_leaf(leaf)),
            tuple((i, leaf) for i, leaf in enumerate(leaves) if not is_input_leaf(leaf)),
            leaf_names,
        )

    def flatten(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The leaves of `args` the plan takes; a different structure, or a constant that differs from the
        example's, raises naming the argument."""
        leaves, spec = pytree.tree_flatten(args)
        if spec != self.spec:
            raise TypeError(
                f"the compiled model takes arguments structured as {_describe(self.spec)}, got {_describe(spec)}"
            )
        for i, value in self.constants:
            if type(leaves[i]) is not type(value) or leaves[i] != value:
                raise ValueError(
                    f"argument '{self.names[i]}' is {leaves[i]!r:.60}; the model was traced and compiled with "
                    f"{value!r:.60}, which torch.export bakes into the program: compile again for this value"
                )
        return tuple(leaves[i] for i in self.inputs)


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

"""Python numbers among a model's inputs become 0-d tensors before export.

torch.export bakes a Python number argument (`forward(x, temperature: float)`) into the program as a
constant, so a new value would need a new compilation. Passed as a 0-d CPU tensor instead, it is an
input like any other: parameter-indirection gives it a value slot of the per-call table, and each call
writes the new value there. The dtype is the one the number promotes like: a float is the default
dtype (float32), an int int64, a bool bool, so that results keep eager's dtypes.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export.graph_signature import InputKind

from .structure import CONSTANT_LEAVES


def number_dtype(value: bool | int | float) -> torch.dtype:
    if isinstance(value, bool):
        return torch.bool
    return torch.int64 if isinstance(value, int) else torch.get_default_dtype()


def lift_numbers(
    model: torch.nn.Module, names: list[str], example_inputs: tuple[Any, ...]
) -> tuple[tuple[Any, ...], list[str]]:
    """The example inputs with Python numbers as 0-d CPU tensors, also inside lists, tuples and dicts
    (`structure.py`), and the names of those lifted; a leaf that is neither a tensor, a number, None nor a
    string is a TypeError naming the argument."""
    lifted: list[str] = []
    converted = []
    for name, value in zip(names, example_inputs, strict=True):
        paths, spec = pytree.tree_flatten_with_path(value)
        leaves = []
        for path, leaf in paths:
            where = name + pytree.keystr(path)
            if isinstance(leaf, (bool, int, float)):
                lifted.append(where)
                leaf = torch.tensor(leaf, dtype=number_dtype(leaf))
            elif not isinstance(leaf, (torch.Tensor, *CONSTANT_LEAVES)):
                raise TypeError(
                    f"argument '{where}' of {type(model).__name__}.forward is {type(leaf).__name__}; pygraph "
                    "takes tensors and Python numbers (bool, int, float), in lists, tuples and dicts, and "
                    "None and strings as constants"
                )
            leaves.append(leaf)
        converted.append(pytree.tree_unflatten(leaves, spec))
    return tuple(converted), lifted


def promote_as_numbers(ep: torch.export.ExportedProgram, example_inputs: tuple[Any, ...]) -> int:
    """Gives ops that read a lifted number the dtype eager gives them with the Python number; returns how
    many it changed. A Python number promotes below any tensor: `t.clamp(max=y)` of a 0-d bfloat16 `t` is
    bfloat16, but with `y` a 0-d float32 tensor it is float32 (two 0-d tensors promote as equals). Only ops
    whose other tensor operands are all 0-d can differ. Arithmetic on numbers alone (`y * y + 1`) is a
    number too, as in eager's Python. Each op mixing numbers with 0-d tensors has its dtype computed again
    with Python numbers of the same kinds on meta tensors, and where it differs the op's result is cast to
    it (the op computes in the wider dtype and rounds once, as eager's op computes in its opmath type and
    rounds once)."""
    specs = zip(ep.graph.find_nodes(op="placeholder"), ep.graph_signature.input_specs, strict=True)
    placeholders = [node for node, spec in specs if spec.kind == InputKind.USER_INPUT]
    leaves = pytree.tree_leaves(example_inputs)  # (as torch.export flattens them: one input each)
    numbers = {
        node: leaf
        for node, leaf in zip(placeholders, leaves, strict=True)
        if isinstance(leaf, (bool, int, float))
    }
    changed = 0
    for node in list(ep.graph.nodes):
        value = node.meta.get("val")
        if not isinstance(node.target, torch._ops.OpOverload) or not isinstance(value, torch.Tensor):
            continue
        read = [a for a in node.args if isinstance(a, torch.fx.Node)]
        if not any(a in numbers for a in read) or any(a.meta["val"].dim() for a in read if a not in numbers):
            continue
        if value.dim() == 0 and all(a in numbers for a in read):
            numbers[node] = _PYTHON_KIND[_kind(value.dtype)]  # (Python arithmetic in eager)
            continue
        args = [
            numbers[a]
            if a in numbers
            else torch.empty((), dtype=a.meta["val"].dtype, device="meta")
            if isinstance(a, torch.fx.Node)
            else a
            for a in node.args
        ]
        try:
            expected = node.target.overloadpacket(*args, **node.kwargs).dtype
        except Exception:  # (no overload takes the number: the op's own dtype rules stand)
            continue
        if expected == value.dtype:
            continue
        with ep.graph.inserting_after(node):
            cast = ep.graph.call_function(torch.ops.aten._to_copy.default, (node,), {"dtype": expected})
        cast.meta = {**node.meta, "val": value.to(expected)}
        node.replace_all_uses_with(cast, delete_user_cb=lambda user, cast=cast: user is not cast)
        changed += 1
    return changed


_PYTHON_KIND = {"bool": True, "int": 1, "float": 0.5}  # a number of each kind, for its promotion


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    return "float" if dtype.is_floating_point else "int"

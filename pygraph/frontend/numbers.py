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

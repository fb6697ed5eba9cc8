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


def number_dtype(value: bool | int | float) -> torch.dtype:
    if isinstance(value, bool):
        return torch.bool
    return torch.int64 if isinstance(value, int) else torch.get_default_dtype()


def lift_numbers(
    model: torch.nn.Module, names: list[str], example_inputs: tuple[Any, ...]
) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    """The example inputs with Python numbers as 0-d CPU tensors, and the names of those lifted; any other
    input that is not a tensor is a TypeError naming the argument."""
    lifted, tensors = [], []
    for name, value in zip(names, example_inputs, strict=True):
        if isinstance(value, (bool, int, float)):
            lifted.append(name)
            value = torch.tensor(value, dtype=number_dtype(value))
        elif not isinstance(value, torch.Tensor):
            raise TypeError(
                f"argument '{name}' of {type(model).__name__}.forward is {type(value).__name__} ({value!r}); "
                "pygraph takes tensors and Python numbers (bool, int, float)"
            )
        tensors.append(value)
    return tuple(tensors), lifted

"""Python attributes that `forward` changes: a traced program holds what one call saw.

A module may keep state in plain Python attributes and change it in `forward`: a call counter, a flag set
by the first call (RWKV rescales its weights in place once in eval mode and records that it did). Eager's
later calls then compute differently from the first, but torch.export traces one call and puts back the
attributes the module had. `watching_attributes` records, while a trace runs, which plain attributes
(numbers, strings, None, enums, dtypes and containers of those) `forward` changed, from what to what.
The compiled model runs its program only for calls that find the attributes as the trace found them, and
leaves them as the traced call left them, as eager would; a call finding other values is traced again
(`api.py`), as one taking another way through a condition on data is. State kept in a buffer
(`register_buffer`) is part of the program instead and compiles once.

Attributes that hold anything else (tensors, objects) are not compared: torch.export warns about tensors
assigned to attributes, and an object changed inside is not seen.
"""

from __future__ import annotations

import contextlib
import copy
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<absent>"})()
_STANDARD = frozenset(torch.nn.Module().__dict__)  # what every module has: parameters, hooks, `training`
_ATOMS = (type(None), bool, int, float, complex, str, bytes, enum.Enum, torch.dtype, torch.device)


@dataclass(frozen=True)
class AttributeChange:
    """`forward` set `module.name` from `before` to `after` (MISSING: the attribute did not exist)."""

    module: torch.nn.Module
    path: str  # the attribute's path from the model, for messages ("encoder.layers_are_rescaled")
    name: str
    before: Any
    after: Any

    def holds(self) -> bool:
        """Whether the module's attribute has the value the trace started from."""
        return _same(self.module.__dict__.get(self.name, MISSING), self.before)

    def apply(self) -> None:
        """Leaves the attribute as the traced call left it."""
        if self.after is MISSING:
            self.module.__dict__.pop(self.name, None)
        else:
            setattr(self.module, self.name, copy.deepcopy(self.after))

    def describe(self) -> str:
        return f"`{self.path}` ({self.before!r} -> {self.after!r})"


@contextlib.contextmanager
def watching_attributes(model: torch.nn.Module) -> Iterator[list[AttributeChange]]:
    """Yields a list that holds, once the block is done, the plain attributes of `model`'s modules that its
    last `forward` inside the block changed (hooks on `model` compare them before and after each call)."""
    changes: list[AttributeChange] = []
    before: dict[tuple[str, str], Any] = {}

    def snapshot(*_: Any) -> None:
        before.clear()
        before.update(_plain_attributes(model))

    def compare(*_: Any) -> None:
        after = _plain_attributes(model)
        modules = dict(model.named_modules())
        changes.clear()
        for path, name in sorted(before.keys() | after.keys()):
            old, new = before.get((path, name), MISSING), after.get((path, name), MISSING)
            if old is _OPAQUE or new is _OPAQUE or _same(old, new):
                continue
            if path in modules:  # (not a module that forward removed)
                where = f"{path}.{name}" if path else name
                changes.append(AttributeChange(modules[path], where, name, old, new))

    handles = [model.register_forward_pre_hook(snapshot), model.register_forward_hook(compare)]
    try:
        yield changes
    finally:
        for handle in handles:
            handle.remove()


_OPAQUE: Any = object()  # an attribute holding something other than plain values: not compared


def _plain_attributes(model: torch.nn.Module) -> dict[tuple[str, str], Any]:
    """(module path, name) -> a copy of each attribute a module adds to nn.Module's own (`_OPAQUE` where
    it holds something not plain)."""
    return {
        (path, name): copy.deepcopy(value) if _plain(value) else _OPAQUE
        for path, module in model.named_modules()
        for name, value in module.__dict__.items()
        if name not in _STANDARD
    }


def _plain(value: Any) -> bool:
    if isinstance(value, _ATOMS):
        return True
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return False


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (1 and True, or 1 and 1.0, differ: Python code may tell them apart)."""
    if a is b:  # (a float NaN kept is the same object)
        return True
    return a is not MISSING and b is not MISSING and type(a) is type(b) and a == b

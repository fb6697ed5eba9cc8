"""Sizes and conditions computed from the model's own small buffers, read when the model is traced.

A model may keep numbers of its configuration in buffers and compute sizes from them in forward: Encodec's
and Mimi's convolutions hold their stride, kernel size and padding as 0-d int64 buffers and pad each input
by `F.pad(x, (self.padding_total, extra))`, `extra` computed from those buffers and the input's length.
Traced, a buffer is a fake tensor whose value is unknown, so the padding is a size the data decide:
torch.export fails (GuardOnDataDependentSymNode), and so may draft export, which would otherwise read each
such number back to the host in every call.

Where a trace fails so, pygraph traces again knowing the values of the model's small buffers (at most
`_SMALL` elements; `knowing_state_values`): a call of torch whose tensors are all such buffers or results
computed from them alone is computed on their real values, its result a constant of the program (a Python
number where it is one: `.item()`, `bool()`, a comparison read by `max`); and such a 0-d tensor in a list
or slice of numbers (`(self.padding_total, extra)`, `x[..., :end]`), or passed where the ATen op takes
integers (`x.view(2, n)`, `x.topk(n)`), is its number. The program then holds
those values, so it computes what the model would only while the buffers keep them: the compiled model
checks that each buffer whose value it holds (`StateValueRead`) keeps its version, a write in place moving
it, or else its value, and a call finding another value runs a program traced from it, as one finding
another Python attribute does (`api.CompiledModel._another_way`). A trace that writes such a tensor in
place (a counter kept in a buffer) is not kept: that model is traced by draft export, as before. Random
ops are never computed so (their draws move a generator), nor results of more than `_SMALL` elements.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import _disable_current_modes

from ..backend.random import generator_states, restore_generators

_SMALL = 64  # elements: a buffer of this size holds numbers of a configuration, not a table
_IN_PLACE_OPERATORS = {
    f"__i{name}__"
    for name in (
        "add",
        "sub",
        "mul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
    )
} | {"__setitem__"}
_NOT_FOLDED = object()
_INTEGERS = re.compile(r"(Optional\[)?(List\[)?(int|bool)\]?\]?")  # schema types a number may stand for


@dataclass(eq=False)
class StateValueRead:
    """A program holds the value `value` of the buffer `holder.name` (at `path`), which it read as
    `tensor` at version `version`."""

    holder: torch.nn.Module
    name: str
    path: str
    tensor: torch.Tensor
    version: int
    value: torch.Tensor  # on the host

    def holds(self) -> bool:
        """Whether the buffer still holds the value: the same tensor at the same version, or a tensor of
        the same value (then watched from now on: the model was moved, or its buffer replaced)."""
        current = self.holder._buffers.get(self.name)
        if current is self.tensor and current._version == self.version:
            return True
        if not isinstance(current, torch.Tensor) or (current.shape, current.dtype) != (
            self.value.shape,
            self.value.dtype,
        ):
            return False
        if not torch.equal(current.detach().cpu(), self.value):
            return False
        self.tensor, self.version = current, current._version
        return True

    def describe(self) -> str:
        return f"`{self.path}` ({_shown(self.value)})"

    def current(self) -> str:
        current = self.holder._buffers.get(self.name)
        return _shown(current.detach().cpu()) if isinstance(current, torch.Tensor) else repr(current)


@dataclass
class StateValues:
    """The model's small buffers by path (their module and name there), whether the next trace knows
    their values (`known`), and the buffers whose values the last such trace put into its program."""

    buffers: dict[str, tuple[torch.nn.Module, str, torch.Tensor]]
    known: bool = False
    used: set[str] = field(default_factory=set)
    wrote: bool = False  # the last trace wrote a tensor whose value it knew

    @classmethod
    def of(cls, model: torch.nn.Module) -> StateValues:
        buffers = {}
        for path, buffer in model.named_buffers(remove_duplicate=False):
            if buffer.numel() <= _SMALL and not buffer.is_meta:
                prefix, _, name = path.rpartition(".")
                buffers[path] = (model.get_submodule(prefix), name, buffer)
        return cls(buffers)

    def reads(self) -> tuple[StateValueRead, ...]:
        """What the last trace's program holds of the buffers, to check in each call."""
        return tuple(
            StateValueRead(holder, name, path, tensor, tensor._version, tensor.detach().cpu().clone())
            for path, (holder, name, tensor) in sorted(self.buffers.items())
            if path in self.used
        )

    def kept(self, program: torch.export.ExportedProgram) -> bool:
        """Whether `program`, traced knowing the values, may hold them: it writes none of those tensors.
        The writes are read from the functionalized program: the trace's own graph keeps whole the ops
        that write operands their schema does not mark (`aten.batch_norm` updating running statistics)."""
        if self.wrote:
            return False
        if not self.used:
            return True
        written = program.run_decompositions({}).graph_signature.buffers_to_mutate.values()
        return not (set(written) & self.used)


@contextlib.contextmanager
def knowing_state_values(model: torch.nn.Module, values: StateValues | None) -> Iterator[None]:
    """While `model` is traced inside the block, and `values.known`: torch's calls on its small buffers
    and what is computed from them alone are computed on their values (`_KnownValues`). Entered by a
    forward pre-hook, when the module holds the fake tensors of the trace; its forward hook runs before
    those registered earlier (`numbers_promoted_as_python`'s), so that the modes leave in order."""
    if values is None or not values.known:
        yield
        return
    values.used.clear()
    values.wrote = False
    modes: list[_KnownValues] = []

    def enter(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        fakes = {path: module.get_buffer(path) for path in values.buffers}
        mode = _KnownValues(
            values, {id(f): (f, values.buffers[p][2], frozenset((p,))) for p, f in fakes.items()}
        )
        mode.__enter__()
        modes.append(mode)

    def leave(*_: Any) -> None:
        if modes:
            modes.pop().__exit__(None, None, None)

    hooks = [
        model.register_forward_pre_hook(enter),
        model.register_forward_hook(leave, prepend=True, always_call=True),
    ]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()
        leave()


class _KnownValues(TorchFunctionMode):
    """Calls on tensors whose real values the trace knows (`values`: by id, the fake tensor, its real value
    and the buffers it was computed from), computed on those values; see the module's docstring."""

    def __init__(
        self, state: StateValues, values: dict[int, tuple[torch.Tensor, torch.Tensor, frozenset[str]]]
    ) -> None:
        super().__init__()
        self.state = state
        self.values = values

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        leaves = _leaves((args, kwargs))
        known = [isinstance(leaf, torch.Tensor) and id(leaf) in self.values for leaf in leaves]
        if not any(known):  # (most calls of a trace)
            return func(*args, **kwargs)
        if _writes(func, kwargs):
            self.state.wrote = True
            return func(*args, **kwargs)
        if all(
            k or not isinstance(leaf, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool))
            for leaf, k in zip(leaves, known, strict=True)
        ):
            folded = self._computed(func, args, kwargs)
            if folded is not _NOT_FOLDED:
                return folded
        args, kwargs = self._numbers_among_numbers((args, kwargs))
        args, kwargs = self._numbers_where_integers(func, args, kwargs)
        return func(*args, **kwargs)

    def _computed(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """`func` on the real values, its tensors as constants of the trace; `_NOT_FOLDED` where it draws
        random numbers, makes a large tensor or fails."""
        seeds = frozenset().union(*(self.values[id(t)][2] for t in _leaves((args, kwargs)) if _is_tensor(t)))
        real_args, real_kwargs = _mapped((args, kwargs), lambda t: self.values[id(t)][1])
        devices = sorted({t.device for t in _leaves((real_args, real_kwargs)) if _is_tensor(t)}, key=str)
        before = _generator_states(devices)
        try:
            with _disable_current_modes(), torch._C.DisableTorchFunction(), torch.no_grad():
                result = func(*real_args, **real_kwargs)
        except Exception:  # (the traced call then says what is wrong, as it would have)
            return _NOT_FOLDED
        if _drew(before):
            restore_generators(before)
            return _NOT_FOLDED
        tensors = [leaf for leaf in pytree.tree_leaves(result) if isinstance(leaf, torch.Tensor)]
        if any(t.numel() > _SMALL for t in tensors):
            return _NOT_FOLDED
        self.state.used |= seeds
        return pytree.tree_map(lambda leaf: self._constant(leaf, seeds) if _is_tensor(leaf) else leaf, result)

    def _constant(self, real: torch.Tensor, seeds: frozenset[str]) -> torch.Tensor:
        """A constant of the trace holding `real`'s values, known to be `real`."""
        with _disable_current_modes(), torch._C.DisableTorchFunction():
            numbers = real.tolist()
        fake = torch.tensor(numbers, dtype=real.dtype, device=real.device)
        self.values[id(fake)] = (fake, real, seeds)  # (held, so that its id stays its own)
        return fake

    def _numbers_among_numbers(self, tree: Any) -> Any:
        """`tree` with each known 0-d tensor in a list, tuple or slice of numbers (sizes, a slice's bounds)
        as its number."""

        def replaced(node: Any) -> Any:
            if isinstance(node, dict):
                return {k: replaced(v) for k, v in node.items()}
            if not isinstance(node, (list, tuple, slice)):
                return node
            items = [node.start, node.stop, node.step] if isinstance(node, slice) else list(node)
            items = [replaced(item) for item in items]
            if all(not _is_tensor(i) or (id(i) in self.values and i.dim() == 0) for i in items) and any(
                _is_tensor(i) for i in items
            ):
                for i, item in enumerate(items):
                    if _is_tensor(item):
                        _, real, seeds = self.values[id(item)]
                        self.state.used |= seeds
                        with _disable_current_modes(), torch._C.DisableTorchFunction():
                            items[i] = real.item()
            if isinstance(node, slice):
                return slice(*items)
            return type(node)(items) if type(node) in (list, tuple) else node

        return replaced(tree)

    def _numbers_where_integers(self, func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """`args` and `kwargs` with each known 0-d integer or bool tensor that `func` takes where its ATen
        op takes integers (`x.view(2, n)`, `x.narrow(1, 0, n)`, `x.topk(n)`) as its number."""
        name = getattr(func, "__name__", "")
        on_tensor = bool(args) and _is_tensor(args[0])

        def number(key: int | str, value: Any) -> Any:
            if not (_is_tensor(value) and id(value) in self.values and value.dim() == 0):
                return value
            if value.is_floating_point() or value.is_complex() or not _takes_integers(name, key, on_tensor):
                return value
            _, real, seeds = self.values[id(value)]
            self.state.used |= seeds
            with _disable_current_modes(), torch._C.DisableTorchFunction():
                return real.item()

        return (
            tuple(number(i, a) for i, a in enumerate(args)),
            {k: number(k, v) for k, v in kwargs.items()},
        )


@functools.cache
def _takes_integers(name: str, key: int | str, on_tensor: bool) -> bool:
    """Whether every overload of the ATen op `name` that has an argument at `key` (a position, the last list
    taking the rest, or a name) takes integers or bools there, so that a number passed in place of a 0-d
    tensor calls the same overload; `on_tensor`: only overloads whose first argument is a tensor count
    (`aten.split.str` splits strings)."""
    packet = getattr(torch.ops.aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    found = False
    for overload in packet.overloads():
        arguments = getattr(packet, overload)._schema.arguments
        if on_tensor and (not arguments or str(arguments[0].type) != "Tensor"):
            continue
        if isinstance(key, str):
            argument = next((a for a in arguments if a.name == key), None)
        else:
            positional = [a for a in arguments if not a.kwarg_only]
            argument = positional[key] if key < len(positional) else None
            if argument is None and positional and str(positional[-1].type).startswith("List["):
                argument = positional[-1]  # (`x.view(2, n)`: the sizes given one by one)
        if argument is None:
            continue
        if not _INTEGERS.fullmatch(str(argument.type)):
            return False
        found = True
    return found


def _leaves(tree: Any) -> list[Any]:
    """The leaves of `tree`, a slice's bounds among them."""
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, slice):
        return _leaves([tree.start, tree.stop, tree.step])
    return [tree]


def _mapped(tree: Any, fn: Any) -> Any:
    """`tree` with `fn` applied to its tensors, slices' bounds among them."""
    if isinstance(tree, dict):
        return {k: _mapped(v, fn) for k, v in tree.items()}
    if type(tree) in (list, tuple):
        return type(tree)(_mapped(item, fn) for item in tree)
    if isinstance(tree, slice):
        return slice(*_mapped([tree.start, tree.stop, tree.step], fn))
    return fn(tree) if _is_tensor(tree) else tree


def _is_tensor(leaf: Any) -> bool:
    return isinstance(leaf, torch.Tensor)


def _writes(func: Any, kwargs: dict) -> bool:
    """Whether `func` writes its first operand (an in-place method or operator) or an `out` argument."""
    name = getattr(func, "__name__", "")
    return "out" in kwargs or name in _IN_PLACE_OPERATORS or (name.endswith("_") and not name.endswith("__"))


def _generator_states(devices: list[torch.device]) -> list[tuple[torch.Generator, torch.Tensor]]:
    """The states of the generators a call on `devices` may draw from (`backend.random`'s, once each)."""
    with _disable_current_modes(), torch._C.DisableTorchFunction():
        return list({id(g): (g, state) for d in devices for g, state in generator_states(d)}.values())


def _drew(states: list[tuple[torch.Generator, torch.Tensor]]) -> bool:
    """Whether a generator moved since `states` were taken."""
    with _disable_current_modes(), torch._C.DisableTorchFunction():
        return not all(torch.equal(g.get_state(), state) for g, state in states)


def _shown(value: torch.Tensor) -> str:
    return repr(value.item() if value.dim() == 0 else value.tolist())

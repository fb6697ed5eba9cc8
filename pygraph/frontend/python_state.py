"""Python attributes that `forward` reads and changes: a traced program holds what one call saw.

A module may keep state in plain Python attributes and change it in `forward`: a call counter, a flag set
by the first call (RWKV rescales its weights in place once in eval mode and records that it did). Eager's
later calls then compute differently from the first, but torch.export traces one call and puts back the
attributes the module had. `watching_attributes` records, while a trace runs, which plain attributes
(numbers, strings, None, enums, dtypes and containers of those) `forward` changed, from what to what.
The compiled model runs its program only for calls that find the attributes as the trace found them, and
leaves them as the traced call left them, as eager would; a call finding other values is traced again
(`api.py`), as one taking another way through a condition on data is. State kept in a buffer
(`register_buffer`) is part of the program instead and compiles once. A counter that only counts (`self.calls
+= 1`, its value read by nothing else) compiles once too: `probing_counters` traces the call again with
stand-ins for such ints that record any other use of their values, and where none was made and the
program came out the same, the change holds for any count and adds the same step each call.

Attributes `forward` reads are baked into the trace too (`x * self.scale`, `if self.use_relu:`, a config's
`output_attentions`): `watching_attributes` also records which plain attributes of the model's modules, and
of the objects they hold (a config), the traced forward read, with the values they had when the call
began. A compiled model checks them after an assignment to such an attribute (`api._StateWatch` counts
those) and runs a call finding other values with a program traced from it. What no assignment announces is
checked on every call instead (`AttributeRead.per_call`): lists, dicts and sets forward read, which may
change in place (`self.sizes.append(3)`), and every plain attribute of an object whose class takes no
watch (a built-in type such as SimpleNamespace), by `per_call_check`, cheap enough that such programs
keep the native replay (DeBERTa's layers each read the config's `pos_att_type` list).
Objects held deeper (a config's sub-config) and objects without a `__dict__` (slots) are not seen.

An int or float attribute read that a caller changes between calls (a temperature, a scale set per step)
would compile a program per value that way. Once a call finds one changed, the compiled model traces
again with each changed number as an input of the program instead (`attributes_as_inputs`: forward then
reads a lifted 0-d tensor that promotes as the number would, `numbers.py`), which calls run whatever
value they find; a model that uses such a value in Python (a condition, a size, `math.sqrt`) fixes it in
the trace (`refuse_values_read`), and then gets a program per value as before.

Attributes that hold anything else (tensors, objects) are not compared, and an object changed inside is
not seen. Tensors that forward assigns to plain attributes (a streaming model's `self.state = y`, Llama's
dynamic rotary embedding's `self.max_seq_len_cached = seq_len`, a 0-d tensor of the data) are carried
out of the call: while the trace runs, a forward hook returns them after the output (`AssignedTensors`),
so that the program computes them as results, and a compiled call sets the attributes from them as
eager's forward does. torch.export would otherwise put back the attributes the module had, and later
calls would read the old tensors. Lists, tuples and dicts of tensors count as tensors (`tensor_tree`: an
LSTM's `(h, c)`, per-layer states changed in place, which the call changes in place too), and so do
buffers registered again in forward. An attribute that held tensors when the call began is an input of
the program too (`attributes_as_inputs`, as a lifted number is): each call passes the tensors the
attribute holds then, so that a program that replaces them every call reads the ones the last call left.
Tensors in containers that a program only reads are constants of it, read where they are held at each
call (`HeldTensor`), as tensor attributes are.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import inspect
import itertools
import operator
import re
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

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
    step: int | None = None  # a counter whose value the program does not read: it adds `step`, from any int

    def holds(self) -> bool:
        """Whether the module's attribute has the value the trace started from (any int, for a counter)."""
        value = self.module.__dict__.get(self.name, MISSING)
        return type(value) is int if self.step is not None else _same(value, self.before)

    def apply(self) -> None:
        """Leaves the attribute as the traced call left it (a counter: moved by its step)."""
        if self.step is not None:
            self.module.__dict__[self.name] += self.step
        elif self.after is MISSING:
            self.module.__dict__.pop(self.name, None)
        else:  # (into `__dict__`: an assignment would count as the user's, `api._StateWatch`)
            self.module.__dict__[self.name] = copy.deepcopy(self.after)

    def describe(self) -> str:
        if self.step is not None:
            return f"`{self.path}` (a counter, {self.step:+d} per call)"
        return f"`{self.path}` ({self.before!r} -> {self.after!r})"

    def counts(self) -> bool:
        """Whether the change may be a counter: an int (not a bool) before and after."""
        return type(self.before) is int and type(self.after) is int


class _ValueRead(Exception):
    """A probe trace used a counter's value (`_Counter`)."""


class _Counter:
    """Stands for the int in `change` during a probe trace (`probing_counters`): adding or subtracting an
    int gives another stand-in for the same attribute; any other use of its value (a comparison, a
    conversion, an operand of a tensor op, printing, hashing, truth) marks the probe and stops the trace."""

    __slots__ = ("change", "moved", "probe")

    def __init__(self, change: AttributeChange, moved: int, probe: CounterProbe) -> None:
        self.change, self.moved, self.probe = change, moved, probe

    def _moved_by(self, other: Any, sign: int) -> _Counter:
        if type(other) is not int:
            self._read()
        return _Counter(self.change, self.moved + sign * other, self.probe)

    def __add__(self, other: Any) -> _Counter:
        return self._moved_by(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> _Counter:
        return self._moved_by(other, -1)

    def __deepcopy__(self, memo: Any) -> _Counter:
        return self  # (torch.export copies the attributes it restores; a stand-in never changes)

    def _read(self, *_: Any) -> Any:
        self.probe.read = True
        raise _ValueRead(f"the value of `{self.change.path}` was used")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = _read
    __int__ = __index__ = __float__ = __complex__ = __str__ = __repr__ = __format__ = _read
    __mul__ = __rmul__ = __truediv__ = __floordiv__ = __mod__ = __pow__ = __neg__ = __abs__ = _read
    __rsub__ = __rtruediv__ = __rfloordiv__ = __rmod__ = __round__ = __reduce__ = __reduce_ex__ = _read


@dataclass
class CounterProbe:
    """What a probe trace found: whether a stand-in's value was used, and the stand-ins the attributes
    held when its forward returned."""

    changes: list[AttributeChange]
    read: bool = False
    finals: dict[str, Any] = field(default_factory=dict)  # path -> the attribute's value after forward

    def counters(self) -> list[AttributeChange] | None:
        """The changes (all of them ints: `AttributeChange.counts`, checked before probing) with each
        counter's step, if every one counts (its stand-in came back moved by the step the real trace made,
        and nothing read a value); else None."""
        if self.read:
            return None
        for change in self.changes:
            final = self.finals.get(change.path)
            if not (
                isinstance(final, _Counter)
                and final.change is change
                and final.moved == change.after - change.before
            ):
                return None
        return [dataclasses.replace(change, step=change.after - change.before) for change in self.changes]


@contextlib.contextmanager
def probing_counters(model: torch.nn.Module, changes: list[AttributeChange]) -> Iterator[CounterProbe]:
    """For the length of the block, each attribute in `changes` holds a stand-in (`_Counter`) and a hook
    on `model` records what they hold after forward; the attributes are put back after."""
    probe = CounterProbe(list(changes))

    def record(*_: Any) -> None:
        probe.finals = {change.path: change.module.__dict__.get(change.name) for change in changes}

    saved = [(change, change.module.__dict__[change.name]) for change in changes]
    for change in changes:
        change.module.__dict__[change.name] = _Counter(change, 0, probe)
    handle = model.register_forward_hook(record)
    try:
        yield probe
    finally:
        handle.remove()
        for change, value in saved:
            change.module.__dict__[change.name] = value


@dataclass(frozen=True)
class AttributeRead:
    """`forward` read `holder.name` (an attribute of a module, or of an object a module holds: a config),
    which held `value` when the call began. `per_call`: no assignment announces a change of it, so every
    call checks it (a list or dict may change in place; an object of a built-in class such as
    SimpleNamespace takes no watch on its assignments, and every plain attribute of it counts as read)."""

    holder: Any
    path: str
    name: str
    value: Any
    per_call: bool = False

    def holds(self) -> bool:
        """Whether the attribute has the value the trace read."""
        return _same(self.current(), self.value)

    def current(self) -> Any:
        return vars(self.holder).get(self.name, MISSING)

    def number_changed(self) -> bool:
        """Whether the trace read an int or a float that the attribute now holds another of."""
        return (
            type(self.value) in (int, float) and type(self.current()) is type(self.value) and not self.holds()
        )

    def describe(self) -> str:
        return f"`{self.path}` ({self.value!r})"


def per_call_check(reads: Sequence[AttributeRead]) -> Callable[[], bool] | None:
    """Whether the reads no assignment announces (`AttributeRead.per_call`) hold, checked cheaply enough
    for the native replay: each attribute must hold the object it holds now, and the lists and tuples of
    atoms among them (the usual case: DeBERTa's layers each read a `pos_att_type` list) the element objects
    they hold now, which a few calls in C compare whatever their number; other values are compared with
    their traced ones. Where anything differs, the full check decides (an equal list assigned again
    holds). None where there are no such reads."""
    if not reads:
        return None

    def full() -> bool:
        return all(read.holds() for read in reads)

    places = [(vars(read.holder), read.name) for read in reads]
    objects = [read.current() for read in reads]
    if not full():
        return full
    flat: list[Any] = []  # lists and tuples of atoms, compared by their elements' identities
    others: list[tuple[Any, Any]] = []  # the rest, compared with their traced values
    for obj, value in {id(obj): (obj, read.value) for obj, read in zip(objects, reads, strict=True)}.values():
        if type(obj) in (list, tuple) and all(type(x) in _ATOMS for x in obj):
            flat.append(obj)
        else:
            others.append((obj, value))
    lengths, elements = [len(obj) for obj in flat], list(itertools.chain.from_iterable(flat))

    def check() -> bool:
        if not all(map(operator.is_, [d.get(name, MISSING) for d, name in places], objects)):
            return full()
        if list(map(len, flat)) != lengths or not all(
            map(operator.is_, itertools.chain.from_iterable(flat), elements)
        ):
            return full()
        return all(_same(obj, value) for obj, value in others)

    return check


@dataclass
class Watched:
    """What the last `forward` inside `watching_attributes` did to the plain attributes."""

    changes: list[AttributeChange] = field(default_factory=list)
    reads: list[AttributeRead] = field(default_factory=list)  # those it did not change
    # The plain attributes it set to other tensors (`tensor_tree`), each with the value it held when the
    # call began; and those of them that held tensors and that forward read, which a program takes as
    # inputs (`attributes_as_inputs`, after `layouts_only`).
    tensors_assigned: list[AttributeRead] = field(default_factory=list)
    tensors_to_take: list[AttributeRead] = field(default_factory=list)


class AssignedTensors:
    """What a traced `forward` returns in `watching_attributes` where it assigned tensors to plain
    attributes: its output, then the values (`tensor_tree`s) of the attributes named by `paths`, so that
    the program returns their tensors as results after the output's; `in_place` says which were lists or
    dicts that forward changed in place (eager's attribute keeps the same object). The paths and flags are
    the TreeSpec's context."""

    def __init__(
        self, output: Any, paths: tuple[str, ...], in_place: tuple[bool, ...], values: list[Any]
    ) -> None:
        self.output, self.paths, self.in_place, self.values = output, paths, in_place, values


pytree.register_pytree_node(
    AssignedTensors,
    lambda a: ([a.output, *a.values], (a.paths, a.in_place)),
    lambda children, context: AssignedTensors(children[0], *context, list(children[1:])),
    serialized_type_name="pygraph.AssignedTensors",
)


def tensor_tree(value: Any) -> bool:
    """Whether `value` is a tensor, or a list, tuple or dict holding tensors and nothing else (nested
    too): what pygraph carries out of a call where forward assigns it to an attribute."""
    if isinstance(value, torch.Tensor):
        return True
    if type(value) not in (list, tuple, dict):
        return False
    leaves = pytree.tree_leaves(value)
    return bool(leaves) and all(isinstance(leaf, torch.Tensor) for leaf in leaves)


def containers(value: Any, seen: set[int] | None = None) -> list[tuple[Any, Any]]:
    """Each list and dict in `value` (nested ones too, each once), with a copy of its items (for
    `put_back`)."""
    seen = set() if seen is None else seen
    if type(value) not in (list, dict, tuple) or id(value) in seen:
        return []
    seen.add(id(value))
    items = value.values() if type(value) is dict else value
    inner = [c for v in items for c in containers(v, seen)]
    return inner if type(value) is tuple else [(value, copy.copy(value)), *inner]


def put_back(contents: list[tuple[Any, Any]]) -> None:
    """Gives each list and dict of `contents` its copied items again."""
    for container, items in contents:
        set_items(container, items)


def set_items(container: list | dict, items: list | dict) -> None:
    """Makes the list or dict `container` hold `items`, keeping the object."""
    if type(container) is list:
        container[:] = items
    else:
        container.clear()
        container.update(items)


def _leaf_ids(value: Any) -> tuple[int, ...] | None:
    """The identities of a tensor tree's tensors (None for anything else): a list changed in place holds
    others."""
    return tuple(map(id, pytree.tree_leaves(value))) if tensor_tree(value) else None


@contextlib.contextmanager
def watching_attributes(model: torch.nn.Module) -> Iterator[Watched]:
    """Yields what, once the block is done, the last `forward` of `model` inside the block did to the plain
    attributes of its modules and of the objects they hold: which it changed (hooks on `model` compare
    them before and after each call), which it read (their classes' `__getattribute__` records reads
    while a call runs) and which it set to other tensors (returned after forward's output in an
    `AssignedTensors`, by the hook that compares)."""
    watched = Watched()
    holders = attribute_holders(model)
    before: dict[tuple[str, str], Any] = {}
    read: set[tuple[int, str]] = set()
    running = [False]
    held: dict[tuple[str, str], Any] = {}  # (holder path, name) -> what the attribute held as the call began
    leaves: dict[tuple[str, str], tuple[int, ...] | None] = {}  # and the identities of its tensors

    def snapshot(*_: Any) -> None:
        before.clear()
        before.update(_plain_attributes(holders))
        held.clear()
        held.update(_attribute_values(holders))
        leaves.clear()
        leaves.update({key: _leaf_ids(value) for key, value in held.items()})
        read.clear()
        running[0] = True

    def compare(module: torch.nn.Module, args: Any, output: Any) -> AssignedTensors | None:
        running[0] = False
        now = attribute_holders(model)  # (forward may have added modules or holders)
        after = _plain_attributes(now)
        paths = {path: holder for path, holder in holders.values()}
        watched.changes.clear()
        for path, name in sorted(before.keys() | after.keys()):
            old, new = before.get((path, name), MISSING), after.get((path, name), MISSING)
            if old is _OPAQUE or new is _OPAQUE or _same(old, new):
                continue
            if path in paths:  # (not a module that forward removed)
                watched.changes.append(AttributeChange(paths[path], _joined(path, name), name, old, new))
        assigned = [
            (AttributeRead(paths[path], _joined(path, name), name, held.get(key, MISSING)), value)
            for key, value in _attribute_values(now).items()
            for path, name in [key]
            if path in paths
            and tensor_tree(value)
            and (held.get(key, MISSING) is not value or leaves.get(key) != _leaf_ids(value))
        ]
        watched.tensors_assigned[:] = [a for a, _ in assigned]
        watched.tensors_to_take[:] = [
            a
            for a, _ in assigned
            if (id(a.holder), a.name) in read and tensor_tree(a.value) and not _is_buffer(a.holder, a.name)
        ]
        changed = {change.path for change in watched.changes}
        unwatched = {  # (reads of their attributes were not recorded either: they all count)
            (ident, name)
            for ident, (_, holder) in holders.items()
            if not assignments_seen(holder)
            for name in vars(holder)
        }
        watched.reads[:] = [
            AttributeRead(
                holder, _joined(path, name), name, value, _mutable(value) or (ident, name) in unwatched
            )
            for ident, name in sorted(read | unwatched)
            for path, holder in [holders[ident]]
            for value in [before.get((path, name), _OPAQUE)]
            if value is not _OPAQUE and _joined(path, name) not in changed
        ]
        if not assigned:
            return None
        paths_assigned = tuple(read.path for read, _ in assigned)
        in_place = tuple(read.value is value for read, value in assigned)
        return AssignedTensors(output, paths_assigned, in_place, [value for _, value in assigned])

    with _recording_reads(holders, read, running):
        handles = [model.register_forward_pre_hook(snapshot), model.register_forward_hook(compare)]
        try:
            yield watched
        finally:
            for handle in handles:
                handle.remove()


_OPAQUE: Any = object()  # an attribute holding something other than plain values: not compared


@contextlib.contextmanager
def attributes_as_inputs(
    model: torch.nn.Module, reads: tuple[AttributeRead, ...], names: list[str]
) -> Iterator[None]:
    """For the length of the block, `model.forward` takes the attributes of `reads` as arguments after its
    own (`names`, as many as a call passes), and each call sets them for the length of the call: a trace
    passed their values (numbers lifted into 0-d tensors, tensors as they are) has them as inputs where
    forward reads them. An attribute that forward sets to another tensor keeps it until the block ends, for
    `watching_attributes` to return it."""
    if not reads:
        yield
        return
    count, original, own = len(names), model.forward, model.__dict__.get("forward", MISSING)
    saved = [read.current() for read in reads]

    def forward(*args: Any) -> Any:
        given = args[count:]
        given_leaves = [_leaf_ids(value) for value in given]
        for read, value in zip(reads, given, strict=True):
            vars(read.holder)[read.name] = value
        try:
            return original(*args[:count])
        finally:
            for read, value, ids, before in zip(reads, given, given_leaves, saved, strict=True):
                if read.current() is not value:
                    continue  # (assigned anew: `watching_attributes` returns it)
                vars(read.holder)[read.name] = before
                if _leaf_ids(value) != ids and type(value) in (list, dict):
                    set_items(before, value)  # (changed in place: the list or dict held shows it)

    parameters = [n if n.isidentifier() else f"arg{i}" for i, n in enumerate(names)]
    parameters += ["self_" + re.sub(r"\W", "_", read.path) for read in reads]
    forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in parameters]
    )
    model.__dict__["forward"] = forward  # (not an assignment `api._StateWatch` counts)
    try:
        yield
    finally:
        if own is MISSING:
            del model.__dict__["forward"]
        else:
            model.__dict__["forward"] = own
        for read, value in zip(reads, saved, strict=True):
            vars(read.holder)[read.name] = value


# Ops that take a value back into Python, or check it on the device (branches.py defers a condition's check
# so where torch 2.11's draft export leaves it unread)
_DECIDES = (
    torch.ops.aten.item.default,
    torch.ops.aten._local_scalar_dense.default,
    torch.ops.aten._assert_async.msg,
    torch.ops.aten._assert_async.default,
)


def refuse_values_read(
    program: torch.export.ExportedProgram, reads: tuple[AttributeRead, ...], placeholders: list[torch.fx.Node]
) -> None:
    """Raises ValueError where the program reads the value of a number attribute passed as an input (its
    placeholder among the last of `placeholders`, one per number or tensor of a read) back into Python,
    or checks it: forward used it as a number (a condition, a size, a conversion), which a traced program
    holds for one value only. (A tensor attribute's values are data, which conditions on data check as
    those of any input.)"""
    per_leaf = [read for read in reads for _ in pytree.tree_leaves(read.value)]  # (a number is one leaf)
    placeholders = placeholders[len(placeholders) - len(per_leaf) :]
    derived = {p: r for p, r in zip(placeholders, per_leaf, strict=True) if not tensor_tree(r.value)}
    for node in program.graph.nodes:  # (in order: each node after its operands)
        source = next((derived[a] for a in node.all_input_nodes if a in derived), None)
        if source is None:
            continue
        if node.target in _DECIDES:
            raise ValueError(
                f"forward uses the attribute `{source.path}` as a Python number (a condition, a size or a "
                "conversion), not only as an operand of tensor ops"
            )
        derived[node] = source


@dataclass(frozen=True)
class HeldTensor:
    """Where a tensor the program reads as a constant is held: an item of the list, tuple or dict in the
    plain attribute `holder.name`, reached by `keys` (torch.export names such constants `lifted_tensor_N`,
    not by where they are). Calls read the tensor found there (`current`), as they read tensor attributes."""

    holder: Any
    path: str  # for messages: "cells.state[0]"
    name: str
    keys: tuple[Any, ...]

    def current(self) -> Any:
        value = vars(self.holder).get(self.name, MISSING)
        for key in self.keys:
            try:
                value = value[key]
            except (IndexError, KeyError, TypeError):
                return MISSING
        return value


def held_tensors(model: torch.nn.Module, constants: dict[str, torch.Tensor]) -> dict[str, HeldTensor]:
    """name -> where, for each of `constants` that a list, tuple or dict in a plain attribute of the
    model's modules, or of the objects they hold, holds (the same tensor, or a view of its bytes in its
    layout: export detaches constants)."""
    wanted = {bytes_and_layout(t): name for name, t in constants.items()}
    found: dict[str, HeldTensor] = {}
    for path, holder in attribute_holders(model).values():
        for name, value in vars(holder).items():
            if name in _STANDARD or type(value) not in (list, tuple, dict):
                continue
            for keys, leaf in pytree.tree_flatten_with_path(value)[0]:
                constant = wanted.get(bytes_and_layout(leaf)) if isinstance(leaf, torch.Tensor) else None
                if constant is not None and constant not in found:
                    where = _joined(path, name) + pytree.keystr(keys)
                    found[constant] = HeldTensor(holder, where, name, tuple(_key(k) for k in keys))
    return found


def bytes_and_layout(tensor: torch.Tensor) -> tuple[Any, ...]:
    """What two tensors share where one is the other, or a view of its bytes in its layout (export detaches
    constants, so a program's constant is such a view of the model's tensor)."""
    return tensor.data_ptr(), tuple(tensor.shape), tensor.stride(), tensor.dtype, tensor.device


def _key(entry: Any) -> Any:
    """The index or key of a pytree key path's entry."""
    return entry.idx if isinstance(entry, pytree.SequenceKey) else entry.key


def _joined(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def attribute_holders(model: torch.nn.Module) -> dict[int, tuple[str, Any]]:
    """id -> (path, object) for the modules of `model` and the objects their attributes hold that keep
    plain attributes of their own (a config, a dataclass of options)."""
    holders = {id(module): (path, module) for path, module in model.named_modules()}
    for path, module in list(holders.values()):
        for name, value in vars(module).items():
            if name not in _STANDARD and _holds_attributes(value):
                holders.setdefault(id(value), (_joined(path, name), value))
    return holders


def _attribute_values(holders: dict[int, tuple[str, Any]]) -> dict[tuple[str, str], Any]:
    """(holder path, name) -> the value, for each attribute a holder adds to nn.Module's own and for each
    buffer of a module (a module that registers a buffer again in forward replaces it, which torch.export
    puts back as it puts back attributes)."""
    return {
        (path, name): value
        for path, holder in holders.values()
        for name, value in [
            *((n, v) for n, v in vars(holder).items() if n not in _STANDARD),
            *(holder._buffers.items() if isinstance(holder, torch.nn.Module) else ()),
        ]
    }


def layouts_only(read: AttributeRead) -> AttributeRead:
    """`read` with meta tensors of the shapes and dtypes of the tensors it found: what a program taking the
    attribute as an input keeps of them (not the tensors themselves). Called outside the trace (inside,
    the copies would be fake tensors)."""
    return dataclasses.replace(read, value=pytree.tree_map(lambda t: t.detach().to("meta"), read.value))


def _is_buffer(holder: Any, name: str) -> bool:
    """Whether `holder.name` is a buffer of a module (state the program binds, never an input of it)."""
    return isinstance(holder, torch.nn.Module) and name in holder._buffers


def _holds_attributes(value: Any) -> bool:
    return (
        hasattr(value, "__dict__")
        and not callable(value)
        and not isinstance(value, (torch.nn.Module, torch.Tensor, type, types.ModuleType, *_ATOMS))
    )


def _plain_attributes(holders: dict[int, tuple[str, Any]]) -> dict[tuple[str, str], Any]:
    """(holder path, name) -> a copy of each attribute a holder adds to nn.Module's own (`_OPAQUE` where
    it holds something not plain)."""
    return {
        (path, name): copy.deepcopy(value) if _plain(value) else _OPAQUE
        for path, holder in holders.values()
        for name, value in vars(holder).items()
        if name not in _STANDARD
    }


@contextlib.contextmanager
def _recording_reads(
    holders: dict[int, tuple[str, Any]], read: set[tuple[int, str]], running: list[bool]
) -> Iterator[None]:
    """Adds (id, name) to `read` for each attribute of a holder that is read while `running[0]`, by a
    `__getattribute__` on the holders' classes for the length of the block."""
    saved: dict[type, Any] = {}
    for cls in {type(holder) for _, holder in holders.values()}:
        original = cls.__getattribute__

        def getattribute(self: Any, name: str, original: Any = original) -> Any:
            value = original(self, name)
            if running[0] and id(self) in holders and name in object.__getattribute__(self, "__dict__"):
                read.add((id(self), name))
            return value

        try:
            saved[cls] = cls.__dict__.get("__getattribute__", MISSING)
            cls.__getattribute__ = getattribute
        except TypeError:  # (a built-in type)
            saved.pop(cls)
    try:
        yield
    finally:
        for cls, method in saved.items():
            if method is MISSING:
                delattr(cls, "__getattribute__")
            else:
                cls.__getattribute__ = method


def assignments_seen(holder: Any) -> bool:
    """Whether assignments to `holder`'s attributes can be counted (`api._StateWatch`): its class takes a
    new `__setattr__` (a built-in type does not) and it takes weak references."""
    kind = type(holder)
    return not kind.__flags__ & _IMMUTABLE_TYPE and kind.__weakrefoffset__ != 0


_IMMUTABLE_TYPE = 1 << 8  # (Py_TPFLAGS_IMMUTABLETYPE: built-in and extension types)


def _mutable(value: Any) -> bool:
    """Whether a plain value may change in place: a list, dict or set, or a tuple holding one."""
    if isinstance(value, (list, dict, set)):
        return True
    return isinstance(value, (tuple, frozenset)) and any(_mutable(v) for v in value)


def _plain(value: Any) -> bool:
    if isinstance(value, _ATOMS):
        return True
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return False


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, inside containers too (1 and True, or 1 and 1.0, differ: Python
    code may tell them apart)."""
    if a is b:  # (a float NaN kept is the same object)
        return True
    if a is MISSING or b is MISSING or type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, (set, frozenset)):
        return {(type(x), x) for x in a} == {(type(x), x) for x in b}
    return a == b

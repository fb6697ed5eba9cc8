"""Python numbers among a model's inputs become 0-d tensors before export.

torch.export bakes a Python number argument (`forward(x, temperature: float)`) into the program as a
constant, so a new value would need a new compilation. Passed as a 0-d CPU tensor instead, it is an
input like any other: parameter-indirection gives it a value slot of the per-call table, and each call
writes the new value there. The dtype holds the number exactly: a float is float64 (a Python float), an
int int64, a bool bool; while the model is traced, each op takes it as eager's takes a Python number
(`_AsPythonNumbers`), so results keep eager's dtypes and values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export.graph_signature import InputKind
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import _disable_current_modes

from .structure import CONSTANT_LEAVES


def number_dtype(value: bool | int | float) -> torch.dtype:
    if isinstance(value, bool):
        return torch.bool
    return torch.int64 if isinstance(value, int) else torch.float64


def lift_numbers(
    model: torch.nn.Module, names: list[str], example_inputs: tuple[Any, ...]
) -> tuple[tuple[Any, ...], dict[str, torch.Tensor]]:
    """The example inputs with Python numbers as 0-d CPU tensors, also inside lists, tuples and dicts
    (`structure.py`), and those tensors by the argument's name; a leaf that is neither a tensor, a number,
    None nor a string is a TypeError naming the argument."""
    lifted: dict[str, torch.Tensor] = {}
    converted = []
    for name, value in zip(names, example_inputs, strict=True):
        paths, spec = pytree.tree_flatten_with_path(value)
        leaves = []
        for path, leaf in paths:
            where = name + pytree.keystr(path)
            if isinstance(leaf, (bool, int, float)):
                leaf = lifted[where] = torch.tensor(leaf, dtype=number_dtype(leaf))
            elif not isinstance(leaf, (torch.Tensor, *CONSTANT_LEAVES)):
                raise TypeError(
                    f"argument '{where}' of {type(model).__name__}.forward is {type(leaf).__name__}; pygraph "
                    "takes tensors and Python numbers (bool, int, float), in lists, tuples and dicts, and "
                    "None and strings as constants"
                )
            leaves.append(leaf)
        converted.append(pytree.tree_unflatten(leaves, spec))
    return tuple(converted), lifted


def numbers_beside_tensors(
    model: torch.nn.Module, inputs: tuple[Any, ...], numbers: tuple[torch.Tensor, ...]
) -> tuple[Any, ...]:
    """`inputs` with the lifted `numbers` on the device of the model's tensors, for a trace that runs real
    kernels (draft export's real-value propagation): ATen's CUDA `clamp.Tensor` rejects a CPU 0-d bound,
    which fake tensors, and eager's `clamp(max=0.5)`, accept. The program takes them on the host again
    (`numbers_on_host`)."""
    tensors = [*pytree.tree_leaves(inputs), *model.parameters(), *model.buffers()]
    device = next((t.device for t in tensors if isinstance(t, torch.Tensor) and t.device.type != "cpu"), None)
    if device is None or not numbers:
        return inputs
    return pytree.tree_map(lambda leaf: leaf.to(device) if any(leaf is n for n in numbers) else leaf, inputs)


def numbers_on_host(
    ep: torch.export.ExportedProgram, traced: tuple[Any, ...], inputs: tuple[Any, ...]
) -> None:
    """The placeholders of the numbers that `numbers_beside_tensors` moved back on the host, where the
    program's inputs take Python numbers. Only the placeholders: the importer reads the device of inputs
    alone, and propagating every value again would evaluate the shape guards of the GPU's fake kernels
    (attention's) once more, which fixes dims declared dynamic."""
    leaves = zip(pytree.tree_leaves(traced), pytree.tree_leaves(inputs), strict=True)
    for node, (moved, number) in zip(user_placeholders(ep), leaves, strict=True):
        if moved is not number:
            node.meta["val"] = node.meta["val"].fake_mode.from_tensor(number, static_shapes=True)


def user_placeholders(ep: torch.export.ExportedProgram) -> list[torch.fx.Node]:
    """The placeholders of the user's inputs, as torch.export flattens them: one per leaf."""
    specs = zip(ep.graph.find_nodes(op="placeholder"), ep.graph_signature.input_specs, strict=True)
    return [node for node, spec in specs if spec.kind == InputKind.USER_INPUT]


@contextlib.contextmanager
def numbers_promoted_as_python(
    model: torch.nn.Module, inputs: tuple[Any, ...], numbers: tuple[torch.Tensor, ...]
) -> Iterator[None]:
    """While `model` is traced with `inputs`: ops reading the lifted `numbers` get the dtype eager gives
    them with Python numbers (`_AsPythonNumbers`), so that what the model reads of it (`t.dtype`) is
    eager's too; a boolean read from the data (`b = t.item()`) is its tensor in ops on tensors; and a
    result that is a number (`return y, n`, `n * 2`) is returned as one, read with `.item()` (a Python
    number of the trace, which `outputs.numbers_as_tensors` makes a result that each call reads back, as
    Python computes it)."""
    leaves = pytree.tree_leaves(inputs)
    lifted = [(i, _kind(leaf.dtype)) for i, leaf in enumerate(leaves) if any(leaf is n for n in numbers)]
    # Entered inside the traced call, above torch's own modes: their frames come after the model's line.
    mode = _AsPythonNumbers()
    entered: list[bool] = []

    def enter(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        traced = pytree.tree_leaves(args)  # (export passes the inputs positionally, as traced fakes)
        for i, kind in lifted:
            mode.numbers[id(traced[i])] = (traced[i], kind)
        mode.__enter__()
        entered.append(True)

    def leave(*_: Any) -> None:
        mode.__exit__(None, None, None)
        entered.pop()

    def returned(module: torch.nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        leave()
        return pytree.tree_map(lambda leaf: leaf.item() if _is_number(leaf, mode) else leaf, output)

    hooks = [
        model.register_forward_pre_hook(enter, with_kwargs=True),
        model.register_forward_hook(returned, always_call=True),
    ]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()
        if entered:  # (torch's modes, entered after it, have left: it is the innermost again)
            leave()


class _AsPythonNumbers(TorchFunctionMode):
    """Ops on the lifted numbers as eager's on Python numbers. A Python number promotes below any tensor:
    `s * y` of a 0-d bfloat16 `s` is bfloat16, but with `y` a 0-d float64 tensor, as it is traced, float64
    (two 0-d tensors promote as equals); likewise where's and clamp's operands. Each call reading a number
    beside other tensors has its dtype computed again on meta tensors with Python numbers of the same kinds
    in their place; it takes its floats in float32, the opmath type eager takes a Python float in below
    float64 (in float64 where that dtype or another operand is float64: exactly), and where its result's
    dtype differs, the result is cast to it (the op computes in the wider dtype and rounds once, as eager's
    op computes in its opmath type and rounds once). Python's operators on numbers alone (`y * y + 1`,
    `n / 2`: Tensor methods, as the trace sees them) are Python arithmetic: floats in float64, and a 0-d
    result is a number too; torch's functions on them make tensors (`torch.tensor(y)`), as in eager.

    A boolean read from the data (`b = t.item()`) meets tensors as its 0-d tensor (`mask & b`, `y * b`):
    a bool promotes alike as a Python number and as a 0-d tensor, and the op then runs on the device
    instead of reading `b` back to the host; torch's trace of a bool number in a boolean op (`bool(b)` in
    its type conversion) would otherwise fix `b` to the example's value. Indexing (`x[b]`) keeps the
    number, as does a call after the tensor was written in place."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: dict[int, tuple[torch.Tensor, str]] = {}  # by id, the tensor held so its id stays
        # by the id of a bool that `.item()` read: it, the 0-d tensor it was read from and that tensor's version
        self.bool_reads: dict[int, tuple[torch.SymBool, torch.Tensor, int]] = {}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        leaves = pytree.tree_leaves((args, kwargs))
        if func is torch.Tensor.item and args[0].dtype == torch.bool:
            return self._read_bool(args[0])
        if self.bool_reads and any(id(leaf) in self.bool_reads for leaf in leaves):
            args, kwargs = self._bool_reads_as_tensors(func, args, kwargs, leaves)
            leaves = pytree.tree_leaves((args, kwargs))
        tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
        numbers = [id(t) in self.numbers for t in tensors]
        if not any(numbers):  # (most calls of a trace)
            return func(*args, **kwargs)
        if all(numbers) and getattr(func, "__qualname__", "").startswith(("Tensor.", "TensorBase.")):
            result = func(*args, **kwargs)
            if (
                isinstance(result, torch.Tensor)
                and result.is_floating_point()
                and result.dtype != torch.float64
            ):
                args, kwargs = self._numbers_as(torch.float64, args, kwargs, every=True)
                result = func(*args, **kwargs)  # (`n / 2` of ints: Python's float; the first is dead code)
            if isinstance(result, torch.Tensor) and result.dim() == 0:
                self.numbers[id(result)] = (result, _kind(result.dtype))
            return result
        expected = self._eager_dtype(func, args, kwargs)
        wide = expected == torch.float64 or any(
            t.dtype == torch.float64 for t, number in zip(tensors, numbers, strict=True) if not number
        )
        args, kwargs = self._numbers_as(torch.float64 if wide else torch.float32, args, kwargs)
        result = func(*args, **kwargs)
        if not isinstance(result, torch.Tensor):
            return result
        return result if expected in (None, result.dtype) else result.to(expected)

    def _read_bool(self, tensor: torch.Tensor) -> Any:
        number = tensor.item()
        if isinstance(number, torch.SymBool):
            scalar = tensor.reshape(())
            self.bool_reads[id(number)] = (number, scalar, scalar._version)
        return number

    def _bool_reads_as_tensors(
        self, func: Any, args: tuple, kwargs: dict, leaves: list[Any]
    ) -> tuple[tuple, dict]:
        """`args` and `kwargs` (whose leaves are `leaves`) with the bool reads as their tensors, where the
        call takes tensors of a device they may meet (other than indexing, and unless the tensor was
        written since the read)."""
        if getattr(func, "__name__", "") in _INDEXING:
            return args, kwargs
        devices = {t.device for t in leaves if isinstance(t, torch.Tensor) and id(t) not in self.numbers}
        if not devices:
            return args, kwargs

        def as_tensor(leaf: Any) -> Any:
            read = self.bool_reads.get(id(leaf))
            if read is None:
                return leaf
            _, scalar, version = read
            if scalar._version != version or (scalar.device not in devices and scalar.device.type != "cpu"):
                return leaf
            return scalar

        return pytree.tree_map(as_tensor, (args, kwargs))

    def _numbers_as(self, dtype: torch.dtype, args: tuple, kwargs: dict, every: bool = False) -> Any:
        """`args` and `kwargs` with their float numbers (`every`: all their numbers) in `dtype`."""

        def cast(leaf: Any) -> Any:
            if not isinstance(leaf, torch.Tensor) or id(leaf) not in self.numbers or leaf.dtype == dtype:
                return leaf
            if not every and self.numbers[id(leaf)][1] != "float":
                return leaf
            return torch.ops.aten._to_copy.default(leaf, dtype=dtype)  # (no `to`: export would assert its
            # device, which draft export moves: `numbers_beside_tensors`)

        return pytree.tree_map(cast, (args, kwargs))

    def _eager_dtype(self, func: Any, args: tuple, kwargs: dict) -> torch.dtype | None:
        """The dtype of `func` called with Python numbers for the numbers, on meta tensors of one element;
        None where eager takes no number there."""

        def stand_in(leaf: Any) -> Any:
            if not isinstance(leaf, torch.Tensor):
                return leaf
            if id(leaf) in self.numbers:
                return _PYTHON_KIND[self.numbers[id(leaf)][1]]
            return torch.empty((1,) * leaf.dim(), dtype=leaf.dtype, device="meta")

        args, kwargs = pytree.tree_map(stand_in, (args, kwargs))
        calls = [args]
        if len(args) >= 2 and not isinstance(args[0], torch.Tensor) and isinstance(args[1], torch.Tensor):
            calls.append((args[1], args[0], *args[2:]))  # (`y - s` is `s.__rsub__(y)`: a binary op's dtype
            # is symmetric in its operands)
        for call in calls:
            try:
                with _disable_current_modes(), torch._C.DisableTorchFunction():  # (nothing of it traced)
                    result = func(*call, **kwargs)
            except Exception:
                continue
            if isinstance(result, torch.Tensor):  # (not NotImplemented, as `Tensor.pow(0.5, s)` returns)
                return result.dtype
        return None


def _is_number(leaf: Any, mode: _AsPythonNumbers) -> bool:
    return isinstance(leaf, torch.Tensor) and id(leaf) in mode.numbers


_INDEXING = {"__getitem__", "__setitem__", "index_put", "index_put_"}  # (a bool there selects: a mask)
_PYTHON_KIND = {"bool": True, "int": 1, "float": 0.5}  # a number of each kind, for its promotion


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    return "float" if dtype.is_floating_point else "int"

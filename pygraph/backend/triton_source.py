"""Turns a plan's `pygraph.triton_kernel` into a Triton JITFunction (Triton reads a kernel's source
from its file, so each source is written once to the cache, named by its hash, and imported)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
import types
from typing import Any

import numpy as np
import triton.language as tl
import triton.runtime.interpreter as interpreter
from triton.runtime.interpreter import InterpretedFunction, TensorHandle
from triton.runtime.jit import JITFunction

from ..cache_files import write_atomically
from ..ir.plan import TritonKernel
from ..knobs import knobs
from ..passes.gathers import TRAP
from . import interpreted_libdevice

_loaded: dict[str, JITFunction] = {}
_loading = threading.Lock()  # (kernels compile in threads, `compile_kernels`; one import per source)


def source_hash(kernel: TritonKernel) -> str:
    return hashlib.sha256(kernel.source.encode()).hexdigest()[:24]


def load_kernel(kernel: TritonKernel) -> JITFunction:
    key = source_hash(kernel)
    with _loading:
        return _loaded[key] if key in _loaded else _load(kernel, key)


def _load(kernel: TritonKernel, key: str) -> JITFunction:
    path = knobs.cache_dir / "sources" / f"k_{key}.py"
    if not path.exists():
        write_atomically(path, kernel.source.encode())
    module_name = f"pygraph_kernels.k_{key}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, kernel.entry, None)
    if not isinstance(fn, JITFunction):
        raise ValueError(
            f"kernel @{kernel.name}: its source defines no @triton.jit function '{kernel.entry}'"
        )
    _loaded[key] = fn
    return fn


def load_interpreted(kernel: TritonKernel) -> InterpretedFunction:
    """The kernel under Triton's interpreter, with `libdevice` bound to numpy's functions (the interpreter
    has no libdevice), `range` to `_interpreted_range` and a gather's `trap_unless` to `_interpreted_trap`
    (the interpreter runs no PTX): a copy of the function, so the module keeps the globals the GPU compiler
    needs."""
    fn = load_kernel(kernel).fn
    scope = {
        **fn.__globals__,
        "libdevice": interpreted_libdevice,
        "range": _interpreted_range,
        TRAP: _interpreted_trap,
    }
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    return InterpretedFunction(copy)


def _convert_float_rounding_bfloat16(
    data: np.ndarray, source: tl.dtype, target: tl.dtype, rounding_mode: Any
) -> np.ndarray:
    """Triton's interpreter converts float32 to bfloat16 by truncation, where the GPU (and eager) round to
    nearest even: one ulp off, so the emulator's half-precision results drifted from the GPU's. Every other
    conversion is the interpreter's own."""
    if source != tl.float32 or target != tl.bfloat16:
        return _interpreter_convert_float(data, source, target, rounding_mode)
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    quiet_nan = (bits >> 16) | np.uint32(0x40)
    return np.where(np.isnan(data), quiet_nan, rounded).astype(np.uint16)


_interpreter_convert_float = interpreter._convert_float
interpreter._convert_float = _convert_float_rounding_bfloat16


def _dot_of_bfloat16_values(
    builder: Any, a: Any, b: Any, acc: Any, input_precision: Any, max_num_imprecise_acc: Any
) -> Any:
    """`tl.dot` in the interpreter, which multiplies bfloat16 operands as the 16-bit integers it keeps them
    in (garbage: the few-row product kernels dot bfloat16 tiles); their float32 values here, which the
    GPU's tensor cores multiply exactly too, accumulating in float32."""
    operands = []
    for x in (a, b):
        if x.dtype == tl.bfloat16:
            bits = np.ascontiguousarray(x.data, dtype=np.uint16).astype(np.uint32) << 16
            x = TensorHandle(bits.view(np.float32), tl.float32)
        operands.append(x)
    return _interpreter_dot(builder, *operands, acc, input_precision, max_num_imprecise_acc)


_interpreter_dot = interpreter.InterpreterBuilder.create_dot
interpreter.InterpreterBuilder.create_dot = _dot_of_bfloat16_values


def _interpreted_range(*bounds: Any) -> range:
    """`range` in an interpreted kernel. The interpreter's scalars are 1-element arrays, which NumPy 2 does
    not convert to an index: a loop bound computed from the program id (the attention kernel's causal
    one) is taken by its item."""
    return range(*(int(b.handle.data.item()) if isinstance(b, tl.tensor) else b for b in bounds))


def _interpreted_trap(ok: tl.tensor, index: tl.tensor) -> tl.tensor:
    """`trap_unless` in an interpreted kernel: where the GPU stops the kernel, raise; else the index."""
    if not ok.handle.data.all():
        raise IndexError(
            "index out of range in a gather or scatter (a generated kernel stopped, as eager's assert)"
        )
    return index


def signature(kernel: TritonKernel) -> tuple[dict[str, str], dict[tuple[int], list]]:
    """Triton's (signature, attrs) for compiling `kernel`: argument types and 16-byte alignment promises."""
    fn = load_kernel(kernel)
    types, attrs = {}, {}
    for i, (name, entry) in enumerate(zip(fn.arg_names, kernel.signature, strict=True)):
        pointer, _, align = entry.partition(":")
        if pointer.startswith("**"):  # a table slot: the kernel loads the buffer's address from it
            types[name] = "*i64"
        else:  # a pointer ("*fp32"), or a scalar passed by value ("i64")
            types[name] = pointer
            if align == "16":
                attrs[(i,)] = [["tt.divisibility", 16]]
    return types, attrs

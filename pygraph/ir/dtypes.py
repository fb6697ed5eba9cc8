"""Element types: one table from PyTorch's names to MLIR types, sizes and Triton types.

Names are PyTorch's (`getattr(torch, name)` gives the dtype), so no module here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str  # torch.<name>
    mlir: str  # element type in MLIR (torch-mlir's spelling)
    itemsize: int
    triton: str  # Triton pointer element type
    is_float: bool
    is_signed: bool = True


_TABLE = [
    DType("float32", "f32", 4, "fp32", True),
    DType("float16", "f16", 2, "fp16", True),
    DType("bfloat16", "bf16", 2, "bf16", True),
    DType("float64", "f64", 8, "fp64", True),
    DType("int64", "si64", 8, "i64", False),
    DType("int32", "si32", 4, "i32", False),
    DType("int16", "si16", 2, "i16", False),
    DType("int8", "si8", 1, "i8", False),
    DType("uint8", "ui8", 1, "u8", False, is_signed=False),
    DType("bool", "i1", 1, "i1", False, is_signed=False),
]
BY_NAME = {d.name: d for d in _TABLE}
BY_MLIR = {d.mlir: d for d in _TABLE}
# PyTorch's ScalarType numbering, as torch-mlir imports a dtype argument (`torch.constant.int 6`).
BY_SCALAR_TYPE = {
    0: BY_NAME["uint8"], 1: BY_NAME["int8"], 2: BY_NAME["int16"], 3: BY_NAME["int32"], 4: BY_NAME["int64"],
    5: BY_NAME["float16"], 6: BY_NAME["float32"], 7: BY_NAME["float64"], 11: BY_NAME["bool"], 15: BY_NAME["bfloat16"],
}  # fmt: skip


def from_mlir(spelling: str) -> DType:
    try:
        return BY_MLIR[spelling]
    except KeyError:
        raise ValueError(f"element type {spelling} is not supported by pygraph") from None


def from_name(name: str) -> DType:
    name = name.removeprefix("torch.")
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"dtype {name} is not supported by pygraph (it compiles floating-point, integer and bool "
            "tensors; complex ones, as FFTs make, are not)"
        ) from None


def promote(a: DType, b: DType) -> DType:
    """The wider of two dtypes of the same category, floats above integers (PyTorch's lattice for tensors)."""
    if a == b:
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.is_float:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return BY_NAME["float32"]
        return a if a.itemsize >= b.itemsize else b
    if a.name == "bool":
        return b
    if b.name == "bool":
        return a
    if a.is_signed != b.is_signed:  # uint8 with a signed type: the signed type, at least int16
        signed = a if a.is_signed else b
        return signed if signed.itemsize > 1 else BY_NAME["int16"]
    return a if a.itemsize >= b.itemsize else b

"""Reading torch-dialect types (the bindings have no Python classes for them)."""

from __future__ import annotations

import re

from . import dtypes
from ._mlir import ir
from .layout import Layout

_VTENSOR = re.compile(r"!torch\.(v?)tensor<\[([^\]]*)\],(\w+)>")


def tensor_info(type_: ir.Type) -> tuple[list[int], dtypes.DType] | None:
    """(sizes with -1 for dynamic dims, dtype) of a ranked `!torch.vtensor`/`!torch.tensor`, else None."""
    m = _VTENSOR.fullmatch(str(type_))
    if m is None:
        return None
    sizes = [-1 if s == "?" else int(s) for s in m.group(2).split(",")] if m.group(2) else []
    return sizes, dtypes.from_mlir(m.group(3))


def is_tensor(type_: ir.Type) -> bool:
    return str(type_).startswith(("!torch.vtensor", "!torch.tensor"))


def contiguous_layout(type_: ir.Type) -> Layout | None:
    """The contiguous layout of a static-shaped tensor type (hand-written IR without layouts)."""
    info = tensor_info(type_)
    if info is None or -1 in info[0]:
        return None
    return Layout.contiguous(info[0], info[1])


def vtensor_type(shape: tuple[int, ...] | list[int], dtype: dtypes.DType) -> ir.Type:
    """`!torch.vtensor<[shape],dtype>` (in the current context)."""
    return ir.Type.parse(f"!torch.vtensor<[{','.join(map(str, shape))}],{dtype.mlir}>")

"""Torch tensors for plan buffers: a layout applied to some storage."""

from __future__ import annotations

import torch

from ..ir.layout import Layout


def torch_dtype(layout: Layout) -> torch.dtype:
    return getattr(torch, layout.dtype.name)


def view_of(storage: torch.Tensor, layout: Layout, byte_offset: int = 0) -> torch.Tensor:
    """A tensor with `layout` on `storage`'s memory, starting `byte_offset` bytes into it."""
    itemsize = layout.dtype.itemsize
    start = storage.storage_offset() * storage.element_size() + byte_offset
    if start % itemsize:
        raise ValueError(f"byte offset {start} is not aligned to {layout.dtype.name}")
    out = torch.empty(0, dtype=torch_dtype(layout), device=storage.device)
    strides = _unit_strides_as_dense(layout.shape, layout.strides)
    out.set_(storage.untyped_storage(), start // itemsize + layout.offset, layout.shape, strides)
    return out


def _unit_strides_as_dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """`strides` with each size-1 dim's the product of the later dims' sizes and strides, as a contiguous
    tensor has there. Such a stride addresses nothing, but ATen's CUDA `index_put(accumulate=True)` (torch
    2.11) sums wrongly where it is another (`probe_unit_strides.py`), as pygraph's attention kernel's
    output gives one head (strides [L*D, D, D, 1] of [B, 1, L, D])."""
    dense, after = list(strides), 1
    for d in reversed(range(len(shape))):
        if shape[d] == 1:
            dense[d] = after
        after = dense[d] * shape[d]
    return tuple(dense)


def empty(layout: Layout, device: torch.device) -> torch.Tensor:
    """Fresh storage large enough for `layout` (its storage offset included)."""
    return view_of(torch.empty(layout.storage_elements(), dtype=torch_dtype(layout), device=device), layout)


def layout_of(tensor: torch.Tensor) -> Layout:
    from ..ir import dtypes

    return Layout(
        tuple(tensor.shape),
        tuple(tensor.stride()),
        tensor.storage_offset(),
        dtypes.from_name(str(tensor.dtype)),
    )


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def scalar_bits(tensor: torch.Tensor) -> int:
    """A one-element tensor's bytes as an unsigned 64-bit integer (little-endian, zero-extended): what
    a value slot of the per-call table holds."""
    size = tensor.element_size()
    return tensor.reshape(()).view(_SAME_SIZE_INT[size]).item() & ((1 << (8 * size)) - 1)

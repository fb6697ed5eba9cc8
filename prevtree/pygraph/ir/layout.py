"""Strided layouts in pure Python: the algebra of views, and conversion to and from `#pygraph.layout`.

A layout is what PyTorch's TensorImpl holds besides the storage: sizes, strides, a storage offset
(in elements) and a dtype. View ops only compute a new layout; this module follows ATen's rules
(`computeStride` for `view`) so that pygraph's views are exactly eager's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import dtypes
from ._mlir import ir
from .attrs import i64, i64_array, int_list


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: dtypes.DType

    @staticmethod
    def contiguous(shape: Sequence[int], dtype: dtypes.DType, offset: int = 0) -> Layout:
        return Layout(tuple(shape), contiguous_strides(shape), offset, dtype)

    @staticmethod
    def dynamic(rank: int, dtype: dtypes.DType) -> Layout:
        """The layout of a result whose sizes depend on the data: known at run time only (sizes, strides -1)."""
        return Layout((-1,) * rank, (-1,) * rank, 0, dtype)

    @property
    def is_dynamic(self) -> bool:
        return any(n < 0 for n in self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def span(self) -> tuple[int, int]:
        """[first, last] element index touched in the storage (empty tensors touch nothing: (offset, offset - 1))."""
        if self.numel == 0:
            return self.offset, self.offset - 1
        last = self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))
        return self.offset, last

    def storage_elements(self) -> int:
        """Elements of storage the layout needs, from element 0."""
        return self.span()[1] + 1

    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        return all(
            n == 1 or s == c
            for n, s, c in zip(self.shape, self.strides, contiguous_strides(self.shape), strict=True)
        )

    def is_dense(self) -> bool:
        """Non-overlapping and covering a contiguous range of storage (any order of dims)."""
        dims = sorted((s, n) for n, s in zip(self.shape, self.strides, strict=True) if n != 1)
        expected = 1
        for stride, size in dims:
            if stride != expected:
                return False
            expected *= size
        return True

    def addresses_like(self, other: Layout) -> bool:
        """Same elements at the same addresses (strides of size-1 dims address nothing)."""
        if (self.shape, self.dtype) != (other.shape, other.dtype):
            return False
        if self.numel == 0:
            return True
        return self.offset == other.offset and all(
            n == 1 or a == b for n, a, b in zip(self.shape, self.strides, other.strides, strict=True)
        )

    def with_offset(self, offset: int) -> Layout:
        return Layout(self.shape, self.strides, offset, self.dtype)

    # -- views (each returns the layout eager would give) --

    def view(self, shape: Sequence[int]) -> Layout | None:
        """`aten.view`: None when the strides cannot express it without a copy."""
        shape = infer_size(shape, self.numel)
        strides = _view_strides(self.shape, self.strides, shape)
        return None if strides is None else Layout(tuple(shape), strides, self.offset, self.dtype)

    def permute(self, dims: Sequence[int]) -> Layout:
        dims = [d % self.rank for d in dims] if self.rank else []
        if sorted(dims) != list(range(self.rank)):
            raise ValueError(f"permute dims {list(dims)} are not a permutation of {self.rank} dims")
        return Layout(
            tuple(self.shape[d] for d in dims), tuple(self.strides[d] for d in dims), self.offset, self.dtype
        )

    def transpose(self, a: int, b: int) -> Layout:
        if self.rank == 0:
            return self
        order = list(range(self.rank))
        a, b = a % self.rank, b % self.rank
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    def expand(self, shape: Sequence[int]) -> Layout:
        shape = list(shape)
        lead = len(shape) - self.rank
        if lead < 0:
            raise ValueError(f"expand to {shape} has fewer dims than {list(self.shape)}")
        sizes, strides = [], []
        for i, want in enumerate(shape):
            j = i - lead
            have, stride = (self.shape[j], self.strides[j]) if j >= 0 else (1, 0)
            if want == -1:
                want = have
            if have == want:
                sizes.append(have)
                strides.append(stride)
            elif have == 1:
                sizes.append(want)
                strides.append(0)
            else:
                raise ValueError(f"cannot expand size {have} to {want} in dim {i}")
        return Layout(tuple(sizes), tuple(strides), self.offset, self.dtype)

    def unsqueeze(self, dim: int) -> Layout:
        dim = dim % (self.rank + 1)
        stride = self.shape[dim] * self.strides[dim] if dim < self.rank else 1
        return Layout(
            self.shape[:dim] + (1,) + self.shape[dim:],
            self.strides[:dim] + (stride,) + self.strides[dim:],
            self.offset,
            self.dtype,
        )

    def squeeze(self, dims: Sequence[int] | None = None) -> Layout:
        if self.rank == 0:
            return self
        drop = set(range(self.rank)) if dims is None else {d % self.rank for d in dims}
        keep = [i for i in range(self.rank) if not (i in drop and self.shape[i] == 1)]
        return Layout(
            tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep), self.offset, self.dtype
        )

    def slice(self, dim: int, start: int | None, end: int | None, step: int) -> Layout:
        dim = dim % self.rank
        size = self.shape[dim]
        start, end, _ = slice(start, end, step).indices(size) if step > 0 else (0, 0, 1)
        if step <= 0:
            raise ValueError("slice step must be positive")
        length = max(0, (end - start + step - 1) // step)
        shape = list(self.shape)
        strides = list(self.strides)
        shape[dim] = length
        strides[dim] = self.strides[dim] * step
        offset = self.offset + start * self.strides[dim]
        return Layout(tuple(shape), tuple(strides), offset, self.dtype)

    def select(self, dim: int, index: int) -> Layout:
        dim = dim % self.rank
        size = self.shape[dim]
        if not -size <= index < size:
            raise ValueError(f"index {index} is out of range for dim {dim} of size {size}")
        index %= size
        return Layout(
            self.shape[:dim] + self.shape[dim + 1 :],
            self.strides[:dim] + self.strides[dim + 1 :],
            self.offset + index * self.strides[dim],
            self.dtype,
        )

    def as_strided(self, shape: Sequence[int], strides: Sequence[int], offset: int | None) -> Layout:
        return Layout(tuple(shape), tuple(strides), self.offset if offset is None else offset, self.dtype)

    # -- MLIR --

    def to_attr(self) -> ir.Attribute:
        from .dialect import LayoutAttr

        element = ir.Type.parse(self.dtype.mlir)
        return LayoutAttr.get(
            i64_array(self.shape), i64_array(self.strides), i64(self.offset), ir.TypeAttr.get(element)
        )

    @staticmethod
    def from_attr(attr: ir.Attribute) -> Layout:
        from .dialect import LayoutAttr

        attr = LayoutAttr(attr)
        dtype = dtypes.from_mlir(str(ir.TypeAttr(attr.dtype).value))
        return Layout(
            tuple(int_list(attr.shape)),
            tuple(int_list(attr.strides)),
            ir.IntegerAttr(attr.offset).value,
            dtype,
        )

    def __str__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)} strides {list(self.strides)} offset {self.offset}"


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))


def infer_size(shape: Sequence[int], numel: int) -> list[int]:
    """Resolves one -1 in a view shape, as `at::infer_size` does."""
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError(f"only one dimension can be inferred in {shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise ValueError(f"shape {shape} is invalid for {numel} elements")
        shape[shape.index(-1)] = numel // known
    elif known != numel:
        raise ValueError(f"shape {shape} is invalid for {numel} elements")
    return shape


def _view_strides(
    old_shape: Sequence[int], old_strides: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """ATen's `computeStride`: strides for viewing (old_shape, old_strides) as new_shape, or None."""
    if math.prod(old_shape) == 0:
        return tuple(old_strides) if list(old_shape) == list(new_shape) else contiguous_strides(new_shape)
    if not old_shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel, view_numel = 1, 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1 and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def view_layouts(
    name: str, src: Layout, args: list[Any], arg_layouts: list[Layout | None]
) -> list[Layout] | None:
    """Layouts of the results of ATen view op `name` (`args`: its constant arguments, `arg_layouts`: its
    tensor arguments' layouts) on `src`; None when a reshape cannot be a view (ATen copies)."""
    if name in ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"):
        layout = src.view(args[0])
        if layout is None and name != "aten.reshape.default":
            raise ValueError(f"cannot view {src} as {args[0]} without a copy")
        return None if layout is None else [layout]
    if name == "aten.view_as.default":
        return [src.view(arg_layouts[0].shape)]
    if name == "aten.permute.default":
        return [src.permute(args[0])]
    if name == "aten.transpose.int":
        return [src.transpose(args[0], args[1])]
    if name in ("aten.t.default", "aten.numpy_T.default"):
        return [src.permute(list(reversed(range(src.rank))))]
    if name == "aten.expand.default":
        return [src.expand(args[0])]
    if name == "aten.expand_as.default":
        return [src.expand(arg_layouts[0].shape)]
    if name == "aten.unsqueeze.default":
        return [src.unsqueeze(args[0])]
    if name == "aten.squeeze.default":
        return [src.squeeze()]
    if name == "aten.squeeze.dim":
        return [src.squeeze([args[0]])]
    if name == "aten.squeeze.dims":
        return [src.squeeze(args[0])]
    if name == "aten.slice.Tensor":
        dim, start, end, step = args
        return [src.slice(dim, start, end, step)]
    if name == "aten.select.int":
        return [src.select(args[0], args[1])]
    if name == "aten.unfold.default":  # windows of `size` every `step` along `dim`, as a new last dim
        dim, size, step = args[0] % max(src.rank, 1), args[1], args[2]
        shape, strides = list(src.shape), list(src.strides)
        if src.rank:
            shape[dim], strides[dim] = (src.shape[dim] - size) // step + 1, src.strides[dim] * step
        return [src.as_strided([*shape, size], [*strides, src.strides[dim] if src.rank else 1], None)]
    if name == "aten.diagonal.default":
        offset, dim1, dim2 = args
        first, second = dim1 % src.rank, dim2 % src.rank
        length = max(0, min(src.shape[first] + min(offset, 0), src.shape[second] - max(offset, 0)))
        start = src.offset + (offset * src.strides[second] if offset >= 0 else -offset * src.strides[first])
        kept = [i for i in range(src.rank) if i not in (first, second)]
        shape = [src.shape[i] for i in kept] + [length]
        strides = [src.strides[i] for i in kept] + [src.strides[first] + src.strides[second]]
        return [src.as_strided(shape, strides, start if length else src.offset)]
    if name == "aten.narrow.default":
        dim, start, length = args
        start = start % src.shape[dim] if start < 0 else start
        return [src.slice(dim, start, start + length, 1)]
    if name in ("aten.alias.default", "aten.detach.default"):
        return [src]
    if name == "aten.as_strided.default":
        return [src.as_strided(args[0], args[1], args[2])]
    if name == "aten.flatten.using_ints":
        start, end = (a % max(src.rank, 1) for a in args)
        shape = list(src.shape[:start]) + [math.prod(src.shape[start : end + 1])] + list(src.shape[end + 1 :])
        layout = src.view(shape)
        return None if layout is None else [layout]
    if name == "aten.unflatten.int":
        dim, sizes = args[0] % src.rank, list(args[1])
        shape = list(src.shape[:dim]) + sizes + list(src.shape[dim + 1 :])
        return [src.view(shape)]
    if name in ("aten.split.Tensor", "aten.split_with_sizes.default", "aten.chunk.default"):
        dim = args[1] % src.rank
        size = src.shape[dim]
        if name == "aten.split.Tensor":
            sizes = [min(args[0], size - s) for s in range(0, size, args[0])] or [0]
        elif name == "aten.chunk.default":
            step = -(-size // args[0])
            sizes = [min(step, size - s) for s in range(0, size, step)]
        else:
            sizes = list(args[0])
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return [src.slice(dim, s, s + n, 1) for s, n in zip(starts, sizes, strict=True)]
    if name == "aten.unbind.int":
        dim = args[0] % src.rank
        return [src.select(dim, i) for i in range(src.shape[dim])]
    raise ValueError(f"no layout rule for view op {name}")

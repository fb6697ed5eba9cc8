"""The gathers pygraph generates kernels for: ATen ops that read their source where an index tensor says.

`embedding`, `index_select`, `gather` and `index.Tensor` with one index tensor (`x[:, idx]`, `take`)
give, for every element of their result, one element of a source tensor: the one at the element's own
position in every dim of the source but one, and at the value of the index tensor in that one
(`read_gather` says which dim, and which of the result's dims the index's are). classify-ops gives them
the class `gather` when a kernel can compute them (else `library`, with the reason), fuse-pointwise
groups them like a pointwise op of their result's shape (a token embedding, its position embedding's add
and the layer norm after them are one kernel), and codegen-triton loads the index, then the source at
the computed offset. This is a table, not a pass.

What a kernel computing one must honour:
- its source is read at other elements than the lane's: it is an input of the kernel (in memory: the
  group computing the gather never computes it), and no output of the kernel takes its bytes
  (`gathered_arguments`: plan-memory, write-in-place);
- the index of `embedding`, `index_select` and `index` spans some of the result's dims only: it is an
  input of the kernel too, loaded at its own strides over those dims; `gather`'s index broadcasts to the
  result like a pointwise operand and may be computed in the kernel;
- bounds, as eager CUDA: an index must lie in [0, n) (`embedding`, `index_select` and `gather` do not
  count negative indices from the end: CPU raises, CUDA fails a device-side assert) or in [-n, n) for
  `index`, which counts them from the end (`wrap`). The load is masked to the lanes in range, so no
  memory outside the source is touched, and the kernel stops where a lane is out of range (`TRAP`);
- `embedding`'s padding_idx only changes the gradient (the forward reads that row as any other);
  max_norm writes the weight, which the importer refuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from ..ir.torch_types import is_tensor, tensor_info
from .pointwise import constant_value

GATHERS = frozenset(
    {"aten.embedding.default", "aten.index_select.default", "aten.gather.default", "aten.index.Tensor"}
)

# The bounds check. Triton 3.6 compiles `tl.device_assert` only in debug mode (`semantic.device_assert`
# returns at once unless `options.debug`; the interpreter's options default to the same), and debug mode
# also checks every 32-bit integer add and multiply for overflow; pygraph compiles without it. So a kernel
# stops itself: `trap_unless(ok, index)` runs PTX `trap` in a lane whose index is out of range and passes
# the index on to the load's address (a pure instruction the load depends on, so it neither orders other
# memory accesses nor can be dropped). The launch fails, and so does the next synchronisation ("unspecified
# launch failure"; eager's says "device-side assert triggered"), the CUDA context unusable after it, as
# after eager's assert. Under Triton's interpreter, which cannot run inline PTX, the emulator binds
# `trap_unless` to a function raising IndexError (`backend/triton_source.py`). Its cost, measured on an
# H200 (`bench/probes/probe_gather.py`, GPU time per call): BERT's three embeddings, their adds and layer
# norm as one kernel take 2.12 us at [1, 128] x 768 with the check, 1.83 without, against 6.99 us for
# ATen's three gathers and the add-and-norm kernel; 40.8 against 39.2 us at [32, 512] (ATen's: 109.8 us);
# DeBERTa's c2p gather in its softmax kernel 3.23 against 3.24 us. The load is masked all the same.
TRAP = "trap_unless"
TRAP_HELPER = f"""@triton.jit
def {TRAP}(ok, index):
    if index.dtype == tl.int64:
        return tl.inline_asm_elementwise(
            "{{ .reg .pred p; setp.eq.s32 p, $1, 0; @p trap; mov.b64 $0, $2; }}",
            "=l,r,l", [ok.to(tl.int32), index], dtype=tl.int64, is_pure=True, pack=1,
        )
    return tl.inline_asm_elementwise(
        "{{ .reg .pred p; setp.eq.s32 p, $1, 0; @p trap; mov.b32 $0, $2; }}",
        "=r,r,r", [ok.to(tl.int32), index], dtype=tl.int32, is_pure=True, pack=1,
    )


"""


@dataclass(frozen=True)
class Gather:
    """One gather: result element p is source element p' where p' is p with the index's value at `dim`.

    With `span` None (`gather`) the result's dims are the source's and the index has the result's shape
    (broadcast like a pointwise operand); else (`embedding`, `index_select`, `index`) the index's dims
    replace the source's `dim` in the result, as its dims [dim, dim + span), the source's other dims
    keeping their order around them."""

    source: ir.Value
    index: ir.Value
    dim: int  # the source's dim the index selects in
    span: int | None
    wrap: bool  # negative indices count from the end (`index`); else they are out of range

    @property
    def in_memory(self) -> list[ir.Value]:
        """The operands read at other elements than the lane's, which no kernel computing it computes."""
        return [self.source] if self.span is None else [self.source, self.index]

    def source_strides(self, source: Layout) -> tuple[int, ...]:
        """The source's strides over the result's dims, 0 along those the index selects in."""
        strides = source.strides
        if self.span is None:
            return tuple(0 if k == self.dim else s for k, s in enumerate(strides))
        return (*strides[: self.dim], *(0,) * self.span, *strides[self.dim + 1 :])

    def index_strides(self, index: Layout, rank: int) -> tuple[int, ...]:
        """The strides over the `rank` dims of the result of an index spanning some of them (0 along the
        others; `span` is not None: `gather`'s index broadcasts to its result like any operand)."""
        own = index.strides if index.rank == self.span else (0,) * self.span  # (a 0-d index_select index)
        return (0,) * self.dim + own + (0,) * (rank - self.dim - self.span)


def read_gather(op: Any) -> Gather:
    """The gather `op` computes; ValueError saying why when a kernel cannot compute it."""
    name = aten.aten_name(op)
    operands = list(op.operands)
    if name == "aten.embedding.default":
        source, index, dim = operands[0], operands[1], 0
    elif name in ("aten.index_select.default", "aten.gather.default"):
        source, index, dim = operands[0], operands[2], constant_value(operands[1])
    elif name == "aten.index.Tensor":
        source, (dim, index) = operands[0], single_index(operands[1])
    else:
        raise ValueError(f"{name} is no gather")
    source_shape, _ = _static(source, "source")
    index_shape, index_dtype = _static(index, "index")
    shape, _ = _static(op.results[0], "result")
    if not source_shape:
        raise ValueError("its source is 0-d")
    if index_dtype.is_float or not index_dtype.is_signed:
        raise ValueError(f"its index is {index_dtype.name}, not a signed integer tensor")
    if not isinstance(dim, int):
        raise ValueError("its dim is not known at compile time")
    dim %= len(source_shape)
    if name == "aten.gather.default":
        # (fuse-pointwise may give the body's gather a smaller index that broadcasts to the result)
        fits = len(shape) == len(source_shape) and all(
            n <= m for k, (n, m) in enumerate(zip(shape, source_shape, strict=True)) if k != dim
        )
        if not fits or not _broadcasts(index_shape, shape):
            raise ValueError(f"its index {index_shape} does not fit its source {source_shape}")
        return Gather(source, index, dim, None, wrap=False)
    span = 1 if name == "aten.index_select.default" else len(index_shape)
    expected = [*source_shape[:dim], *(index_shape or [1] * span), *source_shape[dim + 1 :]]
    if expected != shape:
        raise ValueError(f"its result {shape} is not the {expected} its source and index give")
    return Gather(source, index, dim, span, wrap=name == "aten.index.Tensor")


def refusal(op: Any) -> str | None:
    """Why no kernel computes the gather `op`, or None (also for ops that are no gathers)."""
    if aten.aten_name(op) not in GATHERS:
        return None
    try:
        read_gather(op)
    except ValueError as exc:
        return str(exc)
    return None


def gathered_arguments(body: Sequence[Any]) -> set[int]:
    """The arguments of a fused function (by position) that its gathers read as sources: read at other
    elements than the lane's, so no output of its kernel may take their bytes."""
    found = set()
    for op in body:
        if d.CLASS in op.attributes and ir.StringAttr(op.attributes[d.CLASS]).value == "gather":
            source = read_gather(op).source
            if isinstance(source, ir.BlockArgument):
                found.add(source.arg_number)
    return found


def single_index(indices: ir.Value) -> tuple[int, ir.Value]:
    """(position, tensor) of the one index tensor in the list `index.Tensor` takes, the others None."""
    made = indices.owner if isinstance(indices, ir.OpResult) else None
    if made is None or made.operation.name != "torch.prim.ListConstruct":
        raise ValueError("its indices are not a list built in place")
    tensors = [(k, v) for k, v in enumerate(made.operands) if is_tensor(v.type)]
    if len(tensors) != 1:
        raise ValueError(f"it indexes by {len(tensors)} tensors, not one")
    ((position, index),) = tensors
    if any(constant_value(v) is not None for v in made.operands if v != index):
        raise ValueError("its indices hold something other than one tensor and None")
    return position, index


def _broadcasts(shape: list[int], to: list[int]) -> bool:
    lead = len(to) - len(shape)
    return lead >= 0 and all(n in (1, m) for n, m in zip(shape, to[lead:], strict=True))


def _static(value: ir.Value, what: str) -> tuple[list[int], Any]:
    info = tensor_info(value.type)
    if info is None or -1 in info[0]:
        raise ValueError(f"its {what} has no static shape")
    return info

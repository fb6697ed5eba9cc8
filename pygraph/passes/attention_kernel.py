"""The generated attention kernel: `scaled_dot_product_attention` as one flash-attention style Triton kernel.

ATen's fused float32 attention (the memory-efficient kernel) and the frontend's decomposition into
matmul, softmax, matmul (`frontend/attention.py`) each cost a vendor call or three launches and, for the
latter, a write and read of the scores. This kernel never writes the scores: one program per head and
block of BLOCK_M query rows loops over blocks of BLOCK_N keys, computes the block's scores with `tl.dot`,
scales and masks them, and keeps a running maximum and sum per row (online softmax, float32), rescaling
its accumulator of probabilities times values as the maximum grows; it divides once at the end.

Like the other generated kernels it is specialized to its buffers: sizes and strides are constants, every
operand is read at its own strides (heads made by `view(B, L, H, E).transpose(1, 2)` need no copy; leading
dims of any number are the "heads", a broadcast mask has stride 0) and the result is written in the
layout the plan gives it (eager's). Semantics are eager's: the scale defaults to 1/sqrt(E); a boolean mask
keeps where True, a float mask is added; `is_causal` keeps `tril(ones(Lq, Lk))` (top-left aligned, as
ATen defines it); a row that the mask hides entirely gives zeros, as ATen's fused CUDA kernels do. Head
dims are padded to powers of two under masks, sequence tails are masked. `tl.dot` runs in the precision
the frontend recorded (`pygraph.attention_kernel`: "tf32" where TF32 matmuls were allowed at compile
time, else "ieee"). Half-precision q, k and v are read as float32 (TF32 holds their products exactly) and
the result rounded once. With `enable_gqa`, each key and value head serves a group of query heads in a
row: q's heads are indexed as (key head, group), k and v with stride 0 along the group. The frontend
leaves half-precision attentions to ATen unless forced (`frontend/attention.py`): one program per head
and block of queries leaves a decoding step's few programs each reading all its keys, where ATen's split
the keys; a split of the keys with a second pass combining the parts is what would win there.

`unsupported` says what the kernel cannot compute: the frontend routes only other attentions to it
(`frontend/attention.py`), classify-ops and this writer check the recorded choice with it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.dtypes import DType
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info
from .codegen_triton import COMBINE, Kernel, Writer, conjunction, indices, merge_dims, pow2, spans_overflow
from .pointwise import FLOAT32, NO_VALUE, constant_value, convert

ATTENTION = "aten.scaled_dot_product_attention.default"
PRECISIONS = ("ieee", "tf32")  # values of `pygraph.attention_kernel`: tl.dot's input precision
KERNEL_DTYPES = ("float32", "float16", "bfloat16")  # (half operands are read as float32)
MAX_HEAD_DIM = 256  # E and Ev: beyond, a program's tiles no longer fit registers and shared memory
_MIN_DOT = 16  # the smallest block along each dim of tl.dot
_SMS = 132  # an H100's (and H200's) multiprocessors: enough programs to fill them


Tensor = tuple[tuple[int, ...], str]  # (sizes, dtype name), what `unsupported` needs of an operand


def unsupported(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    dropout_p: float,
    is_causal: bool,
    enable_gqa: bool,
) -> str | None:
    """Why the generated kernel cannot compute this attention, or None if it can."""
    (q, dtype), (k, k_dtype), (v, v_dtype) = query, key, value
    if dropout_p:
        return f"dropout_p is {dropout_p} (the kernel has no dropout)"
    if dtype not in KERNEL_DTYPES or k_dtype != dtype or v_dtype != dtype:
        return f"q, k, v are {dtype}, {k_dtype}, {v_dtype}; the kernel computes {', '.join(KERNEL_DTYPES)}"
    if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
        return f"q, k, v have ranks {len(q)}, {len(k)}, {len(v)}; the kernel wants one rank of at least 2"
    lead = 3 if enable_gqa else 2  # with grouped-query heads, k and v have heads of their own (dim -3)
    if len(q) < lead or q[:-lead] != k[:-lead] or q[:-lead] != v[:-lead] or q[-1] != k[-1] or k[-2] != v[-2]:
        return f"q {list(q)}, k {list(k)}, v {list(v)} are not [..., Lq, E], [..., Lk, E], [..., Lk, Ev]"
    if enable_gqa and (k[-3] != v[-3] or k[-3] < 1 or q[-3] % k[-3]):
        return f"with enable_gqa, k's and v's {k[-3]} and {v[-3]} heads must divide q's {q[-3]}"
    if min(*q, *k, *v) < 1:
        return "a size is 0 or dynamic"
    if max(q[-1], v[-1]) > MAX_HEAD_DIM:
        return f"head dims {q[-1]} and {v[-1]} exceed {MAX_HEAD_DIM}"
    if mask is not None:
        sizes, mask_dtype = mask
        scores = (*q[:-1], k[-2])
        if is_causal:
            return "is_causal is set together with a mask"
        if mask_dtype not in ("bool", dtype):
            return f"the mask is {mask_dtype}: it must be bool or q's dtype ({dtype})"
        lead = len(scores) - len(sizes)
        if lead < 0 or any(n not in (1, scores[lead + i]) for i, n in enumerate(sizes)):
            return f"the mask {list(sizes)} does not broadcast to the scores {list(scores)}"
    return None


@dataclasses.dataclass(frozen=True)
class Attention:
    """What the kernel computes for one `scaled_dot_product_attention` op."""

    batch: tuple[int, ...]  # q's leading dims (heads)
    queries: int
    keys: int
    dim: int  # E, of q and k
    value_dim: int  # Ev
    group: int  # query heads per key and value head (enable_gqa; else 1)
    dtype: DType
    mask: DType | None  # the mask's dtype (bool: keep where True; float: added), None without a mask
    causal: bool
    scale: float
    precision: str  # tl.dot's input precision


def read_attention(op: Any) -> Attention:
    """The attention an op marked `pygraph.attention_kernel` computes; ValueError naming what the kernel
    cannot do (the scalar arguments must be constants)."""
    if aten.aten_name(op) != ATTENTION:
        raise ValueError(f"{d.ATTENTION_KERNEL} marks {aten.aten_name(op)}, not {ATTENTION}")
    precision = ir.StringAttr(op.attributes[d.ATTENTION_KERNEL]).value
    if precision not in PRECISIONS:
        raise ValueError(f"{d.ATTENTION_KERNEL} is '{precision}', not one of {', '.join(PRECISIONS)}")
    operands = list(op.operands)
    if len(operands) != 8:
        raise ValueError(f"scaled_dot_product_attention has {len(operands)} operands, not 8")
    infos = [tensor_info(v.type) for v in operands[:3]]
    if any(info is None for info in infos):
        raise ValueError("q, k and v must be ranked tensors")
    mask = tensor_info(operands[3].type)
    if mask is None and constant_value(operands[3]) is not None:
        raise ValueError("the mask must be a ranked tensor or None")
    dropout_p, is_causal, scale, enable_gqa = (constant_value(v) for v in operands[4:])
    if NO_VALUE in (dropout_p, is_causal, scale, enable_gqa):
        raise ValueError("dropout_p, is_causal, scale and enable_gqa must be known at compile time")
    q, k, v = ((tuple(sizes), dtype.name) for sizes, dtype in infos)
    reason = unsupported(
        q, k, v, None if mask is None else (tuple(mask[0]), mask[1].name), dropout_p, is_causal, enable_gqa
    )
    if reason is not None:
        raise ValueError(f"the attention kernel cannot compute this attention: {reason}")
    return Attention(
        batch=q[0][:-2],
        queries=q[0][-2],
        keys=k[0][-2],
        dim=q[0][-1],
        value_dim=v[0][-1],
        group=q[0][-3] // k[0][-3] if enable_gqa else 1,
        dtype=infos[0][1],
        mask=None if mask is None else mask[1],
        causal=bool(is_causal),
        scale=1 / math.sqrt(q[0][-1]) if scale is None else float(scale),
        precision=precision,
    )


def attention_blocks(heads: int, queries: int, keys: int, dim: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages) for `heads` heads of `queries` x `keys` scores and a
    (padded) head dim `dim`, from `bench/probes/probe_attention_kernel.py` (TF32 dots, H200): what counts
    is filling the multiprocessors. 128 query rows and 8 warps per program where that still makes a
    program per multiprocessor (MobileBERT, BlenderBot, 4 x 16 x 512 x 512: 10-20% faster than 64 rows),
    else 32 rows where that does (mt5, a causal 12 x 1024 x 1024: 1.3x), else 16 (ViT-Tiny's 3 heads of
    197 queries: 7.7 against 14.4 us at 64 rows; BERT's 12 of 128: 5.7 against 8.2); 64 rows with 4 warps
    measured slower than both neighbours everywhere. Key blocks of 64, 32 past head dims of 128 (two
    stages of key and value tiles must fit in shared memory); 4 warps under 128 rows; two stages, so the
    next tiles load while this one computes. Short sequences shrink the blocks to their power-of-two
    lengths, not below 16 (the smallest tl.dot)."""
    block_m = next((m for m in (128, 32) if heads * -(-queries // m) >= _SMS), _MIN_DOT)
    block_m = min(block_m, max(_MIN_DOT, pow2(queries)))
    block_n = min(64 if dim <= 128 else 32, max(_MIN_DOT, pow2(keys)))
    return block_m, block_n, 8 if block_m == 128 else 4, 2


class AttentionWriter(Writer):
    """Writes the kernel of a fused function holding one marked attention op (module docstring)."""

    def __init__(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        compute = [op for op in self.body_ops if not op.operation.name.startswith("torch.constant.")]
        if len(compute) != 1 or aten.aten_name(compute[0]) != ATTENTION or len(self.results) != 1:
            raise ValueError("an attention kernel computes one scaled_dot_product_attention and nothing else")
        op = compute[0]
        if self.results[0] != op.results[0]:
            raise ValueError("an attention kernel returns the attention's result")
        self.attention = read_attention(op)
        tensors = [v for v in list(op.operands)[:4] if isinstance(v, ir.BlockArgument)]
        if len(tensors) != (3 if self.attention.mask is None else 4):
            raise ValueError("q, k, v and the mask of an attention kernel must be its inputs")
        self.q, self.k, self.v = (v.arg_number for v in tensors[:3])
        self.m = tensors[3].arg_number if self.attention.mask is not None else None
        self.out = len(self.args)  # the buffer index of the result

    def write(self) -> Kernel:
        a = self.attention
        heads = math.prod(a.batch)
        dim, value_dim = max(_MIN_DOT, pow2(a.dim)), max(_MIN_DOT, pow2(a.value_dim))
        block_m, block_n, warps, stages = attention_blocks(heads, a.queries, a.keys, max(dim, value_dim))
        row_blocks = -(-a.queries // block_m)
        grid = heads * row_blocks
        wide = grid * block_m > 2**31 - 1 or spans_overflow(self.layouts)
        self._head_offsets(wide)
        # Bounds that loads and stores check: the tails of query and key blocks, the padding of head dims.
        row_tail = f"rows < {a.queries}" if a.queries % block_m else ""
        key_tail = a.keys % block_n != 0
        e_pad = dim != a.dim
        ev_pad = f"ev < {a.value_dim}" if value_dim != a.value_dim else ""
        may_hide = a.mask is not None  # a row may see no key in a block, or at all
        shift = "m_use" if may_hide else "m_new"  # what the scores' exponents subtract
        dot = f'input_precision="{a.precision}"'
        kind = "causal" if a.causal else "no mask" if a.mask is None else f"{a.mask.name} mask"
        pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
        lines = [
            f"# attention over {list(a.batch)} heads of {a.queries} queries x {a.keys} keys, head dims {a.dim}"
            f" -> {a.value_dim}, scale {a.scale!r}, {kind}; {grid} programs of {block_m} queries, key blocks"
            f" of {block_n}; dots in {a.precision}",
            *self._dereference(),
            f"pid = {pid}",
            f"bh = {'pid' if row_blocks == 1 else f'pid // {row_blocks}'}",
            f"first = {'0' if row_blocks == 1 else f'(pid % {row_blocks}) * {block_m}'}",
            *self.head_lines,
            f"rows = first + tl.arange(0, {block_m})[:, None]",
            f"e_row = {_index(f'tl.arange(0, {dim})', wide)}[None, :]",
            f"e_col = {_index(f'tl.arange(0, {dim})', wide)}[:, None]",
            f"ev = {_index(f'tl.arange(0, {value_dim})', wide)}[None, :]",
            f"q = {self._load(self.q, 'rows', 'e_row', row_tail, e_pad and f'e_row < {a.dim}')}",
            f'm_i = tl.full([{block_m}, 1], float("-inf"), tl.float32)',
            f"l_i = tl.full([{block_m}, 1], 0.0, tl.float32)",
            f"acc = tl.full([{block_m}, {value_dim}], 0.0, tl.float32)",
        ]
        stop = str(a.keys)
        if a.causal:  # key blocks past the block's last row are hidden entirely
            lines.append(f"stop = tl.minimum(first + {block_m}, {a.keys})")
            stop = "stop"
        cols_tail = key_tail and f"cols < {a.keys}"
        body = [
            f"keys = {_index(f'start + tl.arange(0, {block_n})', wide)}",
            "cols = keys[None, :]",
            "key_rows = keys[:, None]",
            f"kt = {self._load(self.k, 'cols', 'e_col', cols_tail, e_pad and f'e_col < {a.dim}')}",
            f"s = tl.dot(q, kt, {dot}) * {a.scale!r}",
        ]
        if a.mask is not None:
            load = f"tl.load({self._at(self.m, 'rows', 'cols')}{_within(row_tail, cols_tail, other='0')})"
            bool_mask = a.mask.name == "bool"
            body.append(
                f's = tl.where({load}, s, float("-inf"))'
                if bool_mask
                else f"s = s + {convert(load, a.mask, FLOAT32)}"
            )
        if a.causal:
            body.append('s = tl.where(cols <= rows, s, float("-inf"))')
        if key_tail:
            body.append(f's = tl.where({cols_tail}, s, float("-inf"))')
        body += [
            f"m_new = tl.maximum(m_i, tl.reduce(s, 1, {COMBINE['max']}, keep_dims=True))",
            # where a row has seen no key yet, subtract 0 instead of -inf (-inf - -inf is NaN)
            *(['m_use = tl.where(m_new == float("-inf"), 0.0, m_new)'] if may_hide else []),
            f"alpha = tl.exp(m_i - {shift})",
            f"p = tl.exp(s - {shift})",
            f"l_i = l_i * alpha + tl.reduce(p, 1, {COMBINE['sum']}, keep_dims=True)",
            f"vb = {self._load(self.v, 'key_rows', 'ev', key_tail and f'key_rows < {a.keys}', ev_pad)}",
            f"acc = acc * alpha + tl.dot(p, vb, {dot})",
            "m_i = m_new",
        ]
        lines.append(f"for start in range(0, {stop}, {block_n}):")
        lines += [f"    {line}" for line in body]
        # a row that saw no key has l_i = 0 and acc = 0: zeros, as eager gives
        lines.append(f"out = acc / {'tl.where(l_i == 0.0, 1.0, l_i)' if may_hide else 'l_i'}")
        lines.append(
            f"tl.store({self._at(self.out, 'rows', 'ev')}, {convert('out', FLOAT32, a.dtype)}"
            f"{_within(row_tail, ev_pad, other=None)})"
        )
        return self._template_kernel(lines, grid, warps, "attention", stages)

    def _head_offsets(self, wide: bool) -> None:
        """Each buffer's strides over [*heads, rows, columns] (the mask's expanded to the scores' shape),
        and the lines computing the head's index along each (merged) leading dim from `bh`."""
        a = self.attention
        buffers = [self.q, self.k, self.v, self.out] + ([self.m] if self.m is not None else [])
        self.strides = {b: self.layouts[b].strides for b in buffers}
        if self.m is not None:
            self.strides[self.m] = self.layouts[self.m].expand((*a.batch, a.queries, a.keys)).strides
        batch, n = list(a.batch), len(a.batch)
        if a.group > 1:  # q's heads as (key head, group): k and v repeat along the group (stride 0)
            batch[-1:] = [batch[-1] // a.group, a.group]
            for b, s in self.strides.items():
                shared = b in (self.k, self.v)
                self.strides[b] = (
                    *s[: n - 1],
                    s[n - 1] if shared else s[n - 1] * a.group,
                    0 if shared else s[n - 1],
                    *s[n:],
                )
            n += 1
        merged = merge_dims(batch, {b: s[:n] for b, s in self.strides.items()})
        self.head_lines, self.head_offset = indices("bh", "bd", *merged)

    def _load(self, b: int, row: str, col: str, *bounds: str | bool) -> str:
        """Buffer `b` at (`row`, `col`) of the program's head within `bounds`, as float32: half-precision
        q, k and v are multiplied and summed in it (exact products, as ATen's kernels take them)."""
        return convert(f"tl.load({self._at(b, row, col)}{_within(*bounds)})", self.attention.dtype, FLOAT32)

    def _at(self, b: int, row: str, col: str) -> str:
        """The addresses of buffer `b` at (`row`, `col`) of the program's head."""
        name = "out0" if b == self.out else f"in{b}"
        base, (row_stride, col_stride) = self.head_offset(b), self.strides[b][-2:]
        terms = [base] if base != "0" else []
        for index, stride in ((row, row_stride), (col, col_stride)):
            if stride:
                terms.append(index if stride == 1 else f"{index} * {stride}")
        return " + ".join([name, *terms])


def _index(expr: str, wide: bool) -> str:
    """`expr` (an index) in 64 bits where offsets may exceed 32."""
    return f"({expr}).to(tl.int64)" if wide else expr


def _within(*bounds: str | bool, other: str | None = "0.0") -> str:
    """The mask arguments of a load (`other` where masked off) or store (`other=None`) that must stay
    within `bounds` (empty or False: no bound)."""
    mask = conjunction(*bounds)
    if not mask:
        return ""
    return f", mask={mask}" + (f", other={other}" if other else "")

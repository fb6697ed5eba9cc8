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
row: q's heads are indexed as (key head, group), k and v with stride 0 along the group.

One program per head and block of queries leaves a decoding step (a query or a few per head) a few
programs each reading all its keys. There the attention runs split (`split_size`, the plan pass
split-keys): a first kernel takes one key head and one split of its keys per program, with all the query
rows that head serves (the group's heads times the queries, at most SPLIT_ROWS: one tl.dot block), and
writes each row's maximum, sum of exponentials and weighted values into a float32 buffer of parts [key
heads, splits, rows, Ev + 2]; a second kernel, one program per query row, rescales the parts to their
common maximum and divides. Keys and values are read once per key head, by many programs
(`probe-split-keys-s27-h200.log`: a bfloat16 step of 16 query heads over 4 key heads of 512 keys in 4.6
us against ATen's 12.8 in the same graph).

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
from .codegen_triton import (
    COMBINE,
    Kernel,
    Writer,
    conjunction,
    indices,
    merge_dims,
    pow2,
    spans_overflow,
    term,
)
from .pointwise import FLOAT32, NO_VALUE, constant_value, convert

ATTENTION = "aten.scaled_dot_product_attention.default"
PRECISIONS = ("ieee", "tf32")  # values of `pygraph.attention_kernel`: tl.dot's input precision
KERNEL_DTYPES = ("float32", "float16", "bfloat16")  # (half operands are read as float32)
MAX_HEAD_DIM = 256  # E and Ev: beyond, a program's tiles no longer fit registers and shared memory
_MIN_DOT = 16  # the smallest block along each dim of tl.dot
_SMS = 132  # an H100's (and H200's) multiprocessors: enough programs to fill them
SPLIT_STAGES = ("parts", "combine")  # values of `pygraph.split_keys`: which kernel of a split attention
SPLIT_ROWS = 64  # query rows per key head a split attention takes (one tl.dot block of them)
SPLIT_MIN_KEYS = 128  # fewer keys: not measured, the whole kernel's blocks are few
_SPLIT_PROGRAMS = 64  # programs a split should make at least (`split_size`)
_MAX_SPLITS = 64


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


def split_size(
    heads: int, group: int, queries: int, keys: int, setting: str = "auto", half: bool = False
) -> int | None:
    """Keys per program where an attention of `heads` key heads (over every batch dim), each serving
    `group` query heads of `queries` queries, and `keys` keys runs split (module docstring); None where it
    runs whole. `setting` is PYGRAPH_SPLIT_KEYS: "auto" (the rule below), "off", or the keys per program
    (a power of two, at least 16), taken wherever the rows (group times queries) fit one program. `half`:
    the attention is in float16 or bfloat16, where it runs whole in ATen's kernels, not this one.

    Where the whole kernel makes a program per multiprocessor already (at least one per query head and
    block of 16 queries), a float32 attention stays whole: the parts' traffic (a float32 row of Ev + 2
    values per split and query row, written and read) would then buy nothing. A half-precision one splits
    anyway: against ATen's cuDNN kernel (and a copy it makes) the split took a decoding step of 16
    sequences (64 key heads of 512 keys) from 0.618 to 0.556 ms and one of 32 from 0.684 to 0.626
    (H100, `probe-decode-s30g-split-h100.log`).

    The rule, from `probe-split-keys-s27-h200.log` (bfloat16, 4 key heads of 16 query rows, head dim 128):
    splits of 64 keys (512 to 4096 keys: 4.6 to 7.0 us, ATen 11.5 to 12.8 us), 32 where that leaves fewer
    than 64 programs (512 keys: 4.6 against 5.0); at most 64 splits (the parts' traffic grows with them);
    from SPLIT_MIN_KEYS keys on (`probe-gqa-s27-h200.log`, the generated kernels: 128 keys split in 3.9 us
    against 4.7 whole and ATen's 8.6, 256 keys of head dim 64 in 3.7 against 6.1 and 10.7, 2048 keys in 7.0
    against 48.8 and 12.5)."""
    rows = group * queries
    if setting == "auto":
        whole = heads * group * -(-queries // _MIN_DOT)
        if rows > SPLIT_ROWS or keys < SPLIT_MIN_KEYS or (whole >= _SMS and not half):
            return None
        size = next((n for n in (64, 32) if heads * -(-keys // n) >= _SPLIT_PROGRAMS), _MIN_DOT)
        size = max(size, pow2(-(-keys // _MAX_SPLITS)))
    elif setting == "off":
        return None
    else:
        size = int(setting) if setting.isdigit() else 0
        if size < _MIN_DOT or size & (size - 1):
            raise ValueError(
                f"PYGRAPH_SPLIT_KEYS must be auto, off or a power of two of at least 16, not {setting!r}"
            )
        if rows > SPLIT_ROWS:
            return None
    return size if keys > size else None


class AttentionWriter(Writer):
    """Writes the kernel of a fused function holding one marked attention op (module docstring)."""

    def __init__(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        self._read_attention()
        self.out = len(self.args)  # the buffer index of the result

    def _read_attention(self) -> None:
        """The attention op, and the buffer indices of q, k, v and the mask (the function's arguments)."""
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
        # head dims padded to tl.dot's blocks (powers of two, at least 16)
        self.dim = max(_MIN_DOT, pow2(self.attention.dim))
        self.value_dim = max(_MIN_DOT, pow2(self.attention.value_dim))
        self.ev_pad = self.value_dim != self.attention.value_dim and f"ev < {self.attention.value_dim}"

    def write(self) -> Kernel:
        a = self.attention
        heads = math.prod(a.batch)
        dim, value_dim = self.dim, self.value_dim
        block_m, block_n, warps, stages = attention_blocks(heads, a.queries, a.keys, max(dim, value_dim))
        row_blocks = -(-a.queries // block_m)
        grid = heads * row_blocks
        wide = grid * block_m > 2**31 - 1 or spans_overflow(self.layouts)
        self._head_offsets(wide, [self.q, self.k, self.v, self.out, *self._mask()], group_apart=False)
        row_tail = f"rows < {a.queries}" if a.queries % block_m else ""
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
            *self._starts(block_m, "rows", None, row_tail),
        ]
        stop = str(a.keys)
        if a.causal:  # key blocks past the block's last row are hidden entirely
            lines.append(f"stop = tl.minimum(first + {block_m}, {a.keys})")
            stop = "stop"
        lines.append(f"for start in range(0, {stop}, {block_n}):")
        tail = str(a.keys) if a.keys % block_n else ""
        may_hide = a.mask is not None  # a row may see no key in a block, or at all
        body = self._key_block(block_n, "rows", None, row_tail, tail, may_hide)
        lines += [f"    {line}" for line in body]
        # a row that saw no key has l_i = 0 and acc = 0: zeros, as eager gives
        lines.append(f"out = acc / {'tl.where(l_i == 0.0, 1.0, l_i)' if may_hide else 'l_i'}")
        lines.append(
            f"tl.store({self._at(self.out, 'rows', 'ev')}, {convert('out', FLOAT32, a.dtype)}"
            f"{_within(row_tail, self.ev_pad, other=None)})"
        )
        return self._template_kernel(lines, grid, warps, "attention", stages)

    def _mask(self) -> list[int]:
        return [] if self.m is None else [self.m]

    def _starts(self, block_m: int, row: str | None, group: str | None, row_tail: str) -> list[str]:
        """The head dims' ranges, the program's query rows of q and the online softmax's start."""
        a, dim, value_dim, wide = self.attention, self.dim, self.value_dim, self.wide
        e_pad = dim != a.dim and f"e_row < {a.dim}"
        return [
            f"e_row = {_index(f'tl.arange(0, {dim})', wide)}[None, :]",
            f"e_col = {_index(f'tl.arange(0, {dim})', wide)}[:, None]",
            f"ev = {_index(f'tl.arange(0, {value_dim})', wide)}[None, :]",
            f"q = {self._load(self.q, row, 'e_row', group, row_tail, e_pad)}",
            f'm_i = tl.full([{block_m}, 1], float("-inf"), tl.float32)',
            f"l_i = tl.full([{block_m}, 1], 0.0, tl.float32)",
            f"acc = tl.full([{block_m}, {value_dim}], 0.0, tl.float32)",
        ]

    def _key_block(
        self, block_n: int, row: str | None, group: str | None, row_tail: str, key_limit: str, may_hide: bool
    ) -> list[str]:
        """The loop body over one block of keys from `start`: scores, scale, mask, online softmax and the
        weighted values. `row` and `group` index the program's query rows (None: 0) in the mask, which
        the key tail `keys < key_limit` bounds where given."""
        a, dim, wide = self.attention, self.dim, self.wide
        e_pad = dim != a.dim and f"e_col < {a.dim}"
        cols_tail = key_limit and f"cols < {key_limit}"
        shift = "m_use" if may_hide else "m_new"  # what the scores' exponents subtract
        dot = f'input_precision="{a.precision}"'
        body = [
            f"keys = {_index(f'start + tl.arange(0, {block_n})', wide)}",
            "cols = keys[None, :]",
            "key_rows = keys[:, None]",
            f"kt = {self._load(self.k, 'cols', 'e_col', None, cols_tail, e_pad)}",
            f"s = tl.dot(q, kt, {dot}) * {a.scale!r}",
        ]
        if a.mask is not None:
            load = f"tl.load({self._at(self.m, row, 'cols', group)}{_within(row_tail, cols_tail, other='0')})"
            bool_mask = a.mask.name == "bool"
            body.append(
                f's = tl.where({load}, s, float("-inf"))'
                if bool_mask
                else f"s = s + {convert(load, a.mask, FLOAT32)}"
            )
        if a.causal:
            body.append(f's = tl.where(cols <= {row or 0}, s, float("-inf"))')
        if cols_tail:
            body.append(f's = tl.where({cols_tail}, s, float("-inf"))')
        return [
            *body,
            f"m_new = tl.maximum(m_i, tl.reduce(s, 1, {COMBINE['max']}, keep_dims=True))",
            # where a row has seen no key yet, subtract 0 instead of -inf (-inf - -inf is NaN)
            *(['m_use = tl.where(m_new == float("-inf"), 0.0, m_new)'] if may_hide else []),
            f"alpha = tl.exp(m_i - {shift})",
            f"p = tl.exp(s - {shift})",
            f"l_i = l_i * alpha + tl.reduce(p, 1, {COMBINE['sum']}, keep_dims=True)",
            f"vb = {self._load(self.v, 'key_rows', 'ev', None, key_limit and f'key_rows < {key_limit}', self.ev_pad)}",
            f"acc = acc * alpha + tl.dot(p, vb, {dot})",
            "m_i = m_new",
        ]

    def _head_offsets(self, wide: bool, buffers: list[int], group_apart: bool) -> None:
        """Each buffer's strides over [*heads, rows, columns] (the mask's expanded to the scores' shape),
        and the lines computing the head's index along each (merged) leading dim from `bh`. With
        `group_apart`, the heads are the key heads: the query heads of a group are rows of the program,
        each buffer's stride along the group in `group_strides`."""
        a = self.attention
        self.wide = wide  # (64-bit indices: read by the lines written after)
        self.strides = {b: self.layouts[b].strides for b in buffers}
        if self.m in self.strides:
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
        self.group_strides = {}
        if group_apart and a.group > 1:
            self.group_strides = {b: s[n - 1] for b, s in self.strides.items()}
            batch, n = batch[:-1], n - 1
        merged = merge_dims(batch, {b: s[:n] for b, s in self.strides.items()})
        self.head_lines, self.head_offset = indices("bh", "bd", *merged)

    def _load(self, b: int, row: str | None, col: str, group: str | None, *bounds: str | bool) -> str:
        """Buffer `b` at (`row`, `col`) of the program's head within `bounds`, as float32: half-precision
        q, k and v are multiplied and summed in it (exact products, as ATen's kernels take them)."""
        address = self._at(b, row, col, group, whole=True)
        return convert(f"tl.load({address}{_within(*bounds)})", self.attention.dtype, FLOAT32)

    def _at(self, b: int, row: str | None, col: str, group: str | None = None, whole: bool = False) -> str:
        """The addresses of buffer `b` at (`row`, `col`) of the program's head, and `group` along the
        query heads of a group where they are rows of the program (None: index 0). A row or column along
        which `b` is broadcast (stride 0) adds nothing, so a mask is loaded once per column or row, unless
        `whole`: the operands of the dots are loaded as whole blocks (`index * 0`; an expanded q)."""
        name = "out0" if b == self.out else f"in{b}"
        base, (row_stride, col_stride) = self.head_offset(b), self.strides[b][-2:]
        terms = [base] if base != "0" else []
        indices = (
            (group, self.group_strides.get(b, 0), False),
            (row, row_stride, whole),
            (col, col_stride, whole),
        )
        for index, stride, keep in indices:
            if index is not None and (stride or keep):
                terms.append(term(index, stride))
        return " + ".join([name, *terms])


class SplitAttentionWriter(AttentionWriter):
    """Writes one of the two kernels of an attention that split-keys split (module docstring): `stage`
    "parts" is launched on the function's inputs and the parts buffer, "combine" on the parts buffer and
    the attention's result."""

    def __init__(self, fn: Any, stage: str, layouts: list[Layout], indirect: list[int | None]) -> None:
        if stage not in SPLIT_STAGES:
            raise ValueError(f"{d.SPLIT_KEYS} is '{stage}', not one of {', '.join(SPLIT_STAGES)}")
        block = fn.regions[0].blocks[0]
        self.body_ops = list(block.operations)[:-1]
        self.args = list(block.arguments)
        self.results = list(block.operations[len(self.body_ops)].operands)
        self._read_attention()
        a = self.attention
        self.stage, self.layouts, self.indirect = stage, layouts, indirect
        self.heads = math.prod(a.batch) // a.group  # key heads: one program each per split
        self.rows = a.group * a.queries
        if self.rows > SPLIT_ROWS:
            raise ValueError(
                f"a split attention takes at most {SPLIT_ROWS} query rows per key head, not {self.rows}"
            )
        tensors = self.args if stage == "parts" else self.results
        expected = len(tensors) + 1
        if len(layouts) != expected:
            raise ValueError(
                f"the {stage} launch of a split attention passes {len(layouts)} buffers, not {expected}"
            )
        checked = layouts[:-1] if stage == "parts" else layouts[1:]
        for i, (layout, value) in enumerate(zip(checked, tensors, strict=True)):
            info = tensor_info(value.type)
            if info is None or list(layout.shape) != list(info[0]) or layout.dtype != info[1]:
                raise ValueError(f"buffer {i} is {layout}, the attention expects {value.type}")
        self.parts = len(self.args) if stage == "parts" else 0
        self.out = len(layouts) - 1  # the buffer the launch writes (the parts, or the result)
        if stage == "combine":  # buffers 0 and 1 are the parts and the result, not q and k
            self.q = self.k = self.v = self.m = None
        parts = layouts[self.parts]
        self.splits = parts.shape[1] if parts.rank == 4 else 0
        shape = [self.heads, self.splits, self.rows, a.value_dim + 2]
        if list(parts.shape) != shape or parts.dtype != FLOAT32 or self.splits < 2:
            raise ValueError(
                f"the parts of a split attention are {parts}, not float32 {shape} of 2 or more splits"
            )
        # keys per program: a power of two (aligned loads), as split_size makes them; the last takes the rest
        self.split = max(_MIN_DOT, pow2(-(-a.keys // self.splits)))

    def write(self) -> Kernel:
        a = self.attention
        self.block_m = max(_MIN_DOT, pow2(self.rows))
        rows = [f"r = tl.arange(0, {self.block_m})[:, None]"]
        group = query = None  # the rows' indices: query head in the group, query (None: 0)
        if a.group > 1:
            group = "r" if a.queries == 1 else "g"
            rows += [] if a.queries == 1 else [f"g = r // {a.queries}"]
        if a.queries > 1:
            query = "r" if a.group == 1 else "i"
            rows += [] if a.group == 1 else [f"i = r % {a.queries}"]
        row_tail = f"r < {self.rows}" if self.rows < self.block_m else ""
        ps = self.layouts[self.parts].strides
        if self.stage == "parts":
            return self._parts(rows, group, query, row_tail, ps)
        return self._combine(rows, group, query, ps)

    def _parts(
        self, rows: list[str], group: str | None, query: str | None, row_tail: str, ps: tuple
    ) -> Kernel:
        a, dim, value_dim = self.attention, self.dim, self.value_dim
        block_n = min(64 if max(dim, value_dim) <= 128 else 32, max(_MIN_DOT, pow2(self.split)))
        grid = self.heads * self.splits
        wide = spans_overflow(self.layouts)
        self._head_offsets(wide, [self.q, self.k, self.v, *self._mask()], group_apart=True)
        pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
        kind = "causal" if a.causal else "no mask" if a.mask is None else f"{a.mask.name} mask"
        lines = [
            f"# attention parts over {self.heads} key heads of {self.rows} query rows x {a.keys} keys in"
            f" {self.splits} splits of {self.split}, head dims {a.dim} -> {a.value_dim}, scale {a.scale!r},"
            f" {kind}; {grid} programs, key blocks of {block_n}; dots in {a.precision}",
            *self._dereference(),
            f"pid = {pid}",
            f"bh = pid // {self.splits}",
            f"split = pid % {self.splits}",
            *self.head_lines,
            *rows,
            *self._starts(self.block_m, query, group, row_tail),
            f"begin = split * {self.split}",
        ]
        if a.keys % self.split:
            lines.append(f"stop = tl.minimum(begin + {self.split}, {a.keys})")
            limit = "stop"
        else:
            lines.append(f"stop = begin + {self.split}")
            limit = "stop" if self.split % block_n else ""
        lines.append(f"for start in range(begin, stop, {block_n}):")
        may_hide = a.mask is not None or a.causal  # a split may hold no key a row sees
        body = self._key_block(block_n, query, group, row_tail, limit, may_hide)
        lines += [f"    {line}" for line in body]
        base = f"out0 + {term('bh', ps[0])} + {term('split', ps[1])} + {term('r', ps[2])}"
        lines += [
            f"part = {base}",
            f"tl.store(part + {term('ev', ps[3])}, acc{_within(row_tail, self.ev_pad, other=None)})",
            f"tl.store(part + {a.value_dim * ps[3]}, m_i{_within(row_tail, other=None)})",
            f"tl.store(part + {(a.value_dim + 1) * ps[3]}, l_i{_within(row_tail, other=None)})",
        ]
        return self._template_kernel(lines, grid, 4, "attention_parts", 2)

    def _combine(self, rows: list[str], group: str | None, query: str | None, ps: tuple) -> Kernel:
        """One program per query row: the parts of its splits, in blocks, rescaled to their running
        maximum as the first kernel rescales blocks of keys."""
        a, value_dim = self.attention, self.value_dim
        grid = self.heads * self.rows
        wide = spans_overflow(self.layouts)
        self._head_offsets(wide, [self.out], group_apart=True)
        block_s = min(64, pow2(self.splits))
        splits_tail = self.splits % block_s != 0 and f"s < {self.splits}"
        at = f"in0 + {term('bh', ps[0])} + {term('r', ps[2])} + {term('s', ps[1])}"
        no_part = 'float("-inf")'  # (a split past the last: no maximum)
        lines = [
            f"# attention combine over {self.heads} key heads of {self.rows} query rows from {self.splits}"
            f" splits; {grid} programs",
            *self._dereference(),
            f"pid = {'tl.program_id(0).to(tl.int64)' if wide else 'tl.program_id(0)'}",
            f"bh = pid // {self.rows}",
            f"r = pid % {self.rows}",
            *self.head_lines,
            *rows[1:],  # (the group and query indices, from the program's one row r)
            f"ev = {_index(f'tl.arange(0, {value_dim})', wide)}[None, :]",
            'm_i = tl.full([1, 1], float("-inf"), tl.float32)',
            "l_i = tl.full([1, 1], 0.0, tl.float32)",
            f"acc = tl.full([1, {value_dim}], 0.0, tl.float32)",
            f"for start in range(0, {self.splits}, {block_s}):",
            f"    s = start + tl.arange(0, {block_s})[:, None]",
            f"    m = tl.load({at} + {a.value_dim * ps[3]}{_within(splits_tail, other=no_part)})",
            f"    l = tl.load({at} + {(a.value_dim + 1) * ps[3]}{_within(splits_tail)})",
            f"    part = tl.load({at} + {term('ev', ps[3])}{_within(splits_tail, self.ev_pad)})",
            f"    m_new = tl.maximum(m_i, tl.reduce(m, 0, {COMBINE['max']}, keep_dims=True))",
            '    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)',
            "    alpha = tl.exp(m_i - m_use)",
            "    w = tl.exp(m - m_use)",
            f"    l_i = l_i * alpha + tl.reduce(w * l, 0, {COMBINE['sum']}, keep_dims=True)",
            f"    acc = acc * alpha + tl.reduce(w * part, 0, {COMBINE['sum']}, keep_dims=True)",
            "    m_i = m_new",
            # a row that saw no key has l_i = 0 and acc = 0: zeros, as eager gives
            "out = acc / tl.where(l_i == 0.0, 1.0, l_i)",
            f"tl.store({self._at(self.out, query, 'ev', group)}, {convert('out', FLOAT32, a.dtype)}"
            f"{_within(self.ev_pad, other=None)})",
        ]
        return self._template_kernel(lines, grid, 4, "attention_combine")


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

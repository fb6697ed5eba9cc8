"""The decomposition table pygraph passes to `ExportedProgram.run_decompositions`.

pygraph keeps the high-level ops it lowers better itself (linear, convolution, layer_norm, gelu, silu,
hardswish, softmax, scaled_dot_product_attention, batch norm, embedding, addmm, ...): each has a
torch-dialect op, so none is in the table. An op is decomposed only when torch-mlir has no op for it
(it would import as an opaque `torch.operator`, a library call at best) and it breaks down into ops
pygraph handles. Whatever the table, `run_decompositions` functionalizes the graph: in-place ops become
functional ops, and their effect on inputs and buffers becomes mutation outputs of the graph signature.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch._decomp import decomposition_table
from torch.fx.experimental.symbolic_shapes import guard_or_true

from ..ir.context import make_context

aten = torch.ops.aten
_HALF = (torch.float16, torch.bfloat16)  # computed in float32, as eager's kernels compute them

# Ops decomposed whatever torch-mlir has (most are not composite and have no torch-dialect op), with why
# decomposing them is right.
EXPLICIT: dict[torch._ops.OpOverload, str] = {
    aten.index_copy.default: "becomes index_put (KV-cache writes)",
    aten.index_copy_.default: "becomes index_put; functionalization keeps the write as a mutation",
    aten.index_add.default: "becomes index_put with accumulate",
    aten.index_fill.int_Scalar: "becomes index_put of the expanded fill value",
    aten.index_fill.int_Tensor: "becomes index_put of the expanded fill value",
    aten.take.default: "becomes index on a view of the flattened input",
    aten.rsub.Tensor: "becomes sub with swapped operands",
    aten.stack.default: "becomes cat of the pieces unsqueezed, which kernels compute (ATen's is a library call)",
    aten.sinc.default: "becomes pointwise mul, sin, div and where (fusible)",
    aten.nansum.default: "becomes isnan, where and sum",
    aten.std_mean.correction: "becomes var_mean and sqrt",
    aten.addr.default: "becomes outer, mul and add",
    aten.linalg_vector_norm.default: (
        "becomes abs or a square, sum or amax, and sqrt or pow (in float32 for half inputs): a reduction "
        "kernel with its neighbours (F.normalize: one kernel) where ATen's is a library call (pygraph's "
        "own: torch 2.11's keeps a norm's dims of one element)"
    ),
    aten._native_batch_norm_legit_functional.default: (
        "training-mode batch norm: var_mean and pointwise ops, the running statistics rounded once as CUDA's"
    ),
    aten._native_batch_norm_legit.no_stats: "batch norm without running statistics: var_mean and pointwise ops",
    aten.native_dropout.default: "training-mode dropout: rand_like and pointwise ops (seed-random draws per call)",
    aten.bernoulli.default: "rand and a comparison (seed-random draws per call)",
    aten.unsafe_split.Tensor: (
        "becomes split, a list of views pygraph knows (LSTMCell, GRUCell; torch's own clones every piece)"
    ),
    aten.unsafe_split_with_sizes.default: "becomes split_with_sizes, a list of views pygraph knows",
    aten.squeeze.dims: "becomes one squeeze.dim per dim, a view pygraph knows (torch's own gives prims.squeeze)",
    aten.nonzero_numpy.default: (
        "nonzero(as_tuple=True): becomes nonzero and one select per dim, each a host op of its own "
        "(torch's own unbinds nonzero's result into a list, which a host op cannot hold)"
    ),
    aten._native_batch_norm_legit_no_training.default: (
        "eval batch norm: pointwise ops in the input's shape, one kernel with the ops around it "
        "(torch's own calls the non-functional _native_batch_norm_legit)"
    ),
    aten.index_put.default: (
        "`x[mask] = v` by one boolean mask, with a v not sized by the mask, becomes where: ATen's finds the "
        "mask's elements with nonzero, a synchronisation no CUDA graph can hold (every other index_put stays)"
    ),
}


def _squeeze_dims(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    for dim in sorted({d % max(x.dim(), 1) for d in dims}, reverse=True):
        x = aten.squeeze.dim(x, dim)
    return x


def _unsafe_split(x: torch.Tensor, split_size: int, dim: int = 0) -> list[torch.Tensor]:
    """`unsafe_` only drops autograd's view tracking: the pieces are the views split gives."""
    return list(aten.split.Tensor(x, split_size, dim))


def _unsafe_split_with_sizes(x: torch.Tensor, split_sizes: list[int], dim: int = 0) -> list[torch.Tensor]:
    return list(aten.split_with_sizes.default(x, split_sizes, dim))


def _nonzero_numpy(x: torch.Tensor) -> list[torch.Tensor]:
    """As ATen's: a 0-d input counts as 1-d."""
    indices = aten.nonzero.default(x.unsqueeze(0) if x.dim() == 0 else x)
    return [aten.select.int(indices, 1, dim) for dim in range(indices.shape[1])]


def _vector_norm(
    x: torch.Tensor,
    ord: float = 2,
    dim: int | list[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """ATen's norm of real tensors as reductions, in float32 for half inputs (as eager's kernel). torch's
    own decomposition gives the abs of a norm over dims of one element without removing them in torch
    2.11 (its meta shape too: [1] where eager's result is [])."""
    if x.is_complex():
        return NotImplemented
    x = x.to(dtype) if dtype is not None else x
    result_dtype = x.dtype
    if x.dtype in _HALF:
        x = x.float()
    dims = [dim] if isinstance(dim, int) else list(dim or range(x.dim()))  # (None and [] are all dims)
    if ord == math.inf:
        norm = x.abs().amax(dims, keepdim)
    elif ord == -math.inf:
        norm = x.abs().amin(dims, keepdim)
    elif ord == 0:
        norm = (x != 0).to(x.dtype).sum(dims, keepdim)
    elif ord == 1:
        norm = x.abs().sum(dims, keepdim)
    elif ord == 2:
        norm = (x * x).sum(dims, keepdim).sqrt()
    else:
        norm = x.abs().pow(ord).sum(dims, keepdim).pow(1.0 / ord)
    return norm.to(result_dtype)


def _index_put_by_mask(
    x: torch.Tensor, indices: list[torch.Tensor | None], values: torch.Tensor, accumulate: bool = False
) -> torch.Tensor:
    """`x[mask] = values` (`+=` with accumulate) as `where(mask, values, x)`, where one boolean mask covers
    x's leading dims and values broadcasts to what it selects without its count (a number, a row)."""
    mask = indices[0] if len(indices) == 1 else None
    if mask is None or mask.dtype not in (torch.bool, torch.uint8):
        return NotImplemented
    rest = x.dim() - mask.dim()  # the dims each selected element spans
    if rest < 0 or tuple(mask.shape) != tuple(x.shape[: mask.dim()]) or values.dim() > rest + 1:
        return NotImplemented
    if values.dim() == rest + 1:  # [count, *rest] in ATen's terms: only a count of 1 broadcasts
        if guard_or_true(values.shape[0] != 1):  # (a count the data decide, `x[m] = f(x[m])`: ATen's)
            return NotImplemented
        values = values[0]
    mask = mask.to(x.device, torch.bool).view(*mask.shape, *[1] * rest)  # (ATen takes a mask on the CPU)
    return torch.where(mask, x + values if accumulate else values, x)


def _batch_norm_inference(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1), in float32 for half-precision x
    and rounded once, as eager's kernels compute it (op by op in half precision, 45% of bfloat16 results
    were an ulp or more off eager's, and a threshold after the norm flipped: fuzz seed 49177). The
    statistics are viewed in x's shape (expand: no copy), so that every op has x's shape and fuse-pointwise
    makes them one group; recomputing the per-channel factor per element costs nothing in a memory-bound
    kernel. The two statistics results are empty, as eager's."""
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    compute = torch.float32 if x.dtype in _HALF else x.dtype

    def per_element(t: torch.Tensor) -> torch.Tensor:
        return t.to(compute).view(shape).expand_as(x)

    y = (x.to(compute) - per_element(running_mean)) * torch.rsqrt(per_element(running_var) + eps)
    if weight is not None:
        y = y * per_element(weight)
    if bias is not None:
        y = y + per_element(bias)
    return y.to(x.dtype), x.new_zeros(0), x.new_zeros(0)


def _batch_norm_training(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, ...]:
    """Training batch norm as torch's decomposition computes it, but the running statistics updated in
    float32 and rounded once, as CUDA's eager kernel does: torch's rounds `(1 - momentum) * running` to a
    half dtype first, one ulp off CUDA's in a quarter of the channels (measured on an H100 in bfloat16,
    `bench/results/bn-stats-s36-h100.log`: of 4800, 2 means and no variance off with one rounding, against
    1342 means and 332 variances; CPU's eager rounds each op in bfloat16 and matches neither)."""
    if not training:
        return NotImplemented
    dims = [0, *range(2, x.dim())]
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    biased_var, mean = torch.var_mean(x.to(torch.float32) if x.dtype in _HALF else x, dims, correction=0)
    rstd = torch.rsqrt(biased_var + eps)
    y = (x - mean.view(shape)) * rstd.view(shape)
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    count = x.numel() // x.shape[1]
    unbiased_var = biased_var * (count / (count - 1))
    new_mean = (momentum * mean + (1 - momentum) * running_mean.to(mean.dtype)).to(running_mean.dtype)
    new_var = (momentum * unbiased_var + (1 - momentum) * running_var.to(mean.dtype)).to(running_var.dtype)
    saved = (mean.to(x.dtype), rstd.to(x.dtype)) if x.device.type == "cpu" else (mean, rstd)
    return (y.to(x.dtype), *saved, new_mean, new_var)


def _einsum(equation: str, operands: list[torch.Tensor], path: list[int] | None = None) -> torch.Tensor:
    """A product of two operands as one bmm between permutes and reshapes (`_product_of_two`); any other
    einsum (one or three operands, ellipses, diagonals, an implicit output, broadcast or symbolic sizes)
    as ATen's composite computes it."""
    product = _product_of_two(equation.replace(" ", ""), operands)
    if product is not None:
        return product
    return aten.einsum.default._op_dk(
        torch._C.DispatchKey.CompositeImplicitAutograd, equation, operands, path=path
    )


def _product_of_two(equation: str, operands: list[torch.Tensor]) -> torch.Tensor | None:
    """`a,b->out` as ATen's einsum computes it (labels of one operand the output lacks summed first, then
    one bmm of [batch, a's kept, summed] by [batch, summed, b's kept], or their product where nothing is
    summed), in half its ops: each op of the
    composite costs about a millisecond in export's decomposition pass (XLNet's 384 einsums took 5.7 s of
    its 26 s compile). The summed labels merge in the first operand's memory order, where the reshape of a
    permuted view stays a view (XLNet's output projection `ibnd,hnd->ibh` merged (d, n): a copy of
    attn_vec per call and of the weight once, 4 MB a layer). None where the equation is of no such form."""
    terms, arrow, out = equation.partition("->")
    labels = terms.split(",")
    if not arrow or len(labels) != 2 or len(operands) != 2:
        return None
    (ta, tb), (a, b) = labels, operands
    if not all(t.isalpha() and len(set(t)) == len(t) for t in labels) or len(set(out)) != len(out):
        return None  # (ellipses, diagonals)
    if a.dtype != b.dtype or (a.dim(), b.dim()) != (len(ta), len(tb)) or not set(out) <= set(ta + tb):
        return None
    size: dict[str, int] = {}
    for term, x in ((ta, a), (tb, b)):
        for label, n in zip(term, x.shape, strict=True):
            if isinstance(n, torch.SymInt) or size.setdefault(label, n) != n:
                return None  # (a size 1 broadcast against another, or a size the trace keeps symbolic)
    a, ta = _sum_labels(a, ta, set(tb + out))
    b, tb = _sum_labels(b, tb, set(ta + out))
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c not in tb]
    right = [c for c in out if c not in ta]
    summed = sorted(set(ta) & set(tb) - set(out), key=lambda c: -a.stride(ta.index(c)))

    def merged(x: torch.Tensor, term: str, groups: list[list[str]]) -> torch.Tensor:
        order = [term.index(c) for group in groups for c in group]
        return x.permute(order).reshape([math.prod(size[c] for c in group) for group in groups])

    if summed:
        product = torch.bmm(merged(a, ta, [batch, left, summed]), merged(b, tb, [batch, summed, right]))
    else:  # (as ATen's einsum: a product with nothing to sum multiplies; CUDA has no bmm of integers)
        product = merged(a, ta, [batch, left])[:, :, None] * merged(b, tb, [batch, right])[:, None, :]
    kept = batch + left + right
    return product.reshape([size[c] for c in kept]).permute([kept.index(c) for c in out])


def _sum_labels(x: torch.Tensor, term: str, wanted: set[str]) -> tuple[torch.Tensor, str]:
    """`x` summed over the labels of `term` not in `wanted`, and the labels left."""
    dims = [i for i, c in enumerate(term) if c not in wanted]
    if not dims:
        return x, term
    return x.sum(dims), "".join(c for c in term if c in wanted)


_OWN = {
    aten.squeeze.dims: _squeeze_dims,
    aten.unsafe_split.Tensor: _unsafe_split,
    aten.unsafe_split_with_sizes.default: _unsafe_split_with_sizes,
    aten.nonzero_numpy.default: _nonzero_numpy,
    aten._native_batch_norm_legit_no_training.default: _batch_norm_inference,
    aten._native_batch_norm_legit_functional.default: _batch_norm_training,
    aten.einsum.default: _einsum,
    aten.index_put.default: _index_put_by_mask,
    aten.linalg_vector_norm.default: _vector_norm,
}  # ops decomposed by pygraph's own function, not torch._decomp's


# Composites that torch-mlir has an op for but whose ATen kernel may return its input (or a view of it)
# without saying so in its schema: as library calls their results would alias memory the plan reuses.
# Decomposed, they become the copy or the views they are (`_to_copy`, `permute`, `diagonal`, `bmm`, ...).
RETURN_INPUTS = frozenset(
    {
        aten.type_as.default,  # the input itself when the dtypes agree (Gemma3's RMSNorm of q and k)
        aten._cast_Float.default,
        aten._cast_Long.default,
        # a one-operand einsum is a permutation or diagonal view of it; decomposed, any einsum is also
        # permutes, reshapes and one bmm, its operand copies then kernels fused with the ops around them
        # (ATen's einsum makes them inside the vendor call: XLNet 48 copy kernels per call)
        aten.einsum.default,
    }
)


def _is_composite(op: torch._ops.OpOverload) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")


def _torch_dialect_name(op: torch._ops.OpOverload) -> str:
    """The op torch-mlir's importer emits for `op` (it falls back to `torch.operator` when none is registered)."""
    schema = op._schema
    name = f"torch.{schema.name.replace('::', '.')}"
    return f"{name}.{schema.overload_name}" if schema.overload_name else name


def _is_fft(op: torch._ops.OpOverload) -> bool:
    """`torch.fft`'s functions and `stft`: composites of ATen's three FFT primitives, which pygraph computes
    on complex values held as pairs (`pair_ops.py`), where torch-mlir's ops for them would take complex
    tensors whole."""
    name = op._schema.name.removeprefix("aten::")
    return name.startswith("fft_") or name in ("stft", "istft")


def _checks_errors(op: torch._ops.OpOverload) -> bool:
    """A linear-algebra composite that calls its `_ex` form and raises on the errors it reports
    (`linalg_cholesky`, `linalg_inv`, `linalg_solve`): decomposed, the raise is `_linalg_check_errors`, an
    op with effects that export threads a token through; kept, it is one ATen call that raises as eager's."""
    return hasattr(aten, f"{op._schema.name.removeprefix('aten::')}_ex")


def _returns_tensor_list(op: torch._ops.OpOverload) -> bool:
    return any(isinstance(r.type, torch.ListType) for r in op._schema.returns)


def _build() -> dict[torch._ops.OperatorBase, Callable]:
    """EXPLICIT, plus every composite (CompositeImplicitAutograd) op that export keeps for the table to
    decide (torch's default table lists them) and torch-mlir has no op for: aliases such as aten.multiply,
    aten.greater, aten.concat, aten.divide and composites such as aten.diff, aten.kron, aten.tensordot,
    each decomposed into the ops that define it. Composites that return a list of tensors (aten.meshgrid,
    aten.broadcast_tensors) are decomposed even where torch-mlir has an op: pygraph keeps a list result
    only from the views it knows (split, unbind), and these break down into views (expand) pygraph knows.
    So are the composites of RETURN_INPUTS and the FFTs (`_is_fft`); not those that check errors
    (`_checks_errors`)."""
    context = make_context()
    composites = torch.export.default_decompositions()  # composite ops decomposed by their own definition
    table: dict[torch._ops.OperatorBase, Callable] = {
        op: _OWN.get(op) or decomposition_table[op] for op in EXPLICIT
    }
    for op, decomposition in composites.items():
        if (
            not isinstance(op, torch._ops.OpOverload)
            or not _is_composite(op)
            or op in table
            or _checks_errors(op)
        ):
            continue
        if (
            not context.is_registered_operation(_torch_dialect_name(op))
            or _returns_tensor_list(op)
            or _is_fft(op)
            or op in RETURN_INPUTS
        ):
            table[op] = _OWN.get(op) or decomposition
    return table


TABLE = _build()

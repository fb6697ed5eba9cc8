"""Gathers as generated kernels (`pygraph/passes/gathers.py`), run by Triton's interpreter (and on the GPU)
against eager PyTorch: embedding, index_select, gather and `index` by one tensor, alone and fused with the
ops around them, at odd sizes, on strided and broadcast sources and indices, int32 and int64 indices,
0-d and one-element cases; an index out of range stops the kernel. Then whole models through the
emulator: BERT's embeddings as one kernel, DeBERTa's relative-position gather inside its softmax kernel,
and the memory plans a gather must not break (its result over its source, its source written in place).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gpu_marks import needs_gpu
from test_codegen_triton import compile_for_h100, kernels
from test_pointwise_kernels import Case, check, compile_case, nz, run_kernels
from test_reduction_kernels import on_gpu
from triton.runtime.interpreter import InterpreterError

import pygraph
from pygraph.knobs import knobs

pytestmark = [
    pytest.mark.usefixtures("kernel_cache"),
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),
]


def ids(high: int, *shape: int, low: int = 0, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.randint(low, high, shape, dtype=dtype)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-12)


CASES: dict[str, Case] = {
    # embedding: [37, 13] tables, indices of any rank
    "embedding": Case(lambda w, i: F.embedding(i, w), lambda: (nz(37, 13), ids(37, 3, 5))),
    "embedding.int32": Case(
        lambda w, i: F.embedding(i, w), lambda: (nz(37, 13), ids(37, 6, dtype=torch.int32))
    ),
    "embedding.0d": Case(lambda w, i: F.embedding(i, w) * 2, lambda: (nz(37, 13), torch.tensor(36))),
    "embedding.one_row": Case(lambda w, i: F.embedding(i, w), lambda: (nz(1, 1), ids(1, 1, 1))),
    "embedding.strided": Case(
        lambda w, i: F.embedding(i, w),
        lambda: (nz(13, 37).t(), ids(37, 9, 8)[1::2, ::3]),  # transposed table, sliced index
    ),
    "embedding.padding_idx": Case(
        lambda w, i: F.embedding(i, w, padding_idx=3), lambda: (nz(37, 13), ids(5, 4, 4))
    ),
    # BERT's embeddings: token + position (broadcast over the batch) + token type, then a layer norm
    "embedding.add.layer_norm": Case(
        lambda w, i, p, pi, t, ti, g, b: layer_norm(
            F.embedding(i, w) + F.embedding(pi, p) + F.embedding(ti, t), g, b
        ),
        lambda: (
            nz(37, 1000),
            ids(37, 2, 5),
            nz(16, 1000),
            ids(16, 1, 5),
            nz(2, 1000),
            ids(2, 2, 5),
            nz(1000),
            nz(1000),
        ),
    ),
    # index_select along each dim, repeated indices
    **{
        f"index_select.dim{d}": Case(
            lambda x, i, d=d: torch.index_select(x, d, i) + 1,
            lambda d=d: (nz(5, 7, 9), ids((5, 7, 9)[d], 11)),
        )
        for d in range(3)
    },
    "index_select.int32.permuted": Case(
        lambda x, i: torch.index_select(x, 1, i),
        lambda: (nz(9, 5, 7).permute(1, 2, 0), ids(7, 4, dtype=torch.int32)),
    ),
    "index_select.0d": Case(lambda x, i: torch.index_select(x, 0, i), lambda: (nz(5, 3), torch.tensor(4))),
    # gather: index smaller than the source in the other dims, broadcast (expanded) index, int32
    "gather.dim1": Case(lambda x, i: torch.gather(x, 1, i), lambda: (nz(5, 7), ids(7, 5, 11))),
    "gather.dim0.smaller": Case(lambda x, i: torch.gather(x, 0, i) * 3, lambda: (nz(5, 7), ids(5, 3, 4))),
    "gather.broadcast.int32": Case(
        lambda x, i: torch.gather(x, -1, i),
        lambda: (nz(3, 6, 10), ids(10, 1, 6, 6, dtype=torch.int32).expand(3, 6, 6)),
    ),
    "gather.one_element": Case(lambda x, i: torch.gather(x, 0, i), lambda: (nz(1), ids(1, 1))),
    # DeBERTa's c2p: scores plus a gather of position scores, then softmax (a reduction kernel)
    "gather.softmax": Case(
        lambda s, c, i: torch.softmax(s + torch.gather(c, -1, i), -1),
        lambda: (nz(3, 33, 33), nz(3, 33, 66), ids(66, 1, 33, 33).expand(3, 33, 33)),
    ),
    # index by one tensor: negatives count from the end; an index of any rank (export makes a 0-d one a select)
    "index.negative": Case(lambda x, i: x[:, i], lambda: (nz(4, 9), ids(9, 5, low=-9))),
    "index.2d": Case(lambda x, i: x[i] + 1, lambda: (nz(6, 5), ids(6, 3, 4, low=-6))),
    "index.one_element": Case(lambda x, i: x[i], lambda: (nz(1, 1), ids(1, 1))),
    "index.int32.strided": Case(lambda x, i: x[i], lambda: (nz(5, 9).t(), ids(9, 8, dtype=torch.int32)[::2])),
}


@pytest.mark.parametrize("looped", [False, True], ids=["whole-rows", "looped"])
@pytest.mark.parametrize("name", list(CASES))
def test_gathers_match_eager(name: str, looped: bool) -> None:
    """Each case is one kernel (its gathers fused with the ops around them), equal to eager; reduction
    kernels also looping over blocks of 8 columns."""
    plan = check(CASES[name], codegen="codegen-triton{max-rblock=8}" if looped else "codegen-triton")
    (kernel,) = kernels(plan)
    assert "trap_unless(" in kernel.source


@pytest.mark.parametrize("name", ["embedding.add.layer_norm", "index.negative", "gather.softmax"])
def test_gather_kernels_compile_for_sm90(name: str) -> None:
    torch.manual_seed(0)
    case = CASES[name]
    plan, _ = compile_case(case, case.inputs())
    (kernel,) = kernels(plan)
    compile_for_h100(kernel)


OUT_OF_RANGE = {
    "embedding.past_the_end": ("embedding", 1, 37),
    "embedding.negative": ("embedding", 1, -1),  # no wrapping: eager raises too
    "index_select.negative": ("index_select.dim1", 1, -1),
    "gather.past_the_end": ("gather.dim1", 1, 7),
    "index.below_minus_n": ("index.negative", 1, -10),
}


@pytest.mark.parametrize("label", list(OUT_OF_RANGE))
def test_an_index_out_of_range_stops_the_kernel(label: str) -> None:
    """As eager raises (CUDA: a device-side assert), the kernel stops: no wrong result, no read outside."""
    name, position, value = OUT_OF_RANGE[label]
    torch.manual_seed(0)
    case = CASES[name]
    inputs = list(case.inputs())
    plan, _ = compile_case(case, tuple(inputs))
    inputs[position] = inputs[position].clone()
    inputs[position].view(-1)[-1] = value
    with pytest.raises((IndexError, RuntimeError)):
        case.fn(*inputs)
    with pytest.raises(InterpreterError, match="index out of range in a gather"):
        run_kernels(plan, tuple(inputs))


# ------------------------------------------------------------------------------------------ whole models


class Embeddings(torch.nn.Module):
    """BERT's embeddings: token, position and token type, summed, then a layer norm."""

    def __init__(self, vocab: int = 101, dim: int = 24) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = torch.nn.Embedding(16, dim)
        self.typ = torch.nn.Embedding(2, dim)
        self.norm = torch.nn.LayerNorm(dim)
        self.register_buffer("positions", torch.arange(16)[None])

    def forward(self, ids: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        positions = self.positions[:, : ids.shape[1]]
        return self.norm(self.tok(ids) + self.pos(positions) + self.typ(types))


def library_ops(compiled: pygraph.CompiledModel) -> list[str]:
    return [n.op for s in compiled.plan.segments for n in s.nodes if n.kind == "library"]


def kernel_launches(compiled: pygraph.CompiledModel) -> int:
    return sum(n.kind == "kernel" for s in compiled.plan.segments for n in s.nodes)


def test_embeddings_and_their_layer_norm_are_one_kernel() -> None:
    torch.manual_seed(0)
    model = Embeddings().eval()
    draw = lambda: (torch.randint(0, 101, (3, 7)), torch.randint(0, 2, (3, 7)))  # noqa: E731
    compiled = pygraph.export_and_compile(model, draw())
    assert library_ops(compiled) == [] and kernel_launches(compiled) == 1
    for _ in range(2):
        inputs = draw()
        torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)
    ids, types = draw()
    ids[2, 6] = 101
    with pytest.raises(InterpreterError, match="index out of range in a gather"):
        compiled(ids, types)


class RelativeAttention(torch.nn.Module):
    """DeBERTa's disentangled scores: content-to-position scores gathered at clamped relative positions
    (computed per call), added to the content scores, softmax; and `take` (an index of a flattened view)."""

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, pos_k: torch.Tensor, rel: torch.Tensor
    ) -> torch.Tensor:
        span = pos_k.shape[1] // 2
        scores = q @ k.transpose(-1, -2)
        c2p = q @ pos_k.transpose(-1, -2)
        index = torch.clamp(rel + span, 0, 2 * span - 1).expand(scores.shape)
        probs = torch.softmax(scores + torch.gather(c2p, -1, index), -1)
        return probs + torch.take(q, rel[0, :, :1])


def test_relative_position_gather_runs_in_the_softmax_kernel() -> None:
    torch.manual_seed(0)
    model = RelativeAttention()
    heads, length, span = 3, 9, 4
    rel = (torch.arange(length)[:, None] - torch.arange(length)[None, :])[None].clamp(-span, span)
    draw = lambda: (nz(heads, length, 8), nz(heads, length, 8), nz(heads, 2 * span, 8), rel)  # noqa: E731
    compiled = pygraph.export_and_compile(model, draw())
    assert "aten.gather.default" not in library_ops(compiled) and "aten.index.Tensor" not in library_ops(
        compiled
    )
    assert any("gather" in k.name and "softmax" in k.name for k in compiled.plan.kernels.values())
    for _ in range(2):
        inputs = draw()
        torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)


class GatherOwnSource(torch.nn.Module):
    """`y` dies at the gather that reads it, with the gather's layout: memory planning must not write the
    result over it; and a buffer updated with a gather of itself, which must not be written in place.
    Both span several programs, each of which would overwrite elements the later ones read."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.arange(3000.0))

    def forward(self, x: torch.Tensor, idx: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
        y = torch.exp(x)
        self.state.copy_(self.state.gather(0, perm) * 2)
        return torch.mm(torch.gather(y, 1, idx) + 1, x.t())


def test_a_gather_never_writes_over_its_source() -> None:
    torch.manual_seed(0)
    model, twin = GatherOwnSource(), GatherOwnSource()
    x, idx, perm = nz(40, 60), torch.randint(0, 60, (40, 60)), torch.randperm(3000)
    compiled = pygraph.export_and_compile(model, (x, idx, perm))
    for _ in range(2):
        torch.testing.assert_close(compiled(x, idx, perm), twin(x, idx, perm))
        torch.testing.assert_close(model.state, twin.state)


class TokenMLP(torch.nn.Module):
    """One token: its embedding and layer norm are the prologue of the next linear's matrix-vector kernel;
    a gather added to a linear's result is its generated matmul's epilogue (`PYGRAPH_MATMUL=all`)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(50, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.up = torch.nn.Linear(32, 48)
        self.bias = torch.nn.Embedding(10, 48)

    def forward(
        self, token: torch.Tensor, rows: torch.Tensor, kinds: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return self.up(self.norm(self.emb(token))), self.up(rows) + self.bias(kinds)


def test_gathers_in_a_matvec_prologue_and_a_matmul_epilogue() -> None:
    torch.manual_seed(0)
    model = TokenMLP().eval()
    draw = lambda: (torch.randint(0, 50, (1, 1)), nz(6, 32), torch.randint(0, 10, (6,)))  # noqa: E731
    with knobs.scope(matmul="all"):
        compiled = pygraph.export_and_compile(model, draw())
    names = [k.name for k in compiled.plan.kernels.values()]
    assert any("embedding" in n and "matvec" in n for n in names), names
    assert any("embedding" in n for n in names if n != next(n for n in names if "matvec" in n)), names
    assert "aten.embedding.default" not in library_ops(compiled)
    for _ in range(2):
        inputs = draw()
        for got, want in zip(compiled(*inputs), model(*inputs), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", list(CASES))
def test_gathers_match_eager_on_gpu(name: str) -> None:
    """The same kernels compiled by Triton for the GPU (the trap's inline PTX included), against eager."""
    torch.manual_seed(0)
    case = CASES[name]
    inputs = case.inputs()
    plan, returned = compile_case(case, inputs)
    inputs = tuple(on_gpu(t) for t in inputs)
    buffers = run_kernels(plan, inputs)
    torch.testing.assert_close(buffers[returned[0]], case.fn(*inputs), rtol=1e-4, atol=1e-5)

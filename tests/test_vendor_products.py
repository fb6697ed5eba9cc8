"""Vendor products reading their operands where they are (elide-clones) and scales moved to their results
(move-scales), end to end on the emulator against eager; the copies and scales that must stay, stay."""

from __future__ import annotations

import pytest
import torch
from gpu_marks import needs_gpu
from test_fusion_models import assert_matches, kernels, library_ops, nodes
from torch import nn

import pygraph
from pygraph.ir import dtypes
from pygraph.ir.layout import Layout
from pygraph.ir.plan import Node
from pygraph.knobs import knobs
from pygraph.passes.products import vendor_reads_as_is

F32 = dtypes.BY_NAME["float32"]


def layout(shape: tuple[int, ...], strides: tuple[int, ...]) -> Layout:
    return Layout(shape, strides, 0, F32)


@pytest.mark.parametrize(
    ("shape", "strides", "as_is"),
    [
        ((24, 128, 64), (64, 1536, 1), True),  # a sequence's permuted heads: rows 1536 apart
        ((24, 64, 128), (64, 1, 1536), True),  # ... transposed: columns 1536 apart
        ((24, 128, 64), (8192, 64, 1), True),  # contiguous
        ((24, 128, 64), (0, 64, 1), True),  # one matrix for every batch
        ((24, 128, 64), (16384, 128, 2), False),  # every other column: ATen copies it first
        ((24, 128, 64), (64, 0, 1), False),  # rows broadcast
        ((128, 64), (1, 128), True),  # transposed
        ((128, 64), (128, 2), False),
        ((2, 24, 128, 64), (196608, 8192, 64, 1), False),  # not a bmm or mm operand
    ],
)
def test_operands_the_vendor_reads_as_they_are(shape, strides, as_is) -> None:
    assert vendor_reads_as_is(layout(shape, strides)) is as_is


class Heads(nn.Module):
    """Hugging Face's transpose_for_scores attention with DeBERTa's scale, `sqrt(tensor(head size))`."""

    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(dim, dim) for _ in range(4))
        self.heads = heads

    def split(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(*x.shape[:-1], self.heads, -1)
        return x.permute(0, 2, 1, 3).contiguous().view(-1, x.size(1), x.size(-1))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scale = torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * 1)
        scores = torch.bmm(q, k.transpose(-1, -2) / scale.to(dtype=q.dtype))
        scores = scores.view(-1, self.heads, scores.size(-2), scores.size(-1)).masked_fill(~mask, -1e9)
        context = torch.bmm(torch.softmax(scores, -1).view(-1, x.size(1), x.size(1)), v)
        context = context.view(-1, self.heads, x.size(1), context.size(-1)).permute(0, 2, 1, 3).contiguous()
        return self.out(context.view(*context.shape[:2], -1))


def inputs(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    mask = torch.ones(batch, 1, 1, 16, dtype=torch.bool)
    mask[0, ..., -3:] = False
    return torch.randn(batch, 16, 64), mask


def bmm_operand_roots(compiled: pygraph.CompiledModel) -> list[str]:
    """What made the storage each bmm reads: the op of the library node, else the kernel."""
    makers: dict[int, Node] = {}
    for node in nodes(compiled):
        for buffer in node.results or node.writes:
            makers[compiled.plan.root(buffer).id] = node
    bmms = [n for n in nodes(compiled) if n.op == "aten.bmm.out"]
    return [
        (lambda maker: maker.op or maker.kernel)(makers[compiled.plan.root(b).id])
        for n in bmms
        for b in n.reads
        if b not in n.writes
    ]


def test_one_sequence_heads_are_read_where_the_projections_wrote_them() -> None:
    torch.manual_seed(0)
    model = Heads().eval()
    with knobs.scope(gpu_layouts="on"):
        compiled = pygraph.export_and_compile(model, inputs(1))
    # q, k and v straight from their linear layers; the scores' scale in the mask and softmax kernel;
    # the probabilities as that kernel wrote them. No copy of the context: the output projection reads
    # rows of all heads, which the context's bmm writes there itself (out-form).
    assert bmm_operand_roots(compiled) == ["aten.addmm.out"] * 2 + [kernels(compiled)[0]] + ["aten.addmm.out"]
    (scores,) = (k for k in kernels(compiled) if not k.endswith("_copy"))
    assert scores.startswith("k0_div") and scores.endswith("masked_fill_softmax")
    assert library_ops(compiled).count("aten.bmm.out") == 2
    for _ in range(2):
        x, mask = inputs(1)
        assert_matches(compiled(x, mask), model(x, mask))


def test_heads_of_more_sequences_are_copied() -> None:
    """Merging two sequences' heads into one batch dim needs the copies; the scale still moves."""
    torch.manual_seed(0)
    model = Heads().eval()
    with knobs.scope(gpu_layouts="on"):
        compiled = pygraph.export_and_compile(model, inputs(2))
    assert kernels(compiled).count("k0_clone") == 3 and "k1_clone" in kernels(compiled)
    assert any("div" in k and "softmax" in k for k in kernels(compiled))
    for _ in range(2):
        x, mask = inputs(2)
        assert_matches(compiled(x, mask), model(x, mask))


class Copies(nn.Module):
    """Copies a product reads that must stay: one written in place after the product read it, one the
    model returns."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        written = x.t().contiguous()
        product = written @ self.w
        written.mul_(2)
        returned = x.t().contiguous()
        return product + written, returned @ self.w, returned


def test_copies_written_in_place_or_returned_stay() -> None:
    torch.manual_seed(0)
    model, x = Copies(), torch.randn(8, 8)
    compiled = pygraph.export_and_compile(model, (x,))
    assert library_ops(compiled) == ["aten.mm.out"] * 2
    assert compiled.ir("pygraph").count("torch.aten.clone ") == 2  # one kernel: both read x.t()
    first = compiled(x)
    for got, ref in zip(first, model(x), strict=True):
        assert_matches(got, ref)
    assert first[2].stride() == (8, 1)
    first[2].zero_()  # the returned copy is the caller's: the next call is not affected
    for got, ref in zip(compiled(x), model(x), strict=True):
        assert_matches(got, ref)


class Matmuls(nn.Module):
    """`matmul` of copies: a transposed matrix (`mm` in out form), and 4-D heads of one sequence (`bmm` in
    out form on the heads viewed as one batch of 4 matrices)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q, k = (t.view(1, 8, 4, 2).permute(0, 2, 1, 3).contiguous() for t in (x, y))
        return x.t().contiguous() @ self.w, torch.matmul(q, k.transpose(-1, -2))


def test_matmul_reads_transposed_operands_as_they_are() -> None:
    torch.manual_seed(0)
    model, x, y = Matmuls(), torch.randn(8, 8), torch.randn(8, 8)
    compiled = pygraph.export_and_compile(model, (x, y))
    assert library_ops(compiled) == ["aten.mm.out", "aten.bmm.out"]
    assert not [k for k in kernels(compiled) if not k.endswith("_copy")]
    for got, ref in zip(compiled(x, y), model(x, y), strict=True):
        assert_matches(got, ref)


transformers = pytest.importorskip("transformers", reason="transformers is not installed")


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "disentangled"])
@pytest.mark.parametrize("batch", [1, 2])
def test_deberta_v2_matches_eager(relative: bool, batch: int) -> None:
    """DeBERTa-v2 as debertav2_qa_I1 runs it (GPU layouts), smaller. Copies per layer: for one sequence
    none of the context (its bmm writes the heads' rows); for more than one, the heads' and the context's;
    with disentangled attention the keys' too, whose scale sqrt(3 * head size) is no power of two: its
    kernel reads them (and stays)."""
    from pygraph.tools.workloads import FirstOutput

    extra = {"relative_attention": True, "pos_att_type": ["c2p", "p2c"], "position_buckets": 8}
    config = transformers.DebertaV2Config(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        vocab_size=100,
        **(extra if relative else {}),
    )
    torch.manual_seed(0)
    model = FirstOutput(transformers.DebertaV2ForQuestionAnswering(config)).eval()
    with knobs.scope(gpu_layouts="on"):
        compiled = pygraph.export_and_compile(model, (torch.randint(0, 100, (batch, 16)),))
    per_layer = 4 if batch > 1 else 1 if relative else 0
    assert sum(k.endswith("_clone") for k in kernels(compiled)) == 2 * per_layer + 2  # + embeddings, logits
    assert sum("div" in k.split("_") for k in kernels(compiled)) == 2 * (2 if relative else 1)
    for _ in range(2):
        ids = torch.randint(0, 100, (batch, 16))
        with torch.no_grad():
            assert_matches(compiled(ids), model(ids))


@pytest.mark.gpu
@needs_gpu
def test_gpu_heads_are_read_where_the_projections_wrote_them(no_tf32) -> None:
    """cuBLAS reads the strided heads through the recorded vendor calls (and the patched ones)."""
    torch.manual_seed(0)
    model = Heads().eval().cuda()
    x, mask = (t.cuda() for t in inputs(1))
    compiled = pygraph.export_and_compile(model, (x, mask))
    assert not [k for k in kernels(compiled) if "clone" in k]  # (the context's bmm writes its heads' rows)
    for _ in range(2):
        x, mask = (t.cuda() for t in inputs(1))
        assert_matches(compiled(x, mask), model(x, mask))

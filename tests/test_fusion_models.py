"""Fusion end to end on the emulator: which kernels small models compile to, against eager, and `freeze`.

Each fused pattern of issue 4 (bias + GELU + layer norm, residual + layer norm, batch norm in inference
+ ReLU, softmax after a scale) must be ONE generated kernel next to its library matmul or convolution.
"""

from __future__ import annotations

import pytest
import torch
from gpu_marks import needs_gpu
from test_attention_kernel import ops
from test_codegen_triton import compile_for_h100
from torch import nn

import pygraph
from pygraph.frontend import export_program
from pygraph.ir.plan import Node, Segment
from pygraph.knobs import knobs

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),  # masked-off lanes, interpreted
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),
]


def nodes(compiled: pygraph.CompiledModel) -> list[Node]:
    return [n for step in compiled.plan.steps if isinstance(step, Segment) for n in step.nodes]


def kernels(compiled: pygraph.CompiledModel) -> list[str]:
    """Generated kernels launched, less the copies of inputs into the arena (parameter indirection's)."""
    return [n.kernel for n in nodes(compiled) if n.kind == "kernel" and not n.kernel.endswith("_copy")]


def library_ops(compiled: pygraph.CompiledModel) -> list[str]:
    return [n.op for n in nodes(compiled) if n.kind == "library"]


def assert_matches(got: torch.Tensor, ref: torch.Tensor) -> None:
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5 * ref.abs().max().item())


def relative_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    return ((got - ref).abs().max() / ref.abs().max()).item()


class MLP(nn.Module):
    """The benchmark's mlp, smaller: 3 x (Linear, GELU, LayerNorm)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            *[m for _ in range(3) for m in (nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64))]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class Attention(nn.Module):
    """BERT-style attention by hand: scores, scale and mask, softmax, residual and layer norm."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(dim, dim) for _ in range(4))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = self.q(x) @ self.k(x).transpose(1, 2)
        probs = torch.softmax(scores * 0.125 + mask, dim=-1)
        return self.norm(x + self.out(probs @ self.v(x)))


class ConvBN(nn.Module):
    """Convolutions with eval batch norm, ReLU, a residual add and a squeeze-excitation style mean."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + y)
        return y * torch.sigmoid(y.mean((2, 3), keepdim=True))


def test_mlp_is_one_kernel_per_layer() -> None:
    torch.manual_seed(0)
    model, x = MLP().eval(), torch.randn(2, 64)
    compiled = pygraph.export_and_compile(model, (x,))
    assert_matches(compiled(x), model(x))
    assert library_ops(compiled) == ["aten.addmm.out"] * 3  # linear as eager computes it (out-form)
    assert len(kernels(compiled)) == 3 and all("gelu_layer_norm" in k for k in kernels(compiled))


def test_attention_softmax_and_residual_layer_norm() -> None:
    torch.manual_seed(0)
    model, x, mask = Attention().eval(), torch.randn(2, 7, 32), torch.randn(1, 1, 7)
    compiled = pygraph.export_and_compile(model, (x, mask))
    assert_matches(compiled(x, mask), model(x, mask))
    fused = kernels(compiled)
    assert any("softmax" in k for k in fused)
    assert any("add_layer_norm" in k for k in fused)
    # Every projection keeps its bias (cuBLASLt adds it for free; split-bias leaves matmuls whole): each
    # linear is an addmm adding it (out-form).
    assert [op for op in library_ops(compiled) if op not in ("aten.matmul.default", "aten.bmm.out")] == [
        "aten.addmm.out"
    ] * 4


@pytest.mark.parametrize("freeze", [False, True])
def test_batch_norm_fuses_and_freezes(freeze: bool) -> None:
    torch.manual_seed(0)
    model, x = ConvBN().eval(), torch.randn(2, 3, 9, 9)
    compiled = pygraph.export_and_compile(model, (x,), freeze=freeze)
    assert_matches(compiled(x), model(x))
    assert library_ops(compiled) == ["aten.conv2d.default"] * 2
    constants = [a.name for a in compiled.plan.arguments if a.role == "constant"]
    if freeze:  # folded into the convolutions: the kernels only add the bias
        assert len(constants) == 4 and all("frozen" in name for name in constants)
        assert not any("rsqrt" in k for k in kernels(compiled))
    else:  # conv bias + batch norm + ReLU, then batch norm + residual + ReLU: one kernel each
        assert constants == []
        assert sum("rsqrt" in k for k in kernels(compiled)) == 2
    with torch.no_grad():
        model.bn1.weight.mul_(2)
    changed = model(x)
    if freeze:  # frozen weights do not follow the model
        assert not torch.allclose(compiled(x), changed)
    else:
        assert_matches(compiled(x), changed)


def test_freeze_leaves_batch_norm_without_convolution() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU(), nn.BatchNorm2d(4)).eval()
    model[2].running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 5, 5)
    compiled = pygraph.export_and_compile(model, (x,), freeze=True)
    assert_matches(compiled(x), model(x))
    assert not [a for a in compiled.plan.arguments if a.role == "constant"]
    assert any("rsqrt" in k for k in kernels(compiled))


def test_layer_norm_softmax_rows_longer_than_a_block() -> None:
    """Rows of 5000 (more than the 4096 a kernel keeps in registers): looped reductions, end to end."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.LayerNorm(5000), nn.Softmax(-1)).eval()
    x = torch.randn(3, 5000)
    compiled = pygraph.export_and_compile(model, (x,))
    assert_matches(compiled(x), model(x))
    assert len(kernels(compiled)) == 1


def test_gelu_tanh_and_silu_are_one_kernel_each() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.GELU(approximate="tanh"), nn.Linear(16, 16), nn.SiLU()).eval()
    x = torch.randn(4, 16)
    compiled = pygraph.export_and_compile(model, (x,))
    assert_matches(compiled(x), model(x))
    assert library_ops(compiled) == ["aten.addmm.out"] * 2
    assert len(kernels(compiled)) == 2 and all("gelu" in k or "silu" in k for k in kernels(compiled))


class MaskedAttention(nn.Module):
    """Two attention calls sharing a boolean padding-and-causal mask, as HF models build them."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        causal = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        mask = keep[:, None, None, :] & causal
        a = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return nn.functional.scaled_dot_product_attention(a, k, v, attn_mask=mask)


def test_attention_masks_are_prepared_once_and_match_eager():
    torch.manual_seed(7)
    model = MaskedAttention()
    keep = torch.rand(2, 32) > 0.3
    keep[:, 0] = True  # no row fully masked
    q, k, v = (torch.randn(2, 3, 32, 16) for _ in range(3))
    compiled = pygraph.export_and_compile(model, (q, k, v, keep))
    attention = [n for n in nodes(compiled) if n.op == "aten.scaled_dot_product_attention.default"]
    assert len(attention) == 2 and attention[0].reads[3] == attention[1].reads[3]  # one prepared mask
    mask_layout = compiled.plan.buffers[attention[0].reads[3]].layout
    assert (mask_layout.shape, mask_layout.dtype.name) == ((2, 3, 32, 32), "float32")
    for _ in range(2):
        q, k, v = (torch.randn(2, 3, 32, 16) for _ in range(3))
        assert_matches(compiled(q, k, v, keep), model(q, k, v, keep))


class DenseBlock(nn.Module):
    """DenseNet's block: each layer reads the concatenation of all earlier features through batch norm
    and ReLU (eval), and adds its own."""

    def __init__(self, channels: int = 5, growth: int = 3, layers: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(
                nn.BatchNorm2d(channels + i * growth),
                nn.ReLU(),
                nn.Conv2d(channels + i * growth, growth, 3, padding=1),
            )
            for i in range(layers)
        )
        for layer in self.layers:
            layer[0].running_mean.uniform_(-1, 1)
            layer[0].running_var.uniform_(0.5, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


def test_dense_block_reads_its_concatenations_in_the_batch_norm_kernels() -> None:
    torch.manual_seed(0)
    model, x = DenseBlock().eval(), torch.randn(2, 5, 7, 9)
    compiled = pygraph.export_and_compile(model, (x,))
    assert_matches(compiled(x), model(x))
    assert library_ops(compiled) == ["aten.conv2d.default"] * 3  # no ATen cat left
    fused = kernels(compiled)
    assert sum("cat" in k and "relu" in k for k in fused) == 3  # the first: a cat of one piece, x
    assert any(k.endswith("_cat") for k in fused)  # the block's result


class Concatenations(nn.Module):
    """Pieces of every kind: transposed views, an int tensor promoted to float, the same tensor twice,
    negative and outer dims, a broadcast consumer and a reduction after the cat."""

    def forward(
        self, a: torch.Tensor, b: torch.Tensor, ids: torch.Tensor, w: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        rows = torch.cat([a.t(), b, b], dim=-1) * w  # [5, 3 + 7 + 7] times a broadcast [17]
        outer = torch.cat([a, ids.t()], dim=0).sigmoid()  # [3 + 4, 5]: float and int64 pieces
        normed = torch.nn.functional.layer_norm(torch.cat([b, a.t()], 1), (10,))
        return rows, outer, normed


def test_concatenations_of_views_dtypes_and_repeats_match_eager() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(3, 5), torch.randn(5, 7)
    ids, w = torch.randint(-3, 4, (5, 4)), torch.randn(17)
    model = Concatenations()
    compiled = pygraph.export_and_compile(model, (a, b, ids, w))
    for got, ref in zip(compiled(a, b, ids, w), model(a, b, ids, w), strict=True):
        assert_matches(got, ref)
    assert "aten.cat.default" not in library_ops(compiled)
    a2, b2 = torch.randn(3, 5), torch.randn(5, 7)  # other inputs: nothing is baked in
    for got, ref in zip(compiled(a2, b2, ids, w), model(a2, b2, ids, w), strict=True):
        assert_matches(got, ref)


class ComputedPieces(nn.Module):
    """Pieces computed by pointwise ops that only the cat reads: rotary embedding's `rotate_half`
    (`cat([-x2, x1])`), a piece of two inputs, one broadcast ([8] against [2, 3, 8]); and a piece also
    returned, which stays a kernel of its own."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x1, x2 = x[..., :8], x[..., 8:]
        rotated = torch.cat((-x2, x1), dim=-1) * 2 + x
        mixed = torch.cat([torch.tanh(y[..., :5]) * scale[:5], y[..., 5:] - x2[..., :3]], dim=-1)
        shared = torch.exp(x1)
        return rotated, mixed.sigmoid(), torch.cat([shared, x2], dim=-1), shared


def test_pieces_computed_by_pointwise_ops_run_in_the_cat_kernel() -> None:
    torch.manual_seed(0)
    model, shapes = ComputedPieces(), [(2, 3, 16), (2, 3, 8), (8,)]
    compiled = pygraph.export_and_compile(model, tuple(torch.randn(*s) for s in shapes))
    kernels = [k for k in ops(compiled) if not k.startswith("aten.")]
    assert kernels == ["k0_neg_cat_mul_add", "k0_exp", "k0_tanh_mul_sub_cat_sigmoid", "k0_cat"], kernels
    for _ in range(2):
        inputs = [torch.randn(*s) for s in shapes]
        for got, ref in zip(compiled(*inputs), model(*inputs), strict=True):
            assert_matches(got, ref)
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


class RotateEveryTwo(nn.Module):
    """GPT-J's rotary embedding: `stack([-x2, x1], -1).flatten(-2)` on interleaved pairs."""

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        rotated = torch.stack([-x[..., 1::2], x[..., ::2]], -1).flatten(-2)
        return x * cos + rotated * sin


def test_stack_is_a_generated_concatenation() -> None:
    """`stack` decomposes into a `cat` of its pieces unsqueezed: generated kernels read the input through
    views, where ATen's stack (a library call) needed it copied into the arena first; the unsqueeze moves
    onto the negation's operand (`frontend/unsqueeze_operands.py`), so the `cat`'s kernel computes it.
    Left: the reader of the flattened pair is a kernel of its own (the fuser does not see through the
    flatten), where `rotate_half`'s `cat` is one kernel with its reader."""
    torch.manual_seed(0)
    model, shapes = RotateEveryTwo(), [(2, 8, 4, 16), (8, 1, 16), (8, 1, 16)]
    compiled = pygraph.export_and_compile(model, tuple(torch.randn(*s) for s in shapes))
    assert library_ops(compiled) == [] and kernels(compiled) == ["k0_neg_cat", "k0_mul_add"]
    assert all(io["mechanism"] == "indirect" for io in compiled.explain().io)  # (x read where it is)
    for _ in range(2):
        inputs = [torch.randn(*s) for s in shapes]
        assert_matches(compiled(*inputs), model(*inputs))


class PatchEmbedding(nn.Module):
    """ViT's patch embedding (timm's and Hugging Face's): a strided convolution, flatten(2), transpose(1, 2),
    the class token concatenated in front, the position embedding added."""

    def __init__(self, dim: int = 10, patch: int = 4, patches: int = 6) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, patches + 1, dim))

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = self.proj(img).flatten(2).transpose(1, 2)
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos


@pytest.mark.parametrize("layouts", ["off", "on"])
def test_patch_embedding_bias_is_added_in_the_cat_kernel(layouts: str) -> None:
    """split-bias follows the flatten and transpose to the cat: the convolution has no bias (on a GPU,
    ATen adds one with a kernel of its own) and the cat's kernel adds it to its piece."""
    torch.manual_seed(0)
    model = PatchEmbedding().eval()

    def image() -> torch.Tensor:  # 11 x 13 pixels (the last row and column of patches cut), NHWC strides
        return torch.randn(3, 11, 13, 3).permute(0, 3, 1, 2)

    with knobs.scope(gpu_layouts=layouts):
        compiled = pygraph.export_and_compile(model, (image(),))
    (conv,) = [n for n in nodes(compiled) if n.op == "aten.conv2d.default"]
    assert conv.aten_args[2] is None
    assert [k for k in ops(compiled) if not k.startswith("aten.")] == [
        "k0_add_cat"
    ]  # (bias add, cat, position add)
    for _ in range(2):
        img = image()
        assert relative_error(compiled(img), model(img)) <= 1e-5
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


def test_unbatched_convolution_bias_runs_along_its_channels() -> None:
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval(), torch.randn(3, 6, 7)
    compiled = pygraph.export_and_compile(model, (x,))
    assert [n.aten_args[2] for n in nodes(compiled) if n.op == "aten.conv2d.default"] == [None]
    assert relative_error(compiled(x), model(x)) <= 1e-5


class CombinedMask(nn.Module):
    """A mask combined before its unit dims are added (`(a & b)[:, None, None, :]`), and a value also read
    elsewhere (computed once, so its unsqueeze stays)."""

    def forward(self, scores: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mask = (a & b)[:, None, None, :]
        shared = a.float() * 2
        return torch.where(mask, scores, -1e4).softmax(-1), scores + shared[:, None, None, :], shared


def test_unit_dims_added_after_pointwise_ops_are_added_to_their_operands() -> None:
    torch.manual_seed(0)
    model, scores = CombinedMask(), torch.randn(2, 3, 5, 5)
    masks = (torch.rand(2, 5) > 0.3, torch.rand(2, 5) > 0.3)
    program = export_program(model, (scores, *masks))
    (both,) = program.graph.find_nodes(op="call_function", target=torch.ops.aten.__and__.Tensor)
    assert [str(u.target) for u in both.users] == ["aten.where.ScalarOther"]  # (its unit dims moved)
    compiled = pygraph.export_and_compile(model, (scores, *masks))
    assert kernels(compiled) == ["k0_to_copy_mul", "k0_and_where_softmax_add"], kernels(compiled)
    for _ in range(2):
        scores, masks = torch.randn(2, 3, 5, 5), (torch.rand(2, 5) > 0.3, torch.rand(2, 5) > 0.3)
        for got, ref in zip(compiled(scores, *masks), model(scores, *masks), strict=True):
            assert_matches(got, ref)


class ExpandedMasks(nn.Module):
    """Boolean masks combined on [B, 1, 1, S] and read through `expand(B, H, S, S)`: by `where` before a
    softmax, and as an additive mask."""

    def forward(
        self, scores: torch.Tensor, a: torch.Tensor, b: torch.Tensor, pad: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        batch, heads, n, _ = scores.shape
        mask = a[:, None, None, :] & b[:, None, None, :]
        probs = torch.where(mask.expand(batch, heads, n, n), scores, float("-inf")).softmax(-1)
        additive = (~(pad[:, None, None, :] | a[:, None, None, :])).float() * -1e4
        return probs, scores * 0.5 + additive.expand(batch, heads, n, n)


def test_masks_read_through_an_expand_are_recomputed_in_their_readers_kernel() -> None:
    torch.manual_seed(0)
    model = ExpandedMasks()

    def inputs() -> tuple[torch.Tensor, ...]:  # odd sizes, scores transposed (not contiguous)
        scores = torch.randn(3, 2, 7, 7).transpose(-1, -2)
        a, b, pad = (torch.rand(3, 7) > 0.4 for _ in range(3))
        a[:, 0] = b[:, 0] = True  # no row fully masked
        return scores, a, b, pad

    compiled = pygraph.export_and_compile(model, inputs())  # 3 kernels before: the masks' and the reader's
    assert [k for k in ops(compiled) if not k.startswith("aten.")] == [
        "k0_and_where_softmax_or_bitwise_not_to_copy_mul_add"
    ]
    for _ in range(2):
        args = inputs()
        for got, ref in zip(compiled(*args), model(*args), strict=True):
            assert relative_error(got, ref) <= 1e-5
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
def test_gpu_concatenations_match_eager() -> None:
    torch.manual_seed(0)
    block, x = DenseBlock().cuda().eval(), torch.randn(2, 5, 7, 9, device="cuda")
    compiled = pygraph.export_and_compile(block, (x,), target="cuda")
    assert "aten.cat.default" not in library_ops(compiled)
    for _ in range(3):
        x = torch.randn(2, 5, 7, 9, device="cuda")
        assert_matches(compiled(x), block(x))
    a, b = torch.randn(3, 5, device="cuda"), torch.randn(5, 7, device="cuda")
    ids, w = torch.randint(-3, 4, (5, 4), device="cuda"), torch.randn(17, device="cuda")
    model = Concatenations()
    compiled = pygraph.export_and_compile(model, (a, b, ids, w), target="cuda")
    for got, ref in zip(compiled(a, b, ids, w), model(a, b, ids, w), strict=True):
        assert_matches(got, ref)
    shapes = [(2, 3, 16), (2, 3, 8), (8,)]
    inputs = [torch.randn(*s, device="cuda") for s in shapes]
    compiled = pygraph.export_and_compile(ComputedPieces(), tuple(inputs), target="cuda")
    assert "k0_neg_cat_mul_add" in ops(compiled)
    for got, ref in zip(compiled(*inputs), ComputedPieces()(*inputs), strict=True):
        assert_matches(got, ref)


@pytest.mark.parametrize("derived", ["auto", "none"])
@pytest.mark.parametrize(
    ("make", "shape"),
    [
        # T5's and MPNet's relative positions: arange[None, :] - arange[:, None], added to scores
        (lambda x: x + (torch.arange(x.shape[-1])[None, :] - torch.arange(x.shape[-1])[:, None]), (2, 8, 8)),
        # a position ramp added to every row; 70000 values are never held as derived state
        (lambda x: x + torch.arange(x.shape[-1], dtype=x.dtype), (2, 70_000)),
    ],
    ids=["relative", "ramp"],
)
def test_an_arange_read_at_a_broadcast_shape_keeps_its_values(make, shape, derived):
    """An arange's values are its kernel's element index: recomputed inside a larger kernel that reads it
    through a broadcast, `arange(W)` counted on across the rows (MPNet, T5, Funnel, mBART and WavLM were
    wrong with PYGRAPH_DERIVED=none, and any arange of more than 64K values always)."""

    class Positions(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return make(x)

    torch.manual_seed(0)
    x = torch.randn(shape)
    with knobs.scope(derived=derived):
        compiled = pygraph.export_and_compile(Positions(), (x,), target="emulator")
    x = torch.randn(shape)
    assert relative_error(compiled(x), Positions()(x)) <= 1e-6

"""Which dims declared dynamic calls may be padded along (frontend/row_prefixes.py): each op's rule, on the
program traced with the dims symbolic, and refusals that name the op and its line."""

import re

import pytest
import torch
import torch.nn.functional as F
from test_padded_calls import Causal
from torch import nn
from torch.export import Dim

from pygraph.frontend import declared_dims


class Fn(nn.Module):
    def __init__(self, fn, **state) -> None:
        super().__init__()
        self.fn = fn
        for name, value in state.items():
            setattr(self, name, value)

    def forward(self, *inputs):
        return self.fn(self, *inputs)


def paddings(model: nn.Module, inputs: tuple, dims: tuple) -> dict:
    """The Padding of each symbol, by the name of the first input dim it sizes ('x0': input x, dim 0)."""
    names = ["x", "y", "z"][: len(inputs)]
    shapes = tuple({d: Dim(f"d{d}", min=4, max=512) for d in ds} or None for ds in dims)
    if isinstance(model, Fn):  # (forward takes *inputs)
        shapes = (shapes,)
    declared, padding = declared_dims(model, inputs, shapes)
    return {
        f"{names[i]}{d}": padding[spec.symbol] for (i, d), spec in declared.items() if spec.formula is None
    }


def refusal(model: nn.Module, inputs: tuple, dims: tuple, where: str = "x0") -> str | None:
    return paddings(model, inputs, dims)[where].refusal


MLP = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 8)).eval()


def test_the_rows_of_an_mlp_pad():
    padding = paddings(MLP, (torch.randn(4, 16),), ((0,),))["x0"]
    assert padding.refusal is None and padding.outputs == ((0,),)


@pytest.mark.parametrize(
    "fn, why",
    [
        (lambda m, x: x.softmax(0), r"aten.softmax.int at .*test_row_prefixes.py:\d+ .*works along"),
        (lambda m, x: x - x.mean(0), r"aten.mean.dim .* reduces along"),
        (lambda m, x: x.sum(), r"aten.sum.default .* reduces along"),
        (lambda m, x: x.sort(0).values, r"aten.sort.default .* works along"),
        (lambda m, x: x.flip(0), r"aten.flip.default .* works along"),
        (lambda m, x: x.t() @ x, r"aten.matmul.default .* sums products along"),
        (
            lambda m, x: (x * 2).reshape(-1).view(6, -1),
            r"aten.view.default .* reshapes .* into another order",
        ),
        (lambda m, x: x[1:], r"aten.slice.Tensor .* cuts .* from other than its start"),
        (lambda m, x: x * x.shape[0], r"aten.mul.Tensor .* reads the size .* as a number"),
        (lambda m, x: x + torch.rand_like(x), r"draws random numbers"),
        (lambda m, x: (x * 2, x.shape[0]), r"a result is the size"),
        (lambda m, x: x, r"a result is a view of an input"),
        (lambda m, x: x * 2 if x.sum() > 0 else x * 3, r"a check at .* reads values a padded call changes"),
        (lambda m, x: x.repeat(2, 1), r"aten.repeat.default .* repeats"),
        (lambda m, x: torch.cat([x, x]), r"aten.cat.default .* concatenates along"),
        (lambda m, x: x[torch.tensor([1, 0, 2])], r"aten.index.Tensor .* indexes .* by data"),
    ],
)
def test_ops_that_mix_entries_along_the_dim_refuse_it(fn, why):
    said = refusal(Fn(fn), (torch.randn(4, 6),), ((0,),))
    assert said is not None and re.search(why, said), said


def test_a_value_that_mixes_entries_is_refused_only_where_it_is_used():
    """Computing a statistic over the batch is harmless while nothing reads it."""

    def fn(m, x):
        x.sum(0)  # dead
        return x * 2

    assert refusal(Fn(fn), (torch.randn(4, 6),), ((0,),)) is None


def test_writing_state_from_the_rows_is_refused():
    def fn(m, x):
        m.running.copy_(x.mean(0))
        return x + 1

    model = Fn(fn)
    model.register_buffer("running", torch.zeros(6))
    assert "reduces along" in refusal(model, (torch.randn(4, 6),), ((0,),))


def test_views_that_keep_the_dim_outermost_pad():
    def fn(m, x):
        b = x.shape[0]
        h = x.view(b, 2, 3).transpose(1, 2).reshape(b * 3, 2)  # rows of 3 per entry
        return h.view(b, 6) * 2, x.unsqueeze(1).expand(b, 5, 6).sum(1)

    padding = paddings(Fn(fn), (torch.randn(4, 6),), ((0,),))["x0"]
    assert padding.refusal is None and padding.outputs == ((0,), (0,))


def test_a_dim_merged_inside_another_holds_its_entries_in_blocks():
    """`[6, s] -> [6 * s]`: 6 blocks of the batch. Ops working on each entry keep them, a reshape can split
    them back (as `nn.MultiheadAttention` folds the batch into each position's rows and back), and a result
    cannot be cut along them."""

    def merged(m, x):
        y = torch.sin(x.t().reshape(-1, 1)) @ torch.ones(1, 3)  # [6 * s, 3]
        return y.view(6, -1, 3).transpose(0, 1) if m.back else y

    assert refusal(Fn(merged, back=True), (torch.randn(4, 6),), ((0,),)) is None
    assert "holds s" in refusal(Fn(merged, back=False), (torch.randn(4, 6),), ((0,),))
    scan = refusal(
        Fn(lambda m, x: x.t().reshape(-1).cumsum(0).view(6, -1).t()), (torch.randn(4, 6),), ((0,),)
    )
    assert "scans along" in scan and "in blocks" in scan


@pytest.mark.parametrize("batch_first", [True, False])
def test_the_batch_of_a_transformer_layer_pads_and_its_length_does_not(batch_first):
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first, dropout=0.0).eval()
    x = torch.randn(4, 10, 32) if batch_first else torch.randn(10, 4, 32)
    batch, length = (0, 1) if batch_first else (1, 0)
    found = paddings(layer, (x,), ((batch, length),))
    assert found[f"x{batch}"].refusal is None and found[f"x{batch}"].outputs == ((batch,),)
    assert "without a causal mask" in found[f"x{length}"].refusal


def test_a_scan_along_the_dim_keeps_prefixes():
    assert refusal(Fn(lambda m, x: x.cumsum(1)), (torch.randn(4, 8),), ((1,),), "x1") is None


def test_causal_attention_along_the_length_pads_and_other_attention_is_refused():
    def attend(causal):
        def fn(m, q):
            return F.scaled_dot_product_attention(q, q, q, is_causal=causal)

        return Fn(fn)

    q = torch.randn(4, 2, 8, 4)
    assert refusal(attend(True), (q,), ((2,),), "x2") is None
    assert "without a causal mask" in refusal(attend(False), (q,), ((2,),), "x2")
    assert refusal(attend(False), (q,), ((0,),)) is None  # the batch


def test_convolutions_pad_their_batch_only():
    conv = nn.Conv2d(3, 4, 3).eval()
    assert refusal(conv, (torch.randn(4, 3, 8, 8),), ((0,),)) is None
    assert "convolves along" in refusal(conv, (torch.randn(4, 3, 8, 8),), ((2,),), "x2")


def test_ffts_pad_the_dims_they_do_not_transform():
    def spectrum(m, x):
        return torch.fft.fft(torch.fft.fft(x, dim=2), dim=1).real

    inputs = (torch.randn(4, 6, 8),)
    assert refusal(Fn(spectrum), inputs, ((0,),)) is None
    for dim, op in ((2, "_fft_r2c"), (1, "_fft_c2c")):
        said = refusal(Fn(spectrum), inputs, ((dim,),), f"x{dim}")
        assert said is not None and re.search(rf"aten.{op}.default .* transforms along", said), said


def test_batch_norm_pads_in_eval_and_not_in_training():
    norm = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4))
    assert refusal(norm.eval(), (torch.randn(4, 3, 4, 4),), ((0,),)) is None
    assert refusal(norm.train(), (torch.randn(4, 3, 4, 4),), ((0,),)) is not None


def test_an_index_of_the_positions_along_the_dim_reads_each_row_where_it_is():
    """`mask[arange(batch)[:, None], j]`, as Hugging Face builds attention masks."""

    def fn(m, x, mask):
        rows = torch.arange(x.shape[0])[:, None]
        return x * mask[rows, torch.arange(x.shape[1])[None, :]]

    model, inputs = Fn(fn), (torch.randn(4, 6), torch.ones(4, 6))
    assert refusal(model, inputs, ((0,), (0,))) is None


def test_embeddings_and_gathers_pad_by_their_indices():
    table = nn.Embedding(10, 4)

    def fn(m, ids):
        return m.table(ids).sum(-1) + m.table.weight[ids].mean(-1)

    assert refusal(Fn(fn, table=table), (torch.randint(0, 10, (4, 5)),), ((0,),)) is None


def test_a_derived_dim_pads_as_its_symbol():
    def fn(m, x, y):
        return x.view(2, -1).sum(0)[: y.shape[0]] * y

    half = Dim("half", min=2, max=32)
    _, padding = declared_dims(Fn(fn), (torch.randn(8), torch.randn(4)), (({0: 2 * half}, {0: half}),))
    (symbol,) = padding
    assert "reshapes" in padding[symbol].refusal  # x.view(2, -1) splits 2 * half in the other order


def test_a_language_model_pads_its_batch_but_not_a_masked_length():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.GPT2Config(n_embd=32, n_layer=1, n_head=4, vocab_size=100, n_positions=64)
    model = transformers.GPT2LMHeadModel(config).eval()

    def fn(m, ids, mask):
        return m.lm(input_ids=ids, attention_mask=mask).logits

    inputs = (torch.randint(0, 100, (4, 8)), torch.ones(4, 8, dtype=torch.long))
    found = paddings(Fn(fn, lm=model), inputs, ((0, 1), (0, 1)))
    assert found["x0"].refusal is None and found["x0"].outputs == ((0,),)
    assert found["x1"].refusal is not None


def test_a_causal_decoder_pads_its_length_and_its_batch():
    found = paddings(Causal().eval(), (torch.randint(0, 50, (4, 8)),), ((0, 1),))
    assert found["x0"].refusal is None and found["x1"].refusal is None
    assert found["x1"].outputs == ((1,),)

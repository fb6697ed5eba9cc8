"""Calls of new sizes of a dim declared dynamic run the program of the next power of two, padded, where no
op mixes entries along the dim (frontend/row_prefixes.py, pygraph/padding.py); against eager, on the
emulator and on the GPU."""

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from gpu_marks import needs_gpu
from torch import nn
from torch.export import Dim

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error


class Rows(nn.Module):
    """Rows that no op mixes, and a result whose rows are its last dim (cut inside its memory order)."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down, self.norm = nn.Linear(32, 64), nn.Linear(64, 16), nn.LayerNorm(64)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.down(F.gelu(self.norm(self.up(x)))).softmax(-1)
        return y, (y * 2).t().contiguous()


def _compile(model: nn.Module, example: tuple, dims: dict, **options) -> pygraph.CompiledModel:
    with torch.no_grad():
        return pygraph.export_and_compile(model, example, dynamic_shapes=dims, **options)


def _check(compiled, model: nn.Module, inputs: tuple) -> tuple:
    with torch.no_grad():
        got, want = compiled(*inputs), model(*inputs)
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want), strict=True):
        assert g.shape == w.shape and g.is_contiguous() == w.is_contiguous()
        assert relative_error(g, w) <= 1e-5
    return got


def test_calls_of_new_sizes_run_the_program_of_the_next_power_of_two():
    torch.manual_seed(0)
    model = Rows().eval()
    compiled = _compile(model, (torch.randn(4, 32),), {"x": {0: Dim("batch", min=1, max=48)}})
    assert compiled._padding and all(p.refusal is None for p in compiled._padding.values())
    kept = [
        (x, _check(compiled, model, (x,))) for x in (torch.randn(n, 32) for n in (3, 5, 7, 6, 33, 2, 1, 40))
    ]
    # 3 runs the example's program (4 rows), 5 to 7 the one of 8, 33 and 40 the largest declared (48); 1
    # and 2 compile for their own size (1 is never padded, 2 is its own bucket)
    assert sorted(compiled._variants) == [((1, 32),), ((2, 32),), ((8, 32),), ((48, 32),)]
    assert sorted(compiled._padded_calls) == [((n, 32),) for n in (3, 5, 6, 7, 33, 40)]
    for x, (y, t) in kept:  # results of earlier calls stay as they were
        assert relative_error(y, model(x)[0]) <= 1e-5 and relative_error(t, model(x)[1]) <= 1e-5


def test_padding_off_compiles_each_size():
    model = Rows().eval()
    with knobs.scope(padding="off"):
        compiled = _compile(model, (torch.randn(4, 32),), {"x": {0: Dim("batch", min=1, max=48)}})
    _check(compiled, model, (torch.randn(5, 32),))
    assert sorted(compiled._variants) == [((5, 32),)] and not compiled._padded_calls
    assert "PYGRAPH_PADDING=off" in str(compiled.explain())


class KeepsItsRows(Rows):
    """Rows that no op mixes, also kept in a plain attribute (a cache of the last call's rows)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, t = super().forward(x)
        self.last_rows = y * 3
        return y, t


def test_a_model_setting_attributes_to_its_results_compiles_each_size():
    """A padded program would leave its padded rows in the attribute: such calls compile their sizes."""
    model = KeepsItsRows().eval()
    eager = copy.deepcopy(model)
    compiled = _compile(model, (torch.randn(4, 32),), {"x": {0: Dim("batch", min=1, max=48)}})
    for rows in (5, 3):
        x = torch.randn(rows, 32)
        _check(compiled, eager, (x,))
        torch.testing.assert_close(model.last_rows, eager.last_rows, rtol=1e-5, atol=1e-6)
    assert sorted(compiled._variants) == [((3, 32),), ((5, 32),)] and not compiled._padded_calls


class Pairs(nn.Module):
    """Inputs whose dims are a symbol and twice it, in a dict (a structured argument)."""

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        pairs = batch["pairs"].view(-1, 2, 8)
        return (pairs.sum(1) * batch["weights"][:, None]).tanh()


def test_an_input_sized_otherwise_than_by_a_multiple_of_the_symbol_is_never_padded():
    class Shifted(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return x * 2  # (y unused)

    n = Dim("n", min=2, max=32)
    compiled = _compile(Shifted(), (torch.randn(4), torch.randn(5)), {"x": {0: n}, "y": {0: n + 1}})
    (padding,) = compiled._padding.values()
    assert "is not" in padding.refusal and "times a number" in padding.refusal
    _check(compiled, Shifted(), (torch.randn(3), torch.randn(4)))
    assert sorted(compiled._variants) == [((3,), (4,))]


def test_structured_inputs_and_a_derived_dim_pad_with_their_symbol():
    torch.manual_seed(1)
    model, n = Pairs(), Dim("n", min=2, max=32)
    example = ({"pairs": torch.randn(8, 8), "weights": torch.randn(4)},)
    compiled = _compile(model, example, {"batch": {"pairs": {0: 2 * n}, "weights": {0: n}}})
    for rows in (3, 5, 4, 6):
        _check(compiled, model, ({"pairs": torch.randn(2 * rows, 8), "weights": torch.randn(rows)},))
    assert sorted(compiled._variants) == [((16, 8), (8,))]


class Causal(nn.Module):
    """A decoder as nanoGPT writes it: positions from arange, causal attention (is_causal=True)."""

    def __init__(self) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(50, 16), nn.Embedding(64, 16)
        self.qkv, self.out, self.norm = nn.Linear(16, 48), nn.Linear(16, 50), nn.LayerNorm(16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        x = self.wte(ids) + self.wpe(torch.arange(t, device=ids.device))
        q, k, v = self.qkv(self.norm(x)).split(16, dim=2)
        q, k, v = (y.view(b, t, 2, 8).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, 16)
        return self.out(x + y)


def test_a_causal_decoder_pads_its_prompts_length():
    torch.manual_seed(2)
    model = Causal().eval()
    compiled = _compile(model, (torch.randint(0, 50, (2, 16)),), {"ids": {1: Dim("length", min=2, max=64)}})
    for length in (9, 13, 5, 16, 30):
        _check(compiled, model, (torch.randint(0, 50, (2, length)),))
    assert sorted(compiled._variants) == [((2, 8),), ((2, 32),)]
    assert "run the program of the next power of two" in str(compiled.explain())


@pytest.mark.parametrize("batch_first", [True, False])
def test_a_transformer_layer_pads_its_batch(batch_first):
    """nn.MultiheadAttention folds the batch into each position's rows and back (blocks of the batch);
    sequence-first, each result is cut inside its memory order and copied dense."""
    torch.manual_seed(5)
    model = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=batch_first).eval()
    batch = 0 if batch_first else 1

    def draw(n: int) -> torch.Tensor:
        return torch.randn(n, 10, 32) if batch_first else torch.randn(10, n, 32)

    compiled = _compile(model, (draw(4),), {"src": {batch: Dim("batch", min=1, max=16)}})
    for n in (3, 5, 7):
        _check(compiled, model, (draw(n),))
    assert len(compiled._variants) == 1 and len(compiled._padded_calls) == 3


class Centered(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - x.mean(0)


def test_a_dim_an_op_mixes_compiles_each_size_and_explain_says_why():
    model = Centered()
    compiled = _compile(model, (torch.randn(4, 8),), {"x": {0: Dim("batch", min=2, max=64)}})
    for n in (5, 6):
        _check(compiled, model, (torch.randn(n, 8),))
    assert sorted(compiled._variants) == [((5, 8),), ((6, 8),)]
    said = str(compiled.explain())
    assert "dim 0 of 'x': each size compiles its own program: aten.mean.dim at" in said
    assert "test_padded_calls.py" in said and "reduces along" in said


class Normed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.out = nn.BatchNorm1d(8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(x)).tanh()


class Deciding(Normed):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Parameter(torch.tensor(1.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y.relu() if self.gate.item() > 0 else y  # a decision on the data, not on rows (a small
        # buffer's value would be held by the program instead: frontend/state_values.py)


def test_calls_pad_only_while_the_traced_program_holds():
    """The proof is the traced program's: after `.train()` (batch statistics mix rows) a call of a size
    padded before compiles its own; a program deciding on the data pads none (other ways are unproven)."""
    torch.manual_seed(4)
    model = Normed().eval()
    compiled = _compile(model, (torch.randn(4, 8),), {"x": {0: Dim("batch", min=2, max=16)}})
    x = torch.randn(5, 8)
    _check(compiled, model, (x,))
    assert sorted(compiled._padded_calls) == [((5, 8),)]
    model.train()
    reference = copy.deepcopy(model)
    with torch.no_grad():
        assert relative_error(compiled(x), reference(x)) <= 1e-5  # batch statistics of its own 5 rows
    assert ((5, 8),) in compiled._variants

    deciding = Deciding().eval()
    compiled = _compile(deciding, (torch.randn(4, 8),), {"x": {0: Dim("batch", min=2, max=16)}})
    assert compiled._padding and all(p.refusal is None for p in compiled._padding.values())
    _check(compiled, deciding, (torch.randn(5, 8),))
    assert not compiled._padded_calls and sorted(compiled._variants) == [((5, 8),)]


class Cached(nn.Module):
    """Fills a plain dict on its first eager call in eval mode, as timm's LeViT fills its attention biases."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.cache = nn.Linear(8, 8), {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.cache.get("bias")
        if bias is None:
            bias = self.lin.bias * 2
            if not self.training:
                self.cache["bias"] = bias
        return self.lin(x) + bias


def test_after_python_state_changes_calls_pad_with_the_way_traced_from_it():
    """The traced program read an empty cache; once eager fills it, a call traces another way, which proves
    padding anew for the model as it is now, and calls of other sizes pad with it."""
    torch.manual_seed(0)
    model = Cached().eval().requires_grad_(False)
    compiled = _compile(model, (torch.randn(4, 8),), {"x": {0: Dim("batch", min=2, max=32)}})
    model(torch.randn(4, 8))  # fills the cache
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (4, 3, 5, 6):
            _check(compiled, model, (torch.randn(n, 8),))
    (way,) = [w for w in compiled._ways if w is not None]
    assert not compiled._variants and sorted(way._padded_calls) == [((n, 8),) for n in (3, 5, 6)]


def test_past_the_variant_limit_padded_calls_run_eagerly():
    model = Rows().eval()
    with knobs.scope(max_variants=1):
        compiled = _compile(model, (torch.randn(4, 32),), {"x": {0: Dim("batch", min=1, max=64)}})
        _check(compiled, model, (torch.randn(5, 32),))  # compiles the program of 8
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _check(compiled, model, (torch.randn(17, 32),))  # the program of 32 would be a second
    assert sorted(compiled._variants) == [((8, 32),)]
    assert any("runs such calls eagerly" in str(w.message) for w in caught)


@needs_gpu
@pytest.mark.gpu
def test_gpu_padded_calls_queued_without_synchronising():
    torch.manual_seed(3)
    model = Rows().cuda().eval()
    compiled = _compile(model, (torch.randn(8, 32, device="cuda"),), {"x": {0: Dim("batch", min=1, max=256)}})
    inputs = [torch.randn(n, 32, device="cuda") for n in (5, 8, 100, 7, 129, 5, 100)]
    with torch.no_grad():
        outputs = [compiled(x) for x in inputs]
        torch.cuda.synchronize()
        for x, (y, t) in zip(inputs, outputs, strict=True):
            want = model(x)
            assert relative_error(y, want[0]) <= 1e-4 and relative_error(t, want[1]) <= 1e-4
    assert sorted(compiled._variants) == [((128, 32),), ((256, 32),)]
    assert all(v.stats()["graphs"] >= 1 for v in compiled._variants.values())

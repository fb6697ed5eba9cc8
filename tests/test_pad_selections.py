"""Selections by the data padded to their bound (`pad-selections`): mixtures of experts routing tokens by
`nonzero`, `torch.where` and boolean masks run in one graph, through the emulator, and match eager on
random inputs, experts that no token chooses and padded rows whose values are NaN included, rows added
back or assigned where their mask took them. Selections whose rows meet an op that mixes them, or that are
assigned elsewhere, keep the data's size and run between graphs.
End to end on a GPU (tests marked `gpu`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error


class TopOneExperts(nn.Module):
    """Each token's one expert by `nonzero(choice == e)`, its rows gathered, computed and added back with
    `index_add` weighted by the router's probability."""

    def __init__(self, features: int = 16, experts: int = 4, hidden: int = 32) -> None:
        super().__init__()
        self.router = nn.Linear(features, experts)
        self.up = nn.ModuleList(nn.Linear(features, hidden) for _ in range(experts))
        self.down = nn.ModuleList(nn.Linear(hidden, features) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, choice = self.router(x).softmax(-1).max(-1)
        out = torch.zeros_like(x)
        for e, (up, down) in enumerate(zip(self.up, self.down, strict=True)):
            rows = torch.nonzero(choice == e).squeeze(1)
            out = out.index_add(0, rows, down(F.gelu(up(x[rows]))) * weight[rows].unsqueeze(1))
        return out + x


class TopTwoExperts(nn.Module):
    """Hugging Face's sparse mixture (Mixtral before grouped products): `torch.where` over a [experts,
    top-k, tokens] one-hot mask gives each expert's (slot, token) pairs; the routing weights are gathered
    by both, the tokens' rows normalized, and `index_add_` writes into a buffer of tokens."""

    def __init__(self, features: int = 16, experts: int = 4, hidden: int = 24) -> None:
        super().__init__()
        self.experts = experts
        self.router = nn.Linear(features, experts, bias=False)
        self.norm = nn.LayerNorm(features)
        self.w1 = nn.ModuleList(nn.Linear(features, hidden, bias=False) for _ in range(experts))
        self.w2 = nn.ModuleList(nn.Linear(hidden, features, bias=False) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, features = x.shape
        flat = x.view(-1, features)
        weights, chosen = torch.topk(self.router(flat).softmax(-1), 2, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        mask = F.one_hot(chosen, self.experts).permute(2, 1, 0)
        out = torch.zeros_like(flat)
        for e in range(self.experts):
            slot, token = torch.where(mask[e])
            h = self.w2[e](F.silu(self.w1[e](self.norm(flat[token])))) * weights[token, slot, None]
            out.index_add_(0, token, h)
        return out.view(batch, tokens, features)


class MaskedRows(nn.Module):
    """Rows chosen by a boolean mask (`x[keep]`), their logarithm (NaN in the padded rows, which read
    row 0, negative), added into rows of negative zeros with `index_put(accumulate=True)`."""

    def forward(self, x: torch.Tensor, keep: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
        rows = keep.nonzero().squeeze(1)
        return zeros.index_put((rows,), torch.log(x[keep]) * 2, accumulate=True)


def _padded(compiled: pygraph.CompiledModel) -> list[str]:
    return [t["what"] for t in compiled.explain().transforms if t["pass"] == "pad-selections"]


def _check(compiled: pygraph.CompiledModel, model: nn.Module, inputs: tuple) -> None:
    got, expected = compiled(*inputs), model(*inputs)
    assert relative_error(got, expected) <= 1e-4
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_top_one_experts_run_in_one_graph():
    torch.manual_seed(0)
    model = TopOneExperts().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(8, 16),), target="emulator")
        assert len(_padded(compiled)) == 4 and "padded to 8" in _padded(compiled)[0]
        stats = compiled.stats()
        assert stats["host_ops"] == 0 and stats["graphs"] == 1, stats
        for _ in range(3):
            _check(compiled, model, (torch.randn(8, 16),))


def test_top_two_experts_by_torch_where_run_in_one_graph():
    torch.manual_seed(1)
    model = TopTwoExperts().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 5, 16),), target="emulator")
        assert len(_padded(compiled)) == 4 and "padded to 20" in _padded(compiled)[0]  # 2 slots x 10 tokens
        assert compiled.stats()["host_ops"] == 0
        for _ in range(3):
            _check(compiled, model, (torch.randn(2, 5, 16),))


def test_an_expert_no_token_chooses_adds_nothing():
    """Routing every token to expert 0 (its router's bias): the other experts' selections are all padding,
    whose scatters of -0.0 leave the zeros as they were."""
    torch.manual_seed(2)
    model = TopOneExperts().eval()
    with torch.no_grad():
        model.router.bias.copy_(torch.tensor([100.0, 0.0, 0.0, 0.0]))
        compiled = pygraph.export_and_compile(model, (torch.randn(8, 16),), target="emulator")
        assert len(_padded(compiled)) == 4
        _check(compiled, model, (torch.randn(8, 16),))


def test_padded_rows_whose_values_are_nan_add_nothing():
    torch.manual_seed(3)
    model = MaskedRows()
    x, keep = torch.rand(6, 4) + 0.5, torch.tensor([False, True, False, True, True, False])
    zeros = torch.full((6, 4), -0.0)
    compiled = pygraph.export_and_compile(model, (x, keep, zeros), target="emulator")
    assert len(_padded(compiled)) == 1  # `x[keep]` and `keep.nonzero()` pad as one selection
    assert compiled.stats()["host_ops"] == 0
    for count in (3, 0, 5):
        x = torch.rand(6, 4) + 0.5
        x[0] = -1.0  # log(-1) is NaN in every padded row, and row 0 is never selected
        keep = torch.zeros(6, dtype=torch.bool)
        keep[1 + torch.randperm(5)[:count]] = True
        got, expected = compiled(x, keep, zeros), model(x, keep, zeros)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
        assert torch.equal(torch.signbit(got), torch.signbit(expected))  # untouched rows keep -0.0


class MaskAndRows(nn.Module):
    """One mask read three ways: its nonzero's rows gathered, added back by the mask itself, then its
    `x[keep]` added back by the rows (the coordinates every use reads are made before the first)."""

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        rows = keep.nonzero().squeeze(1)
        out = torch.zeros_like(x).index_put((keep,), torch.tanh(x[rows]), accumulate=True)
        return out.index_add(0, rows, x[keep] * 2)


def test_a_mask_read_as_rows_and_as_itself_pads_once():
    torch.manual_seed(7)
    model = MaskAndRows()
    keep = torch.rand(8) < 0.5
    compiled = pygraph.export_and_compile(model, (torch.randn(8, 4), keep), target="emulator")
    assert len(_padded(compiled)) == 1 and compiled.stats()["host_ops"] == 0
    for _ in range(3):
        _check(compiled, model, (torch.randn(8, 4), torch.rand(8) < 0.5))


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.fn(*inputs)


def _halves_gated(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Rows split along a static dim (JetMoE's `x[mask].chunk(2, -1)`)."""
    a, b = x[keep].chunk(2, -1)
    return torch.zeros_like(x[:, : x.shape[-1] // 2]).index_put((keep,), a * b.sigmoid(), accumulate=True)


def _added_in_place(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """`out[mask] += f(x[mask])`: a gather of `out` by the mask, and an assignment by it."""
    out = x.clone() * 2
    out[keep] += torch.tanh(x[keep]) * 3
    return out


def _after_a_leading_dim(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """`out[:, mask] = layer_norm(x[:, mask]).softmax(-1)`: the rows at dim 1."""
    out = torch.zeros_like(x)
    out[:, keep] = F.layer_norm(x[:, keep], (x.shape[-1],)).softmax(-1)
    return out


def _by_both_coordinates(x: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """`torch.where` of a [slots, tokens] mask: the tokens' rows gathered through `[None, token]` and a
    reshape, scaled by their slot (`.to(dtype)`, whose metadata check reads the rows)."""
    slot, token = torch.where(chosen)
    rows = x[None, token].reshape(-1, x.shape[1]) * (slot[:, None] + 1).to(x.dtype)
    return torch.zeros_like(x).index_add(0, token, rows)


def _assigned_into_a_transposed_copy(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """The assignment's result keeps its base's strides (a transposed clone's), which a view of it reads
    (fuzz seed 70333)."""
    out = x.t().clone()
    out[keep] = torch.tanh(out[keep]) * 2
    return out.unsqueeze(0)


ROUTINGS = {
    "transposed-copy": (_assigned_into_a_transposed_copy, lambda: (torch.randn(4, 6), torch.rand(6) < 0.5)),
    "halves": (_halves_gated, lambda: (torch.randn(6, 8), torch.rand(6) < 0.5)),
    "added-in-place": (_added_in_place, lambda: (torch.randn(6, 8), torch.rand(6) < 0.5)),
    "after-a-leading-dim": (_after_a_leading_dim, lambda: (torch.randn(3, 5, 8), torch.rand(5) < 0.5)),
    "both-coordinates": (_by_both_coordinates, lambda: (torch.randn(6, 8), torch.rand(2, 6) < 0.5)),
}


@pytest.mark.parametrize("name", ROUTINGS)
def test_routings_run_in_one_graph(name):
    torch.manual_seed(8)
    fn, make = ROUTINGS[name]
    model = Fn(fn)
    compiled = pygraph.export_and_compile(model, make(), target="emulator")
    assert len(_padded(compiled)) == 1 and compiled.stats()["host_ops"] == 0
    for _ in range(3):
        _check(compiled, model, make())


class SwitchExperts(nn.Module):
    """Switch Transformers' routing: each token's one expert by a boolean mask over [batch, tokens], its
    rows `h[take]` computed and assigned back, `out[take] = expert(h[take])`."""

    def __init__(self, features: int = 16, experts: int = 3) -> None:
        super().__init__()
        self.router = nn.Linear(features, experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, features)) for _ in range(experts)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        mask = F.one_hot(self.router(h).argmax(-1), len(self.experts)).bool()
        out = h.clone()
        for e, expert in enumerate(self.experts):
            take = mask[:, :, e]
            out[take] = expert(h[take])
        return out


def test_rows_assigned_back_where_a_mask_took_them_run_in_one_graph():
    """An assignment at the mask's own places becomes a sum into negative zeros (padded rows add -0.0)
    and a selection by the mask between it and what was there."""
    torch.manual_seed(4)
    model = SwitchExperts().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 6, 16),), target="emulator")
        assert len(_padded(compiled)) == 3 and compiled.stats()["host_ops"] == 0
        for _ in range(3):
            _check(compiled, model, (torch.randn(2, 6, 16),))


class AssignedElsewhere(nn.Module):
    """Rows assigned at places other than the mask's (`out[order[rows]]`): padded rows would write."""

    def forward(self, x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        rows = torch.nonzero(x.sum(1) > 0).squeeze(1)
        out = x.clone()
        out[order[rows]] = torch.tanh(x[rows]) * 3
        return out


class MaximumOfRows(nn.Module):
    """The selected rows' maximum (which eager refuses for no rows) mixes them."""

    def forward(self, x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        return x[x.sum(1) > 0].amax(0) + x[order]


@pytest.mark.parametrize(
    "model", [AssignedElsewhere(), MaximumOfRows()], ids=["assigned-elsewhere", "maximum"]
)
def test_selections_whose_rows_are_mixed_or_assigned_elsewhere_keep_their_size(model):
    torch.manual_seed(5)
    order = torch.randperm(8)
    compiled = pygraph.export_and_compile(model, (torch.randn(8, 16), order), target="emulator")
    assert not _padded(compiled) and compiled.stats()["host_ops"] > 0
    for _ in range(2):
        _check(compiled, model, (torch.randn(8, 16), order))


class PooledRows(nn.Module):
    """The selected rows' mean over tokens (pooling the valid ones) and their sum of squares over every
    dim: sums of -0.0 in the padded rows, the mean divided by the selected count."""

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.tanh(x[keep]) * 2
        return rows.mean(0), (rows**2).sum()


def test_sums_and_means_over_the_selected_rows_run_in_one_graph():
    torch.manual_seed(9)
    model = PooledRows()
    compiled = pygraph.export_and_compile(model, (torch.randn(8, 4), torch.rand(8) < 0.5), target="emulator")
    assert len(_padded(compiled)) == 1 and compiled.stats()["host_ops"] == 0
    for count in (5, 1, 0):  # no row: eager's mean is NaN (0 / 0) and its sum 0
        keep = torch.zeros(8, dtype=torch.bool)
        keep[torch.randperm(8)[:count]] = True
        inputs = (torch.randn(8, 4), keep)
        for got, expected in zip(compiled(*inputs), model(*inputs), strict=True):
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.gpu
@needs_gpu
def test_gpu_top_two_experts_run_in_one_graph(no_tf32):
    """nonzero_static records into a CUDA graph (it does not synchronise): one graph, recorded as built."""
    torch.manual_seed(6)
    model = TopTwoExperts().cuda().eval()
    with torch.no_grad(), knobs.scope(graphs="all"):  # (select-graphs may leave a model this small eager)
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 5, 16, device="cuda"),))
        assert len(_padded(compiled)) == 4 and compiled.stats()["host_ops"] == 0
        for _ in range(3):
            _check(compiled, model, (torch.randn(2, 5, 16, device="cuda"),))
        assert compiled.stats()["graphs"] == 1

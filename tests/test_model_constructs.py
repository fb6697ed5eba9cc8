"""Constructs met in models outside the benchmark (a sweep of small Hugging Face models), each in a
hand-written module compiled for the emulator and compared with eager."""

import pytest
import torch
from torch import nn

import pygraph
from pygraph.ir.explain import source_location
from pygraph.metrics import relative_error


class RelativePositions(nn.Module):
    """BEiT's and Swin's relative position index: meshgrid of two aranges; broadcast_tensors alike."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        rows, cols = torch.meshgrid(x, y, indexing="ij")
        cols_xy, rows_xy = torch.meshgrid(x, y, indexing="xy")
        a, b = torch.broadcast_tensors(x[:, None], y)
        return rows * cols + rows_xy.t() - cols_xy.t() + a * b


def test_composites_returning_tensor_lists_become_views():
    model = RelativePositions()
    compiled = pygraph.export_and_compile(model, (torch.randn(5), torch.randn(3)), target="emulator")
    assert "meshgrid" not in compiled.ir("torch") and "broadcast_tensors" not in compiled.ir("torch")
    for _ in range(2):
        x, y = torch.randn(5), torch.randn(3)
        assert relative_error(compiled(x, y), model(x, y)) <= 1e-6


class MaskedRows(nn.Module):
    """Results whose size the data decides, one of them transposed."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[x > 0] * 2, x[x.sum(1) > 0].t()


def test_results_whose_size_the_data_decides():
    torch.manual_seed(0)
    model = MaskedRows()
    compiled = pygraph.export_and_compile(model, (torch.randn(6, 3),), target="emulator")
    for _ in range(3):
        x = torch.randn(6, 3)
        got, ref = compiled(x), model(x)
        assert [g.shape for g in got] == [r.shape for r in ref] and relative_error(got, ref) == 0


class NonzeroTuple(nn.Module):
    """`nonzero(as_tuple=True)` and one-argument `torch.where` (a 0-d condition counts as 1-d); the result's
    size is the data's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.nonzero(as_tuple=True)
        (positive,) = torch.where(x.sum() > 0)
        return x[rows, cols] * 2 + positive


def test_nonzero_as_tuple_runs_on_the_host():
    torch.manual_seed(0)
    model = NonzeroTuple()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 3).relu(),), target="emulator")
    for _ in range(3):
        x = torch.randn(4, 3).relu()
        got, ref = compiled(x), model(x)
        assert got.shape == ref.shape and relative_error(got, ref) == 0


def test_source_location_names_an_installed_models_own_file():
    text = (
        'loc("meshgrid"(callsite("/venv/lib/site-packages/transformers/models/beit/modeling_beit.py":204:0 '
        'at callsite("/venv/lib/site-packages/torch/nn/modules/module.py":1775:0 at "/home/me/run.py":21:0))))'
    )
    assert (
        source_location(text)
        == "/venv/lib/site-packages/transformers/models/beit/modeling_beit.py:204 (node meshgrid)"
    )


class Einsums(nn.Module):
    """XLNet's relative attention scores and projections, a batched outer product, a diagonal and a total."""

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, m: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        scores = torch.einsum("ibnd,jbnd->bnij", q + 1.0, k)
        projected = torch.einsum("ibh,hnd->ibnd", q.flatten(2), w)
        outer = torch.einsum("bi,bj->bij", m, m.flip(1))
        return (
            scores.softmax(-1),
            projected,
            outer,
            torch.einsum("ii->i", m[:, :5] @ m[:, :5].t()),
            torch.einsum("ij->", m),
        )


def test_einsum_becomes_views_and_a_batched_product():
    torch.manual_seed(0)
    model = Einsums()

    def draw() -> tuple[torch.Tensor, ...]:
        return torch.randn(7, 2, 3, 5), torch.randn(9, 2, 3, 5), torch.randn(15, 3, 5), torch.randn(5, 6)

    compiled = pygraph.export_and_compile(model, draw(), target="emulator")
    assert "einsum" not in compiled.ir("torch") and "aten.bmm" in compiled.ir("torch")
    for _ in range(2):
        inputs = draw()
        assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-6


class ShiftedScores(nn.Module):
    """Transformer-XL's relative shift: scores indexed by an `arange` (a slice), and ranges that stay
    gathers (descending, past the dim: eager raises there)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, q, k = x.shape
        shifted = x.reshape(b, k, q)[:, 1:].reshape(b, q, k - 1)
        kept = torch.index_select(shifted, 2, torch.arange(1, k - 1, 2, device=x.device))
        backwards = torch.index_select(x, 1, torch.arange(x.shape[1] - 1, -1, -1, device=x.device))
        return kept.softmax(-1), backwards * 2


def test_indexing_by_an_arange_is_a_slice():
    torch.manual_seed(0)
    model = ShiftedScores()
    compiled = pygraph.export_and_compile(model, (torch.randn(3, 9, 10),), target="emulator")
    assert compiled.ir("torch").count("torch.aten.index_select") == 1  # the descending one stays a gather
    for _ in range(2):
        x = torch.randn(3, 9, 10)
        assert relative_error(compiled(x), model(x)) <= 1e-6
    with pytest.raises(
        Exception, match=r"(?i)index|bounds"
    ):  # an error for a range past the dim, not a slice
        pygraph.export_and_compile(PastTheEnd(), (torch.randn(3, 4),), target="emulator")(torch.randn(3, 4))


class PastTheEnd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.index_select(x, 1, torch.arange(2, 6, device=x.device))

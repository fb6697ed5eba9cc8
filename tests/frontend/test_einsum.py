"""decompositions.py's einsum of two operands (one bmm between permutes and reshapes) against torch's."""

from __future__ import annotations

import random

import pytest
import torch

import pygraph
from pygraph.frontend.decompositions import _product_of_two
from pygraph.metrics import relative_error


def _equations(count: int) -> list[tuple[str, dict[str, int], bool]]:
    """Random `a,b->out` equations over up to six labels: batch, kept, summed and one-sided summed labels
    in any order, with their sizes and whether the first operand is stored transposed."""
    rng = random.Random(0)
    cases = []
    while len(cases) < count:
        letters = rng.sample("abcdefgh", rng.randint(1, 6))
        ta = "".join(rng.sample(letters, rng.randint(1, len(letters))))
        tb = "".join(rng.sample(letters, rng.randint(1, len(letters))))
        pool = sorted(set(ta + tb))
        out = "".join(rng.sample(pool, rng.randint(0, len(pool))))
        cases.append((f"{ta},{tb}->{out}", {c: rng.randint(1, 4) for c in letters}, rng.random() < 0.3))
    return cases


@pytest.mark.parametrize("equation, sizes, transposed", _equations(300))
def test_a_product_of_two_matches_torch_einsum(
    equation: str, sizes: dict[str, int], transposed: bool
) -> None:
    ta, tb = equation.split("->")[0].split(",")
    gen = torch.Generator().manual_seed(len(equation))
    a = torch.randn([sizes[c] for c in ta], dtype=torch.float64, generator=gen)
    b = torch.randn([sizes[c] for c in tb], dtype=torch.float64, generator=gen)
    if transposed and a.dim() >= 2:
        a = a.transpose(0, -1).contiguous().transpose(0, -1)  # (the same values, strides reversed)
    got = _product_of_two(equation, [a, b])
    assert got is not None
    want = torch.einsum(equation, a, b)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),  # ellipses
        ("ii,ij->ij", [(3, 3), (3, 4)]),  # a diagonal
        ("ij,jk", [(3, 4), (4, 5)]),  # an implicit output
        ("ij,jk->ik", [(3, 1), (4, 5)]),  # a size broadcast against another
        ("ij->ji", [(3, 4)]),  # one operand
    ],
)
def test_other_einsums_are_left_to_aten(equation: str, shapes: list[tuple[int, ...]]) -> None:
    assert _product_of_two(equation, [torch.randn(s) for s in shapes]) is None


class ThreeLabelKinds(torch.nn.Module):
    """Labels only one operand has and the output lacks (summed first), summed labels stored against their
    letters' order, and a dynamic batch (symbolic sizes: ATen's composite)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.einsum("xbnd,ynd->bx", a, b), torch.einsum("bnd,nd->bn", a.sum(0), b.sum(0))


def test_einsums_compile_to_batched_products_and_match_eager() -> None:
    torch.manual_seed(0)
    model = ThreeLabelKinds()

    def draw() -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(5, 2, 3, 4).transpose(2, 3).contiguous().transpose(2, 3), torch.randn(6, 3, 4)

    compiled = pygraph.export_and_compile(model, draw(), target="emulator")
    assert "aten.einsum" not in compiled.ir("torch") and compiled.ir("torch").count("torch.aten.bmm") == 2
    batch = torch.export.Dim("batch", min=2)
    dynamic = pygraph.export_and_compile(model, draw(), dynamic_shapes=({1: batch}, None), target="emulator")
    for _ in range(2):
        inputs = draw()
        assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-6
        wider = (torch.randn(5, 7, 3, 4), inputs[1])
        assert relative_error(dynamic(*wider), model(*wider)) <= 1e-6


class OuterProducts(torch.nn.Module):
    """Products with nothing to sum, of integers (BigBird's block indices) and of floats: as ATen's einsum
    computes them, a multiplication (CUDA has no bmm of integers)."""

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.einsum("bi,bj->bij", ids, ids + 1), torch.einsum("bi,bj->bji", x, x.exp())


def test_a_product_with_nothing_to_sum_multiplies() -> None:
    torch.manual_seed(0)
    model = OuterProducts()
    ids, x = torch.randint(-50, 50, (3, 5)), torch.randn(3, 4)
    compiled = pygraph.export_and_compile(model, (ids, x), target="emulator")
    assert "torch.aten.bmm" not in compiled.ir("torch")
    for _ in range(2):
        ids, x = torch.randint(-50, 50, (3, 5)), torch.randn(3, 4)
        (got_ids, got_x), (want_ids, want_x) = compiled(ids, x), model(ids, x)
        assert torch.equal(got_ids, want_ids) and relative_error(got_x, want_x) <= 1e-6

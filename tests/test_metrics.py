"""The error metric every comparison with eager goes through: NaN must never read as a match."""

from __future__ import annotations

import math

import torch

from pygraph.metrics import relative_error

NAN, INF = float("nan"), float("inf")


def test_the_error_is_the_relative_l2_norm_of_the_difference() -> None:
    ref = torch.tensor([3.0, 4.0])
    assert relative_error(ref, ref) == 0.0
    assert math.isclose(relative_error(torch.tensor([3.0, 4.5]), ref), 0.1)


def test_nan_or_infinity_where_eager_has_a_number_is_an_infinite_error() -> None:
    ref = torch.tensor([1.0, 2.0, 3.0])
    for got in ([1.0, NAN, 3.0], [1.0, INF, 3.0], [NAN, NAN, NAN]):
        assert relative_error(torch.tensor(got), ref) == INF


def test_nan_and_infinity_where_eager_has_them_match_and_leave_the_norms() -> None:
    ref = torch.tensor([3.0, NAN, INF, 4.0])
    assert relative_error(ref.clone(), ref) == 0.0
    assert math.isclose(relative_error(torch.tensor([3.0, NAN, INF, 4.5]), ref), 0.1)
    assert relative_error(torch.tensor([3.0, 1.0, INF, 4.0]), ref) == INF
    assert relative_error(torch.tensor([3.0, NAN, -INF, 4.0]), ref) == INF


def test_numbers_compare_with_their_type_and_a_float_by_its_relative_error() -> None:
    assert relative_error((2, True, "s", None), (2, True, "s", None)) == 0.0
    for got, ref in [(2, 3), (1, True), (True, False), (2.0, 2), (torch.tensor(2.0), 2.0), ("a", "b")]:
        assert relative_error([got], [ref]) == INF
    assert math.isclose(relative_error([4.5], [4.0]), 0.125)
    assert relative_error([1e-3], [0.0]) == 1e-3
    assert relative_error([NAN], [NAN]) == 0.0 and relative_error([-INF], [-INF]) == 0.0
    for got, ref in [(NAN, 1.0), (INF, 1.0), (1.0, NAN), (INF, -INF)]:
        assert relative_error([got], [ref]) == INF

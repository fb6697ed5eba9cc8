"""`InputStructure`: a call's nested arguments flattened as torch's pytree flattens them, checked against the
example's tree, on the fast path and pytree's."""

from collections import namedtuple

import pytest
import torch
import torch.utils._pytree as pytree

from pygraph.frontend import InputStructure

Pair = namedtuple("Pair", ["key", "value"])


def _cache(layers: int) -> tuple:
    return tuple((torch.randn(2), torch.randn(2)) for _ in range(layers))


@pytest.mark.parametrize(
    ("example", "fast"),
    [
        ((torch.randn(2), _cache(3)), True),  # a decoding step's cache as a tuple of tuples
        (([torch.randn(2), torch.randn(2)], {"gain": 1.5, "mask": None}, "mode"), True),
        (({"b": torch.randn(2), "a": [torch.randn(2), (torch.randn(2),)]},), True),
        ((torch.randn(2), Pair(torch.randn(2), torch.randn(2))), False),  # a named tuple: pytree's way
    ],
)
def test_flatten_takes_the_leaves_pytree_takes(example, fast):
    structure = InputStructure.of([f"a{i}" for i in range(len(example))], example)
    assert (structure.gather is not None) == fast
    again = pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, example)
    leaves = pytree.tree_leaves(again)
    flat = structure.flatten(again)
    assert len(flat) == len(structure.inputs)
    assert all(a is leaves[i] for a, i in zip(flat, structure.inputs, strict=True))


def test_a_tree_shaped_otherwise_is_refused_on_both_paths():
    example = (torch.randn(2), _cache(2), {"a": torch.randn(2), "b": torch.randn(2)})
    structure = InputStructure.of(["x", "cache", "extra"], example)
    assert structure.gather is not None
    x, cache, extra = example
    for wrong in (
        (x, cache[:1], extra),  # a layer short
        (x, [list(layer) for layer in cache], extra),  # lists where tuples were
        (x, cache, {"b": extra["b"], "a": extra["a"]}),  # the keys in another order, as pytree tells apart
    ):
        with pytest.raises(TypeError, match="structured as"):
            structure.flatten(wrong)

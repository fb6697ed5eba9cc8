"""Layout algebra against eager PyTorch: every view pygraph computes must be eager's."""

import random

import pytest
import torch

from pygraph.backend.tensors import layout_of, view_of
from pygraph.ir import dtypes
from pygraph.ir.context import make_context
from pygraph.ir.layout import Layout

F32 = dtypes.BY_NAME["float32"]


def random_tensor(rng: random.Random) -> torch.Tensor:
    shape = [rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(0, 4))]
    t = torch.empty(shape)
    perm = list(range(t.dim()))
    rng.shuffle(perm)
    t = t.permute(perm)
    if t.dim() and rng.random() < 0.5:
        dim = rng.randrange(t.dim())
        t = t.narrow(dim, 0, max(1, t.shape[dim] // 2))
    return t


def test_view_matches_eager_on_random_layouts():
    rng = random.Random(0)
    checked = 0
    for _ in range(400):
        t = random_tensor(rng)
        layout = layout_of(t)
        candidates = [[t.numel()], [1, t.numel()], [-1, 1]]
        if t.dim() >= 2:
            candidates += [[t.shape[0] * t.shape[1], *t.shape[2:]], [*t.shape[:-1], 1, t.shape[-1]]]
        for shape in candidates:
            try:
                expected = t.view(shape)
            except RuntimeError:
                assert layout.view(shape) is None, (t.shape, t.stride(), shape)
                continue
            got = layout.view(shape)
            assert got == layout_of(expected), (t.shape, t.stride(), shape)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize(
    ("make_view", "apply"),
    [
        (lambda t: t[:, 1:4:2], lambda L: L.slice(1, 1, 4, 2)),
        (lambda t: t[:, :, -1], lambda L: L.select(2, -1)),
        (lambda t: t.unsqueeze(3), lambda L: L.unsqueeze(3)),
        (lambda t: t.unsqueeze(0), lambda L: L.unsqueeze(0)),
        (lambda t: t.expand(2, 3, 4, 5), lambda L: L.expand([2, 3, 4, 5])),
        (lambda t: t.transpose(0, 2), lambda L: L.transpose(0, 2)),
        (lambda t: t.permute(2, 0, 1), lambda L: L.permute([2, 0, 1])),
        (lambda t: t[:, :1].squeeze(1), lambda L: L.slice(1, 0, 1, 1).squeeze([1])),
        (lambda t: t[1:, 2:, 3:], lambda L: L.slice(0, 1, None, 1).slice(1, 2, None, 1).slice(2, 3, None, 1)),
        (lambda t: t[:, 10:20], lambda L: L.slice(1, 10, 20, 1)),
    ],
)
def test_views_match_eager(make_view, apply):
    t = torch.empty(3, 4, 5)
    assert apply(layout_of(t)) == layout_of(make_view(t))


def test_dense_and_contiguous():
    t = torch.empty(3, 4, 5)
    assert layout_of(t).is_contiguous() and layout_of(t).is_dense()
    assert not layout_of(t.transpose(0, 1)).is_contiguous() and layout_of(t.transpose(0, 1)).is_dense()
    assert not layout_of(t[:, ::2]).is_dense()


def test_layout_attribute_round_trips():
    layout = layout_of(torch.empty(3, 4, 5)[:, 1:3])
    with make_context():
        assert Layout.from_attr(layout.to_attr()) == layout
        assert str(layout.to_attr()) == "#pygraph.layout<[3, 2, 5], [20, 5, 1], 5 : i64, f32>"


def test_a_view_gives_size_1_dims_the_dense_stride():
    """A size-1 dim's stride addresses nothing, yet torch 2.11's CUDA `index_put(accumulate=True)` sums
    wrongly where it is not the dense one (`probe_unit_strides.py`): tensors pygraph hands out have it."""
    storage = torch.arange(192.0)
    layout = Layout((8, 1, 3, 8), (24, 8, 8, 1), 0, dtypes.from_name("float32"))
    view = view_of(storage, layout)
    assert view.stride() == (24, 24, 8, 1) and torch.equal(view, storage.view(8, 1, 3, 8))
    transposed = view_of(storage, Layout((3, 1, 8), (1, 5, 3), 0, dtypes.from_name("float32")))
    assert transposed.stride() == (1, 24, 3) and torch.equal(
        transposed, storage[:24].view(8, 1, 3).permute(2, 1, 0)
    )

"""Scatters as generated kernels (`pygraph/passes/scatter_kernel.py`): writes into a buffer or an input at
positions a tensor gives (a KV cache's `index_copy_`, `cache[:, pos] = x`), which write-in-place makes
in-place updates and launches as scatter kernels. Each model runs through the emulator (Triton's
interpreter) over several calls with changing positions and is compared with eager, its outputs and its
written state; then the same on the GPU. Indices out of range stop the kernel; accumulating writes stay
ATen's `index_put_`."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from gpu_marks import needs_gpu
from torch import nn
from triton.runtime.interpreter import InterpreterError

import pygraph

pytestmark = [pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")]

SCATTER = "becomes a scatter kernel writing it in place"
JOINED = "computes its values"  # (fuse-scatter-values)


class Cache(nn.Module):
    """A state tensor written by `write(state, positions, values)` each call, then read: the result is
    a product with the whole state (so a missed or misplaced write shows) plus the state's sum."""

    def __init__(self, state: torch.Tensor, write: Callable[..., None]) -> None:
        super().__init__()
        self.register_buffer("state", state)
        self.write = write

    def forward(self, positions: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        self.write(self.state, positions, values)
        return (
            self.state.float().flatten(1)
            @ torch.arange(1.0, self.state[0].numel() + 1.0, device=self.state.device)
            + self.state.sum()
        )


def _positions(
    n: int, *shape: int, dtype: torch.dtype = torch.int64, negative: bool = False
) -> Callable[[int], torch.Tensor]:
    """Distinct positions in [0, n) (or [-n, 0)) for call `step`, in a shape: no position repeats within a
    call (eager leaves which value lands unspecified there)."""

    def make(step: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(step)
        chosen = torch.randperm(n, generator=generator)[: max(1, torch.Size(shape).numel())]
        chosen = chosen - n if negative else chosen
        return chosen.reshape(shape).to(dtype)

    return make


def _index_copy(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
    state.index_copy_(2, positions, values)


def _assign_dim1(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
    state[:, positions] = values


def _assign_dim0(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
    state[positions] = values


def _index_put(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
    state.index_put_((positions,), values)  # (`state[positions]` would read a 0-d index as a number)


def _rotated(values: torch.Tensor) -> torch.Tensor:
    """A rotary embedding's form: the values times a number plus their halves swapped, one negated (one
    pointwise kernel with a `cat`, which fuse-scatter-values joins to the scatter writing its result)."""
    half = values.shape[-1] // 2
    return values * 0.5 + torch.cat([-values[..., half:], values[..., :half]], -1)


def _index_copy_rotated(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
    state.index_copy_(2, positions, _rotated(values))


def _assign_dim0_rotated(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
    state[positions] = _rotated(values)


# name: (state, positions for a call, values' shape given the positions' shape)
CASES = {
    # a decoding step: one position of a [batch, heads, length, head dim] cache
    "decode": (lambda: torch.randn(2, 4, 16, 8), _index_copy, _positions(16, 1), lambda p: (2, 4, *p, 8)),
    # a prefill: several positions at once
    "prefill": (lambda: torch.randn(2, 4, 16, 8), _index_copy, _positions(16, 5), lambda p: (2, 4, *p, 8)),
    # negative positions count from the end; a 2-d int32 index spans two dims of the indexed shape
    "negative": (
        lambda: torch.randn(3, 10, 6),
        _assign_dim1,
        _positions(10, 3, negative=True),
        lambda p: (3, *p, 6),
    ),
    "int32.2d": (
        lambda: torch.randn(3, 10, 6),
        _assign_dim1,
        _positions(10, 2, 3, dtype=torch.int32),
        lambda p: (3, *p, 6),
    ),
    # values broadcast over the indexed shape's leading dims
    "broadcast": (lambda: torch.randn(3, 10, 6), _assign_dim1, _positions(10, 4), lambda p: (*p, 6)),
    # a 0-d index: one row, the index's dims none
    "0d": (lambda: torch.randn(7, 5), _index_put, lambda step: torch.tensor(step % 7), lambda p: (5,)),
    # a state laid out transposed ([length, dim] stored as dim-major)
    "transposed": (lambda: torch.randn(6, 12).t(), _assign_dim0, _positions(12, 2), lambda p: (*p, 6)),
    # values computed for the write alone, in the scatter's kernel: into a cache, into a transposed state
    "computed": (
        lambda: torch.randn(2, 4, 16, 8),
        _index_copy_rotated,
        _positions(16, 1),
        lambda p: (2, 4, *p, 8),
    ),
    "computed.transposed": (
        lambda: torch.randn(6, 12).t(),
        _assign_dim0_rotated,
        _positions(12, 2),
        lambda p: (*p, 6),
    ),
    # half precision
    "bfloat16": (
        lambda: torch.randn(2, 4, 16, 8).bfloat16(),
        _index_copy,
        _positions(16, 1),
        lambda p: (2, 4, *p, 8),
    ),
}


def _calls(name: str, device: str) -> tuple[Cache, list[tuple[torch.Tensor, torch.Tensor]]]:
    make_state, write, positions, values_shape = CASES[name]
    torch.manual_seed(0)
    state = make_state()
    model = Cache(state.to(device) if state.is_contiguous() else state.t().contiguous().to(device).t(), write)
    calls = []
    for step in range(4):
        p = positions(step).to(device)
        calls.append((p, torch.randn(values_shape(tuple(p.shape)), device=device).to(state.dtype)))
    return model, calls


def _check(name: str, device: str) -> None:
    model, calls = _calls(name, device)
    eager = copy.deepcopy(model)
    compiled = pygraph.export_and_compile(model, calls[0])
    transforms = [t["what"] for t in compiled.explain().transforms]
    assert any(SCATTER in t for t in transforms), transforms
    assert any(JOINED in t for t in transforms) == name.startswith("computed"), transforms
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if model.state.dtype == torch.float32 else {}
    with torch.no_grad():
        for positions, values in calls:
            torch.testing.assert_close(compiled(positions, values), eager(positions, values), **tolerance)
            assert torch.equal(model.state, eager.state), name  # the written elements, exactly; the rest kept


@pytest.mark.parametrize("name", list(CASES))
def test_writes_match_eager(name: str) -> None:
    _check(name, "cpu")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", list(CASES))
def test_writes_match_eager_on_gpu(name: str) -> None:
    _check(name, "cuda")


class WritesAnInput(nn.Module):
    """A cache the caller owns, passed in and written in place."""

    def forward(self, cache: torch.Tensor, position: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        cache.index_copy_(0, position, x)
        return cache.sum(0)


def _check_input(device: str) -> None:
    torch.manual_seed(1)
    cache = torch.randn(8, 5, device=device)
    compiled = pygraph.export_and_compile(
        WritesAnInput(), (cache.clone(), torch.tensor([2], device=device), torch.randn(1, 5, device=device))
    )
    assert any(SCATTER in t["what"] for t in compiled.explain().transforms)
    ours, theirs = cache.clone(), cache.clone()
    for position in (5, 0, 7):
        x, at = torch.randn(1, 5, device=device), torch.tensor([position], device=device)
        torch.testing.assert_close(compiled(ours, at, x), WritesAnInput()(theirs, at, x))
        assert torch.equal(ours, theirs)


def test_an_input_is_written_where_the_caller_sees_it() -> None:
    _check_input("cpu")


@pytest.mark.gpu
@needs_gpu
def test_an_input_is_written_where_the_caller_sees_it_on_gpu() -> None:
    _check_input("cuda")


def test_a_position_out_of_range_stops_the_kernel() -> None:
    """As eager raises (CUDA: a device-side assert), the kernel stops: nothing is written outside."""
    model, calls = _calls("decode", "cpu")
    compiled = pygraph.export_and_compile(model, calls[0])
    _, values = calls[1]
    with pytest.raises(IndexError):
        copy.deepcopy(model)(torch.tensor([16]), values)
    before = model.state.clone()
    with pytest.raises(InterpreterError, match="index out of range in a gather or scatter"):
        compiled(torch.tensor([16]), values)
    assert torch.equal(model.state, before)


def test_accumulating_writes_stay_aten() -> None:
    """`index_add_` (index_put with accumulate) adds where positions repeat: ATen's index_put_ does that."""

    def add(state: torch.Tensor, positions: torch.Tensor, values: torch.Tensor) -> None:
        state.index_add_(0, positions, values)

    torch.manual_seed(2)
    model = Cache(torch.randn(6, 4), add)
    eager = copy.deepcopy(model)
    positions, values = torch.tensor([1, 4, 1]), torch.randn(3, 4)
    compiled = pygraph.export_and_compile(model, (positions, values))
    done = [t["what"] for t in compiled.explain().transforms]
    assert any(
        "becomes aten.index_put_.default" in w and "no scatter kernel: it accumulates" in w for w in done
    ), done
    with torch.no_grad():
        torch.testing.assert_close(
            compiled(positions, values), eager(positions, values), rtol=1e-4, atol=1e-4
        )
    torch.testing.assert_close(model.state, eager.state)

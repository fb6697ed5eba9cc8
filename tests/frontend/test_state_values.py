"""Sizes computed from a model's small buffers (`frontend/state_values.py`): traced knowing their values,
checked in each call, traced again when one changes; never a program holding a stale value."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.metrics import relative_error


class PaddedConv(nn.Module):
    """A convolution padded as Encodec's and Mimi's are: the stride, kernel size and total padding held in
    0-d int64 buffers, the right padding computed from them and the input's length, reflected."""

    def __init__(self, kernel: int = 5, stride: int = 2) -> None:
        super().__init__()
        self.conv = nn.Conv1d(3, 4, kernel, stride)
        self.register_buffer("stride", torch.tensor(stride), persistent=False)
        self.register_buffer("kernel", torch.tensor(kernel), persistent=False)
        self.register_buffer("padding_total", torch.tensor(kernel - stride), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[-1]
        frames = torch.ceil((length - self.kernel + self.padding_total) / self.stride + 1).to(torch.int64) - 1
        extra = frames * self.stride + self.kernel - self.padding_total - length
        right = self.padding_total // 2
        left = self.padding_total - right
        if max(left, right + extra) >= length:  # (a condition on the buffers alone)
            x = F.pad(x, (0, 1))
        padded = F.pad(x, (left, right + extra), mode="reflect")
        return self.conv(padded[..., : padded.shape[-1]])


class Cropped(nn.Module):
    """Crops to a width held in a buffer and scales by a factor another buffer holds (read as a tensor)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("width", torch.tensor(5))
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, : self.width] * self.scale


def _compiled(model: nn.Module, x: torch.Tensor, target: str = "emulator") -> pygraph.CompiledModel:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no branch on data: no check on the host, no warning)
        return pygraph.export_and_compile(model, (x,), target=target)


def test_sizes_computed_from_buffers_are_traced_with_their_values():
    model = PaddedConv().eval()
    compiled = _compiled(model, torch.randn(2, 3, 17))
    assert "aten.item" not in compiled.ir("torch")
    explanation = compiled.explain()
    assert explanation.coverage["after"] == 1.0
    held = [t["what"] for t in explanation.transforms if t["pass"] == "state-values"]
    assert len(held) == 3 and any("`padding_total` (3)" in what for what in held)
    for _ in range(3):
        x = torch.randn(2, 3, 17)
        assert relative_error(compiled(x), model(x)) <= 1e-5


class Sized(nn.Module):
    """Passes a size held in a buffer to `shaped`."""

    def __init__(self, shaped) -> None:
        super().__init__()
        self.shaped = shaped
        self.register_buffer("n", torch.tensor(3), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shaped(x, self.n)


SIZED = {  # where ATen's op takes integers, and a size computed from one (`torch.arange(n * 2)`)
    "view": lambda x, n: x.view(2, n, -1),
    "narrow": lambda x, n: x.narrow(1, 0, n),
    "repeat": lambda x, n: x.repeat(n, 1),
    "expand": lambda x, n: x[None].expand(n, -1, -1),
    "split": lambda x, n: x.split(n, dim=1)[1],
    "topk": lambda x, n: x.topk(n, dim=1).values,
    "roll": lambda x, n: x.roll(n, 1),
    "arange": lambda x, n: x + torch.arange(n * 2),
}


@pytest.mark.parametrize("name", SIZED)
def test_sizes_passed_where_integers_are_taken(name: str):
    model = Sized(SIZED[name])
    compiled = _compiled(model, torch.randn(2, 6))
    assert "aten.item" not in compiled.ir("torch") and len(compiled._state_reads) == 1
    x = torch.randn(2, 6)
    assert torch.equal(compiled(x), model(x))


def _check_buffer_changes(device: str, target: str) -> None:
    """A buffer written in place or replaced by another value is seen by the next call; one replaced by a
    tensor of the same value compiles nothing new."""
    model = Cropped().to(device)
    x = torch.randn(3, 9, device=device)
    compiled = _compiled(model, x, target)
    assert relative_error(compiled(x), model(x)) <= 1e-6
    assert compiled(x).shape == (3, 5)
    model.width.fill_(7)  # (in place: its version moves)
    with pytest.warns(UserWarning, match=r"from the buffer `width` \(5\).*this call finds 7"):
        out = compiled(x)
    assert out.shape == (3, 7) and relative_error(out, model(x)) <= 1e-6
    model.scale.fill_(2.0)  # (read as a tensor: the program reads the buffer itself)
    assert relative_error(compiled(x), model(x)) <= 1e-6
    model.width = torch.tensor(7, device=device)  # (replaced, same value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert relative_error(compiled(x), model(x)) <= 1e-6
    model.width = torch.tensor(4, device=device)
    with pytest.warns(UserWarning, match="this call finds 4"):
        assert relative_error(compiled(x), model(x)) <= 1e-6
    model.width.fill_(5)  # (back to the first program's value: it runs again)
    assert relative_error(compiled(x), model(x)) <= 1e-6


def test_a_changed_buffer_is_seen_by_the_next_call():
    _check_buffer_changes("cpu", "emulator")


class Counter(nn.Module):
    """Counts its calls in a buffer and crops by the count: the trace may not hold the buffer's value."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.tensor(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = int(self.calls)
        self.calls += 1
        return x[:, :width] * 2


def test_a_buffer_the_model_writes_is_not_held_by_the_program():
    model, eager = Counter(), Counter()
    x = torch.randn(2, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the way each count takes is traced again: it says so)
        compiled = pygraph.export_and_compile(model, (x,), target="emulator")
        for _ in range(3):
            assert torch.equal(compiled(x), eager(x))
    assert torch.equal(model.calls, eager.calls)


class Normalized(nn.Module):
    """Batch norm in training updates its running variance, which forward then reads and branches on: the
    op writing it is no in-place call, so only the functionalized program shows the write."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("var", torch.ones(4))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        normalized = F.batch_norm(x, self.mean, self.var, training=True, momentum=0.25)
        scale = self.var * 2 if self.var.sum() > 0 else self.var.tanh()
        return normalized, torch.sigmoid(self.var) * scale


def test_a_buffer_an_op_updates_is_not_held_by_the_program():
    model, eager = Normalized(), Normalized()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the branch on the variance is checked on the host: it says so)
        compiled = pygraph.export_and_compile(model, (torch.randn(3, 4, 5),), target="emulator")
        for _ in range(3):
            x = torch.randn(3, 4, 5)
            for got, expected in zip(compiled(x), eager(x), strict=True):
                assert relative_error(got, expected) <= 1e-5
    assert relative_error(model.var, eager.var) <= 1e-6
    assert "state-values" not in {t["pass"] for t in compiled.explain().transforms}


class Noisy(nn.Module):
    """Noise shaped as a buffer, padded by another buffer's value: random draws are never held."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("pad", torch.tensor(2))
        self.register_buffer("shape", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, (self.pad, self.pad)) + torch.rand_like(self.shape).sum()


def test_random_draws_on_buffers_are_not_held():
    model = Noisy()
    compiled = _compiled(model, torch.randn(2, 4))
    x = torch.randn(2, 4)
    first, second = compiled(x), compiled(x)
    assert first.shape == (2, 8) and not torch.equal(first, second)
    torch.manual_seed(3)
    again = compiled(x)
    torch.manual_seed(3)
    assert torch.equal(again, compiled(x))


@pytest.mark.gpu
@needs_gpu
def test_gpu_sizes_computed_from_buffers(no_tf32, kernel_cache):
    model = PaddedConv().cuda().eval()
    compiled = _compiled(model, torch.randn(2, 3, 17, device="cuda"), "cuda")
    for _ in range(3):
        x = torch.randn(2, 3, 17, device="cuda")
        assert relative_error(compiled(x), model(x)) <= 1e-5


@pytest.mark.gpu
@needs_gpu
def test_gpu_a_changed_buffer_is_seen_by_the_next_call(kernel_cache):
    _check_buffer_changes("cuda", "cuda")

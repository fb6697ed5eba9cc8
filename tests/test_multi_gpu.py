"""Models on a GPU other than the current one (run on a machine with two GPUs): every launch, allocation,
recording and random draw of a compiled model happens on the model's device, whichever device is current,
as eager's ops follow their tensors."""

import copy

import pytest
import torch

import pygraph
from pygraph.metrics import relative_error

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        torch.cuda.device_count() < 2, reason="needs two CUDA GPUs (run on a GPU machine with two)"
    ),
    pytest.mark.usefixtures("no_tf32"),
]


class Net(torch.nn.Module):
    """A convolution (cuDNN, NHWC weights derived), batch norm, a product (cuBLAS), generated kernels, and
    a buffer forward writes (`steps`)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 8 * 8, 96)
        self.norm = torch.nn.LayerNorm(96)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps.add_(1)
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return torch.nn.functional.gelu(self.norm(self.fc(h))) * self.steps


def _pair(device: str) -> tuple[Net, Net]:
    """A model on `device` in eval mode with random statistics, and a copy for eager's side."""
    torch.manual_seed(0)
    model = Net().eval()
    model.bn.running_mean.uniform_(-0.5, 0.5)
    model.bn.running_var.uniform_(0.5, 2.0)
    return model.to(device), copy.deepcopy(model).to(device)


def test_a_model_on_the_second_gpu_runs_there_whichever_device_is_current():
    model, reference = _pair("cuda:1")
    xs = [torch.randn(4, 8, 8, 8, device="cuda:1") for _ in range(6)]
    torch.cuda.set_device(0)
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (xs[0],), target="cuda")
        results = [compiled(xs[0]), compiled(xs[1])]  # current device 0
        with torch.cuda.device(1):
            results += [compiled(x) for x in xs[2:4]]
        side = torch.cuda.Stream(device="cuda:1")
        side.wait_stream(torch.cuda.current_stream("cuda:1"))
        with torch.cuda.stream(side):  # queued on a stream of the model's device, unsynchronised
            results += [compiled(x) for x in xs[4:]]
        torch.cuda.current_stream("cuda:1").wait_stream(side)
        expected = [reference(x) for x in xs]
    torch.cuda.synchronize("cuda:1")
    assert torch.cuda.current_device() == 0
    for got, want in zip(results, expected, strict=True):
        assert got.device == torch.device("cuda:1")
        assert relative_error(got, want) <= 1e-4
    assert torch.equal(model.steps, reference.steps) and model.steps.device == torch.device("cuda:1")
    assert compiled.stats()["graphs"] >= 1


def test_copies_on_two_gpus_compile_and_run_side_by_side():
    pairs = [_pair("cuda:0"), _pair("cuda:1")]
    xs = [[torch.randn(4, 8, 8, 8, device=f"cuda:{d}") for _ in range(4)] for d in range(2)]
    with torch.no_grad():
        compiled = [
            pygraph.export_and_compile(m, (x[0],), target="cuda") for (m, _), x in zip(pairs, xs, strict=True)
        ]
        results = [
            [c(x) for x in inputs] for c, inputs in zip(compiled, xs, strict=True)
        ]  # queued on both GPUs
        interleaved = [compiled[i % 2](xs[i % 2][i // 2]) for i in range(8)]
        expected = [[r(x) for x in inputs] for (_, r), inputs in zip(pairs, xs, strict=True)]
        expected_interleaved = [pairs[i % 2][1](xs[i % 2][i // 2]) for i in range(8)]
    for d in range(2):
        torch.cuda.synchronize(d)
        for got, want in zip(results[d], expected[d], strict=True):
            assert got.device == torch.device(f"cuda:{d}") and relative_error(got, want) <= 1e-4
        assert torch.equal(pairs[d][0].steps, pairs[d][1].steps)
    for got, want in zip(interleaved, expected_interleaved, strict=True):
        assert relative_error(got, want) <= 1e-4


class Noisy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(torch.relu(self.fc(x)) + 1.0, 0.3, training=True)


def test_random_numbers_come_from_the_generator_of_the_models_gpu():
    torch.manual_seed(0)
    model = Noisy().to("cuda:1")
    x = torch.randn(256, 64, device="cuda:1")
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,), target="cuda")
        compiled(x)
        first_gpu = torch.cuda.default_generators[0].get_offset()
        torch.cuda.manual_seed_all(7)
        a = compiled(x)
        b = compiled(x)
        torch.cuda.manual_seed_all(7)
        again = compiled(x)
    assert torch.cuda.default_generators[0].get_offset() == first_gpu
    assert torch.equal(a, again) and not torch.equal(a, b)
    kept = (a != 0).float().mean().item()
    assert 0.65 < kept < 0.75


def test_an_input_on_the_other_gpu_is_refused_naming_both_devices():
    model, _ = _pair("cuda:1")
    x = torch.randn(4, 8, 8, 8, device="cuda:1")
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,), target="cuda")
        compiled(x)
        with pytest.raises(ValueError, match=r"cuda:0.*cuda:1|cuda:1.*cuda:0"):
            compiled(x.to("cuda:0"))

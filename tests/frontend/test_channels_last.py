"""Channels-last convolutions (frontend/channels_last.py), forced on the CPU with PYGRAPH_GPU_LAYOUTS=on."""

import pytest
import torch
from torch import nn

import pygraph
from pygraph.frontend import export_program
from pygraph.knobs import knobs
from pygraph.metrics import relative_error


class ConvNet(nn.Module):
    """Convolution, batch norm and ReLU, a depthwise convolution with a residual add, a pointwise
    convolution, pooling and a classifier, and a flatten (a `view`, which NHWC strides cannot take:
    it becomes a reshape): the shape of the benchmark's CNNs."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.dw, self.b2 = nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 8, 1)
        self.fc, self.head = nn.Linear(8, 5), nn.Linear(8 * 8 * 8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        y = y + torch.relu(self.b2(self.dw(y)))
        y = nn.functional.max_pool2d(self.c2(y), 2)
        return self.fc(y.mean((2, 3))) + self.head(y.flatten(1))  # the flatten is a view


@pytest.fixture
def model() -> ConvNet:
    torch.manual_seed(0)
    net = ConvNet().eval()
    for bn in (net.b1, net.b2):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return net


def convolution_inputs(program: torch.export.ExportedProgram) -> list[torch.Tensor]:
    return [
        n.args[0].meta["val"]
        for n in program.graph.nodes
        if n.op == "call_function" and n.target is torch.ops.aten.conv2d.default
    ]


def test_every_convolution_reads_nhwc_and_only_the_input_and_a_weight_are_converted(model):
    x = torch.randn(2, 3, 16, 16)
    with knobs.scope(gpu_layouts="on"):
        program = export_program(model, (x,))
    inputs = convolution_inputs(program)
    assert len(inputs) == 3 and all(t.is_contiguous(memory_format=torch.channels_last) for t in inputs)
    weights = [
        n.args[1].meta["val"] for n in program.graph.nodes if n.target is torch.ops.aten.conv2d.default
    ]
    assert all(w.is_contiguous(memory_format=torch.channels_last) for w in weights)
    # later convolutions get NHWC from the earlier; the depthwise and 1x1 weights are NHWC as they are
    clones = [n for n in program.graph.nodes if n.target is torch.ops.aten.clone.default]
    assert sorted(c.args[0].name for c in clones) == ["p_c1_weight", "x"]
    assert not any(n.target is torch.ops.aten.view.default for n in program.graph.nodes)  # now reshapes


def test_an_nhwc_input_is_read_as_it_is_and_its_convolutions_weight_converted(model):
    """ATen returns NHWC from NHWC input and weight; given an NCHW weight the program's layouts (fake
    tensors) and cuDNN's result disagreed, which a graph's recording refuses."""
    x = torch.randn(2, 3, 16, 16).to(memory_format=torch.channels_last)
    with knobs.scope(gpu_layouts="on"):
        program = export_program(model, (x,))
    clones = [
        n
        for n in program.graph.nodes
        if n.target is torch.ops.aten.clone.default and n.kwargs.get("memory_format") == torch.channels_last
    ]
    assert [c.args[0].name for c in clones] == ["p_c1_weight"]
    weights = [n.args[1] for n in program.graph.nodes if n.target is torch.ops.aten.conv2d.default]
    assert weights[0] is clones[0]


def test_a_large_filter_over_few_channels_stays_nchw():
    """cuDNN has no NHWC kernel for it (ViT's patch embedding): neither input nor weight is converted, and
    the convolution after it, over many channels, reads NHWC as usual."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 8, stride=8), nn.ReLU(), nn.Conv2d(8, 4, 3)).eval()
    x = torch.randn(1, 3, 48, 48)
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        program = export_program(model, (x,))
        compiled = pygraph.export_and_compile(model, (x,))
        assert relative_error(compiled(x), model(x)) <= 1e-4
    patch, second = convolution_inputs(program)
    assert patch.is_contiguous() and second.is_contiguous(memory_format=torch.channels_last)


def test_auto_leaves_cpu_convolutions_alone(model):
    program = export_program(model, (torch.randn(2, 3, 16, 16),))
    assert not any(t.is_contiguous(memory_format=torch.channels_last) for t in convolution_inputs(program))


def test_channels_last_program_matches_eager(model):
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 3, 16, 16),))
        for _ in range(2):
            x = torch.randn(2, 3, 16, 16)
            assert relative_error(compiled(x), model(x)) <= 1e-4


def test_unknown_setting_is_refused(model):
    with knobs.scope(gpu_layouts="sometimes"), pytest.raises(ValueError, match="PYGRAPH_GPU_LAYOUTS"):
        export_program(model, (torch.randn(2, 3, 16, 16),))


def test_an_adaptive_average_pool_after_nhwc_convolutions_reads_nchw():
    """ATen's NHWC kernel for it is five times slower (channels_last.py); the ReLU's kernel writes NCHW."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d((5, 3))).eval()
    x = torch.randn(2, 3, 30, 17)
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        program = export_program(model, (x,))
        compiled = pygraph.export_and_compile(model, (x,), target="emulator")
        assert relative_error(compiled(x), model(x)) <= 1e-5
    pooled = next(n for n in program.graph.nodes if n.target is torch.ops.aten.adaptive_avg_pool2d.default)
    assert pooled.args[0].meta["val"].is_contiguous()
    assert convolution_inputs(program)[0].is_contiguous(memory_format=torch.channels_last)

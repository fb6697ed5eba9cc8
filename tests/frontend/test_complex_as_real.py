"""Complex tensors computed as pairs of reals (frontend/complex_as_real.py): each op against eager on random
values, FFTs (pair_ops.py) in a Fourier neural operator's and FNet's layers, a rotary embedding written as
Meta's Llama writes it, and the refusals."""

import pytest
import torch
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.frontend.rewrite import UnsupportedError
from pygraph.metrics import relative_error

vc, vr = torch.view_as_complex, torch.view_as_real
fft = torch.fft

# Each case computes from real x and y of [4, 6, 2] and a complex buffer z of [4, 6]; results are real.
OPS = {
    "product": lambda x, y, z: vr(vc(x) * z),
    "product by a real tensor": lambda x, y, z: vr(vc(x) * y[:, :1, 0]),
    "product by a number": lambda x, y, z: vr(vc(x) * 3.0),
    "product by a complex number": lambda x, y, z: vr(vc(x) * (1 - 2j)),
    "sum": lambda x, y, z: vr(vc(x) + z),
    "sum with a real tensor": lambda x, y, z: vr(y[..., 0] + z),
    "difference scaled": lambda x, y, z: vr(torch.sub(vc(x), z, alpha=2)),
    "number minus complex": lambda x, y, z: vr(1.5 - vc(x)),
    "quotient": lambda x, y, z: vr(vc(x) / z),
    "quotient by a real tensor": lambda x, y, z: vr(vc(x) / (y[..., 0] + 3)),
    "quotient by a complex number": lambda x, y, z: vr(vc(x) / (0.5 + 1j)),
    "number over complex": lambda x, y, z: vr(2 / vc(x)),
    "reciprocal": lambda x, y, z: vr(vc(x).reciprocal()),
    "negation and conjugate": lambda x, y, z: vr(-vc(x).conj() * z),
    "abs": lambda x, y, z: (vc(x) * z).abs(),
    "angle": lambda x, y, z: (vc(x) * z).angle(),
    "exp": lambda x, y, z: vr(vc(x).exp()),
    "real and imag": lambda x, y, z: (vc(x) * z).real * 2 + (vc(x) * z).imag,
    "polar": lambda x, y, z: vr(torch.polar(x[..., 0].abs(), y[..., 1]) * z),
    "complex of parts": lambda x, y, z: vr(torch.complex(x[..., 0], y[:1, :, 1]) * z),
    "views": lambda x, y, z: vr((vc(x) * z).transpose(0, 1).reshape(2, 12)[:, 1:7:2].unsqueeze(-1)),
    "permute and expand": lambda x, y, z: vr(vc(x).permute(1, 0)[None].expand(3, 6, 4) * z.t()),
    "select and squeeze": lambda x, y, z: vr(vc(x)[2] + z[:, :1].squeeze(-1)[1]),
    "cat and stack": lambda x, y, z: vr(
        torch.cat([vc(x), z], -1) * torch.stack([z, vc(y)], 0).sum(0).repeat(1, 2)
    ),
    "split and unbind": lambda x, y, z: vr(vc(x).split(2, dim=1)[1] * z.unbind(1)[3].unsqueeze(-1)),
    "sums and means": lambda x, y, z: vr((vc(x) * z).sum(-1) + (vc(x) * z).mean(0, keepdim=True).sum()),
    "matrix product": lambda x, y, z: vr(vc(x) @ (vc(y) * z).transpose(0, 1)),
    "products of batches and vectors": lambda x, y, z: torch.cat(
        [
            vr(torch.stack([vc(x), z]) @ z.t()).flatten(),
            vr(torch.bmm(torch.stack([vc(x), z]), vc(y).mT.expand(2, 6, 4))).flatten(),
            vr(vc(x) @ z[0]).flatten(),
            vr(z[1] @ vc(y).t()).flatten(),
            vr(z[0] @ vc(x)[0]),
        ]
    ),
    "where": lambda x, y, z: vr(torch.where(x[..., 0] > 0, vc(x), z)),
    "float64": lambda x, y, z: vr(vc(x.double()) * z.to(torch.complex128)),
    "real to complex": lambda x, y, z: vr(x[..., 0].to(torch.complex64) * z),
    "complex to real": lambda x, y, z: (vc(x) * z).real.float() + (vc(x) * z).to(torch.float32),
    "zeros and full": lambda x, y, z: vr(torch.zeros_like(z) + torch.full((4, 6), 1 + 2j) * vc(x)),
    "indexing": lambda x, y, z: vr(
        (vc(x) * z)[torch.tensor([3, 0, 3])].index_select(1, torch.tensor([5, 1]))
    ),
    "slice scatter and copy": lambda x, y, z: vr(
        torch.zeros_like(z).slice_scatter(vc(x)[:2] * z[:2], 0, 1, 3)
    ),
    "roll and flip": lambda x, y, z: vr(torch.roll(vc(x), 3) + torch.roll(z, (1, -2), (0, 1)).flip(-1, 0)),
    "pad": lambda x, y, z: vr(
        nn.functional.pad(vc(x), (1, 2)) + nn.functional.pad(z[None], (2, 1), "reflect")[0]
    ),
    "fft and ifft": lambda x, y, z: vr(fft.ifft(fft.fft(vc(x) * z, dim=0), dim=1)),
    "fft of a real tensor": lambda x, y, z: vr(fft.fft(y[..., 0])),
    "fft padded and cropped": lambda x, y, z: vr(fft.fft(vc(x), n=8) + fft.fft(z, n=8)[:, 2:6].sum()),
    "rfft and irfft": lambda x, y, z: fft.irfft(fft.rfft(y[..., 0], dim=0) * z[:3], n=4, dim=0),
    "fft2 orthonormal": lambda x, y, z: vr(fft.fft2(vc(x), norm="ortho")),
    "rfftn and irfftn forward": lambda x, y, z: fft.irfftn(
        fft.rfftn(y, norm="forward"), s=y.shape, norm="forward"
    ),
    "hfft and ihfft": lambda x, y, z: fft.hfft(fft.ihfft(y[..., 0]) * 2, n=6),
    "fftshift": lambda x, y, z: vr(fft.fftshift(fft.fft(vc(x)), dim=(0, 1))),
    "stft and istft": lambda x, y, z: torch.istft(
        torch.stft(y.reshape(48), 16, hop_length=4, window=torch.hann_window(16), return_complex=True) * 2,
        16,
        hop_length=4,
        window=torch.hann_window(16),
    ),
    "fft in float64": lambda x, y, z: vr(fft.fft(vc(x.double()) * z.to(torch.complex128), dim=0)),
}


class OnComplex(nn.Module):
    def __init__(self, operation) -> None:
        super().__init__()
        self.operation = operation
        self.register_buffer("z", torch.randn(4, 6, dtype=torch.complex64))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.operation(x, y, self.z)


def random_pairs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(4, 6, 2), torch.randn(4, 6, 2)


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("name", OPS)
def test_complex_ops_match_eager(name: str) -> None:
    torch.manual_seed(0)
    model = OnComplex(OPS[name])
    compiled = pygraph.export_and_compile(model, random_pairs(), target="emulator")
    assert "complex<" not in compiled.ir("torch")
    for _ in range(2):
        inputs = random_pairs()
        got, want = compiled(*inputs), model(*inputs)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert relative_error(got, want) < 1e-5, name


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # (the interpreter's, dividing by zero)
def test_a_complex_quotient_by_zero_is_what_eager_gives() -> None:
    model = OnComplex(OPS["quotient"])
    compiled = pygraph.export_and_compile(model, random_pairs(), target="emulator")
    model.z[0, :3] = torch.tensor([0j, 0j, 3 + 0j])
    x, y = random_pairs()
    x[0, 1] = 0.0  # 0 / 0: NaN in both parts; (a + bi) / 0: infinities
    got, want = compiled(x, y), model(x, y)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
    assert relative_error(got, want) < 1e-5


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    angles = torch.outer(torch.arange(end).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    """As Meta's Llama and torchtitan write it."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RotaryAttention(nn.Module):
    """`freqs_cis` a buffer (torchtitan), or a plain attribute on the CPU moved in forward (Meta's Llama)."""

    def __init__(self, dim: int = 64, heads: int = 4, max_seq: int = 64, buffer: bool = True) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        if buffer:
            self.register_buffer("freqs_cis", precompute_freqs_cis(self.head_dim, max_seq), persistent=False)
        else:
            self.freqs_cis = precompute_freqs_cis(self.head_dim, max_seq)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, self.heads, self.head_dim) for w in (self.wq, self.wk, self.wv))
        q, k = apply_rotary_emb(q, k, self.freqs_cis.to(x.device)[:s])
        out = nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


def check_rotary(device: str, dtype: torch.dtype, buffer: bool, tolerance: float) -> None:
    torch.manual_seed(0)
    model = RotaryAttention(buffer=buffer).to(device).eval().requires_grad_(False)
    for layer in (model.wq, model.wk, model.wv, model.wo):
        layer.to(dtype)  # (`model.to(dtype)` would make the complex buffer real)
    example = torch.randn(2, 32, 64, device=device, dtype=dtype)
    compiled = pygraph.export_and_compile(model, (example,), target="emulator" if device == "cpu" else "cuda")
    explanation = compiled.explain()
    assert explanation.coverage["before"] == 1.0 and len(explanation.segments) == 1, str(explanation)
    for _ in range(3):
        x = torch.randn(2, 32, 64, device=device, dtype=dtype)
        assert relative_error(compiled(x), model(x)) < tolerance
    if buffer:
        model.freqs_cis.mul_(1j)  # the buffer changed in place: the next call reads the new values
        x = torch.randn(2, 32, 64, device=device, dtype=dtype)
        assert relative_error(compiled(x), model(x)) < tolerance


@pytest.mark.parametrize("buffer", [True, False], ids=["buffer", "attribute"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_rotary_embedding_in_complex_numbers(dtype: torch.dtype, buffer: bool) -> None:
    check_rotary("cpu", dtype, buffer, 1e-5 if dtype == torch.float32 else 1e-2)


@needs_gpu
@pytest.mark.parametrize("buffer", [True, False], ids=["buffer", "attribute"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_rotary_embedding_in_complex_numbers_on_the_gpu(dtype: torch.dtype, buffer: bool) -> None:
    check_rotary("cuda", dtype, buffer, 1e-5 if dtype == torch.float32 else 1e-2)


def test_a_rotary_embedding_with_a_dynamic_length() -> None:
    torch.manual_seed(0)
    model = RotaryAttention().eval().requires_grad_(False)
    seq = torch.export.Dim("seq", min=2, max=64)
    compiled = pygraph.export_and_compile(
        model, (torch.randn(2, 32, 64),), dynamic_shapes={"x": {1: seq}}, target="emulator"
    )
    for length in (32, 17, 64):
        x = torch.randn(2, length, 64)
        assert relative_error(compiled(x), model(x)) < 1e-5


class SpectralBlock(nn.Module):
    """A Fourier neural operator's layer (Li et al.): the lowest modes of the 2-D spectrum mixed across
    channels by complex weights, the rest dropped, beside a pointwise convolution."""

    def __init__(self, channels: int = 8, modes: int = 5) -> None:
        super().__init__()
        self.modes = modes
        scale = 1 / channels
        self.weights = nn.Parameter(scale * torch.randn(channels, channels, modes, modes, dtype=torch.cfloat))
        self.pointwise = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        spectrum = torch.fft.rfft2(x)
        mixed = torch.zeros(b, c, h, w // 2 + 1, dtype=torch.cfloat, device=x.device)
        m = self.modes
        mixed[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, :m, :m], self.weights)
        return nn.functional.gelu(torch.fft.irfft2(mixed, s=(h, w)) + self.pointwise(x))


class FourierMixing(nn.Module):
    """FNet's encoder layer (Lee-Thorp et al.): the real part of a 2-D FFT over length and hidden size in
    place of attention, then a feed-forward block."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + torch.fft.fftn(x, dim=(1, 2)).real)
        return self.norm2(x + self.ff(x))


FOURIER = {"spectral": (SpectralBlock, (2, 8, 16, 16)), "fnet": (FourierMixing, (2, 12, 32))}


def check_fourier(device: str, name: str) -> None:
    """Whole in one graph, and with a dynamic batch, which FFTs over the other dims let calls pad."""
    torch.manual_seed(0)
    build, shape = FOURIER[name]
    model = build().to(device).eval().requires_grad_(False)
    compiled = pygraph.export_and_compile(
        model,
        (torch.randn(shape, device=device),),
        dynamic_shapes={"x": {0: torch.export.Dim("batch", max=16)}},
        target="emulator" if device == "cpu" else "cuda",
    )
    explanation = compiled.explain()
    assert explanation.coverage["before"] == 1.0 and len(explanation.segments) == 1, str(explanation)
    assert "pygraph.fft_" in compiled.ir("plan")
    for batch in (2, 3, 2):
        x = torch.randn(batch, *shape[1:], device=device)
        assert relative_error(compiled(x), model(x)) < 1e-5
    assert list(compiled._padded_calls) == [((3, *shape[1:]),)]


@pytest.mark.parametrize("name", FOURIER)
def test_fourier_layers_compute_their_ffts_in_the_graph(name: str) -> None:
    check_fourier("cpu", name)


@needs_gpu
@pytest.mark.parametrize("name", FOURIER)
def test_fourier_layers_compute_their_ffts_in_the_graph_on_the_gpu(name: str, no_tf32: None) -> None:
    check_fourier("cuda", name)


class Spectra(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple:
        spectrum = torch.fft.rfft(x)
        return spectrum, (
            spectrum.abs(),
            vc(x[:, :6].reshape(4, 3, 2)),
            torch.stft(x[0], 4, return_complex=True),
        )


def check_complex_results(device: str) -> None:
    """As eager returns them: complex dtypes, a view of the input aliasing it, fresh results otherwise."""
    torch.manual_seed(0)
    model = Spectra()
    target = "emulator" if device == "cpu" else "cuda"
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 8, device=device),), target=target)
    for _ in range(2):
        x = torch.randn(4, 8, device=device)
        got, want = torch.utils._pytree.tree_leaves(compiled(x)), torch.utils._pytree.tree_leaves(model(x))
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert relative_error(vr(g) if g.is_complex() else g, vr(w) if w.is_complex() else w) < 1e-5
        assert got[2].data_ptr() == x.data_ptr()  # (the view of the input)


def test_complex_results_are_complex_views_of_their_pairs():
    check_complex_results("cpu")


@needs_gpu
def test_complex_results_are_complex_views_of_their_pairs_on_the_gpu(no_tf32: None):
    check_complex_results("cuda")


class Refused(nn.Module):
    def __init__(self, forward) -> None:
        super().__init__()
        self.body = forward
        self.register_buffer("z", torch.randn(8, dtype=torch.complex64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self, x)


REFUSALS = {
    "complex state returned": (
        lambda m, x: (m.z[1:], vr(vc(x) * m.z)),
        "is the complex buffer 'z' or a view",
    ),
    "a square root": (lambda m, x: vr(vc(x).sqrt()), r"test_complex_as_real.py:\d+\).*sqrt"),
    "a power": (lambda m, x: vr(vc(x) ** 2.5), "pow"),
    "written complex state": (lambda m, x: vr(m.z.mul_(vc(x))), "is written by the model"),
}


@pytest.mark.parametrize("name", REFUSALS)
def test_what_has_no_real_formula_is_refused_naming_it(name: str) -> None:
    forward, message = REFUSALS[name]
    with pytest.raises(UnsupportedError, match=message):
        pygraph.export_and_compile(Refused(forward), (torch.randn(8, 2),), target="emulator")


class Filter(nn.Module):
    """A complex signal filtered in the frequency domain by complex weights, with a real gain."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, dtype=torch.cfloat))

    def forward(self, signal: torch.Tensor, gain: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.fft.ifft(torch.fft.fft(signal) * self.w) * gain, (signal.abs() * gain).sum(-1)


def filter_inputs(batch: int = 3, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, 16, dtype=torch.cfloat, device=device), torch.randn(batch, 1, device=device)


def check_filter(
    compiled: pygraph.CompiledModel, model: nn.Module, signal: torch.Tensor, gain: torch.Tensor
) -> None:
    (got, total), (want, expected) = compiled(signal, gain), model(signal, gain)
    assert got.dtype == torch.cfloat and relative_error(vr(got), vr(want)) < 1e-5
    assert relative_error(total, expected) < 1e-5


def check_complex_inputs(device: str) -> None:
    torch.manual_seed(0)
    model = Filter().to(device).eval().requires_grad_(False)
    target = "emulator" if device == "cpu" else "cuda"
    compiled = pygraph.export_and_compile(model, filter_inputs(device=device), target=target)
    for _ in range(2):
        check_filter(compiled, model, *filter_inputs(device=device))
    signal, gain = filter_inputs(device=device)
    check_filter(compiled, model, signal.conj(), gain)  # (the conjugate bit, resolved)
    check_filter(
        compiled, model, torch.randn(16, 3, dtype=torch.cfloat, device=device).t(), gain
    )  # (strided)
    check_filter(compiled, model, vc(torch.randn(3, 16, 2, device=device)), gain)  # (a view of a real tensor)
    for wrong in (
        torch.randn(3, 16, 2, device=device),
        torch.randn(3, 16, dtype=torch.cdouble, device=device),
    ):
        with pytest.raises(TypeError, match=r"input 'signal' must be a torch\.complex64 tensor"):
            compiled(wrong, gain)


def test_complex_inputs_are_passed_as_views_of_their_pairs() -> None:
    check_complex_inputs("cpu")


@needs_gpu
def test_complex_inputs_are_passed_as_views_of_their_pairs_on_the_gpu(no_tf32: None) -> None:
    check_complex_inputs("cuda")


def test_complex_inputs_of_a_dynamic_batch_pad() -> None:
    torch.manual_seed(0)
    model = Filter().eval().requires_grad_(False)
    batch = torch.export.Dim("batch", max=16)
    compiled = pygraph.export_and_compile(
        model, filter_inputs(), dynamic_shapes={"signal": {0: batch}, "gain": {0: batch}}, target="emulator"
    )
    for size in (3, 5):
        check_filter(compiled, model, *filter_inputs(size))
    assert list(compiled._padded_calls) == [((5, 16, 2), (5, 1))]


def test_a_complex_input_the_model_writes_is_refused_naming_it() -> None:
    class Writes(nn.Module):
        def forward(self, w: torch.Tensor) -> torch.Tensor:
            return vr(w.mul_(2))

    with pytest.raises(UnsupportedError, match="complex input 'w' is written by the model"):
        pygraph.export_and_compile(Writes(), (torch.randn(8, dtype=torch.complex64),), target="emulator")

"""Process-wide settings a trace bakes in (`pygraph/frontend/settings.py`): a call under autocast, other TF32
flags or another default dtype than its trace runs a program traced under them, and gets what eager gives
under them. Half-precision results are judged as in `test_half_precision.py`: against the model in float32
without autocast, within twice eager's own error under autocast. On the emulator and on the GPU."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error


class Block(nn.Module):
    """Attention, layer norm and an MLP: products autocast runs in half precision, norms and softmax it
    keeps in float32."""

    def __init__(self, width: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.up, self.down = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c)
        h = self.norm(x + self.out(a))
        return h + self.down(F.gelu(self.up(h)))


class FullPrecisionHead(Block):
    """A head the model computes in float32 whatever autocast says, as mixed-precision models do for
    their logits."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = super().forward(x)
        with torch.autocast(x.device.type, enabled=False):
            logits = h.float() @ self.up.weight.t()
        return h, logits


@contextlib.contextmanager
def autocast(device: str, dtype: torch.dtype | None = None) -> Iterator[None]:
    """`torch.autocast` for `dtype`, or nothing for None."""
    if dtype is None:
        yield
    else:
        with torch.autocast(device, dtype=dtype):
            yield


def check(
    model: nn.Module, compiled: pygraph.CompiledModel, x: torch.Tensor, dtype: torch.dtype | None
) -> None:
    """One call of `compiled` under autocast to `dtype` (None: none) against eager's under the same."""
    device = x.device.type
    with torch.no_grad():
        exact = model(x)
        with autocast(device, dtype):
            eager, got = model(x), compiled(x)
    for e, g, r in zip(*(t if isinstance(t, tuple) else (t,) for t in (eager, got, exact)), strict=True):
        assert g.dtype == e.dtype
        if dtype is None:
            torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5 * e.abs().max().item())
        else:
            eager_error = relative_error(e.float(), r)
            assert 0 < eager_error < 0.05  # the half precision shows, and the model is not degenerate
            assert relative_error(g.float(), r) <= max(2 * eager_error, torch.finfo(dtype).eps)


def compile_under(model: nn.Module, inputs: tuple, dtype: torch.dtype | None) -> pygraph.CompiledModel:
    device = inputs[0].device.type
    with torch.no_grad(), autocast(device, dtype):
        return pygraph.export_and_compile(model, inputs, target="cuda" if device == "cuda" else "emulator")


def settings_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "other settings" in str(w.message)]


def round_trip(device: str, half: torch.dtype, model_type: type[nn.Module]) -> None:
    """Compiled without autocast, called under it and without it again; compiled under it likewise."""
    torch.manual_seed(0)
    model = model_type().to(device).eval()
    x = torch.randn(2, 16, 64, device=device)
    for traced, other in ((None, half), (half, None)):
        compiled = compile_under(model, (x,), traced)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for dtype in (traced, other, other, traced, other):
                check(model, compiled, torch.randn_like(x), dtype)
        (warning,) = settings_warnings(caught)  # one program more, traced once
        assert ("no autocast when compiled" if traced is None else "no autocast now") in warning


def test_calls_under_autocast_and_without_match_eager() -> None:
    round_trip("cpu", torch.bfloat16, Block)


def test_a_region_the_model_keeps_out_of_autocast_stays_in_float32() -> None:
    round_trip("cpu", torch.bfloat16, FullPrecisionHead)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("model_type", [Block, FullPrecisionHead], ids=["block", "full precision head"])
def test_calls_under_autocast_match_eager_on_the_gpu(
    half: torch.dtype, model_type: type[nn.Module], no_tf32: None
) -> None:
    round_trip("cuda", half, model_type)


def test_new_weights_reach_a_program_traced_under_autocast() -> None:
    """Under autocast the weights' casts are state derived from the parameters: they follow a new
    state dict."""
    torch.manual_seed(0)
    model, x = Block().eval(), torch.randn(2, 16, 64)
    compiled = compile_under(model, (x,), torch.bfloat16)
    check(model, compiled, x, torch.bfloat16)
    model.load_state_dict(Block().state_dict())
    check(model, compiled, torch.randn_like(x), torch.bfloat16)


class Scaled(nn.Module):
    """A Python number argument (the Python path of a call) and a factory call taking the default dtype."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, scale: float) -> torch.Tensor:
        return self.linear(x) * scale + torch.arange(8) / 8


def test_a_python_number_argument_under_autocast() -> None:
    torch.manual_seed(0)
    model, x = Scaled().eval(), torch.randn(4, 8)
    compiled = compile_under(model, (x, 0.5), None)
    with torch.no_grad(), pytest.warns(UserWarning, match="autocast"):
        for scale in (0.5, 2.0):
            exact = model(x, scale)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                got, want = compiled(x, scale), model(x, scale)
            assert got.dtype == want.dtype  # (float32: the bfloat16 product plus the float32 arange)
            # (bfloat16 keeps 8 bits: its rounding of the product, in the compiled kernel and in eager's)
            torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
            assert relative_error(got, exact) > 1e-4  # the product in bfloat16, as eager's


def test_another_default_dtype_or_tf32_flag_compiles_again() -> None:
    torch.manual_seed(0)
    model, x = Scaled().eval(), torch.randn(4, 8)
    saved = torch.get_default_dtype(), torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        compiled = pygraph.export_and_compile(model, (x, 0.5), target="emulator")
        torch.set_default_dtype(torch.float64)
        with torch.no_grad(), pytest.warns(UserWarning, match="default dtype torch.float32 when compiled"):
            got, want = compiled(x, 0.5), model(x, 0.5)
        assert got.dtype == want.dtype == torch.float64  # (the arange's division now gives float64)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        torch.set_default_dtype(torch.float32)
        torch.backends.cuda.matmul.allow_tf32 = True
        with (
            torch.no_grad(),
            pytest.warns(UserWarning, match="TF32 matmuls off when compiled, TF32 matmuls on now"),
        ):
            torch.testing.assert_close(compiled(x, 0.5), model(x, 0.5), rtol=1e-4, atol=1e-5)
    finally:
        torch.set_default_dtype(saved[0])
        torch.backends.cuda.matmul.allow_tf32 = saved[1]


def test_calls_under_more_settings_than_max_variants_run_eagerly() -> None:
    torch.manual_seed(0)
    model, x = Block().eval(), torch.randn(2, 16, 64)
    compiled = compile_under(model, (x,), None)
    with knobs.scope(max_variants=1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(model, compiled, x, torch.bfloat16)  # a program traced under bfloat16 autocast
        check(model, compiled, x, torch.float16)  # one too many: the model runs it
        check(model, compiled, x, torch.float16)
    assert len(settings_warnings(caught)) == 1
    (eager,) = [str(w.message) for w in caught if "PYGRAPH_MAX_VARIANTS=1" in str(w.message)]
    assert "runs such calls eagerly" in eager and "autocast(cpu, torch.bfloat16)" in eager

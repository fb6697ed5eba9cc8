"""FFTs on complex values held as pairs of reals: the library ops a plan calls for them.

pygraph computes complex tensors as the real tensors `view_as_real` gives of them
(`frontend/complex_as_real.py`), so no plan buffer is complex. ATen's three FFT primitives, which every
`torch.fft` function and `stft` decompose into, take or return complex tensors; each op here is one of them
called on complex views of its pair operands, its complex result returned as a pair (views both ways, no
copy and no other launch), so a library node of these calls exactly one ATen op and a recording holds
exactly that op's launches (cuFFT's on a GPU, pocketfft's on the CPU).

- `pygraph.fft_r2c(x, dim, normalization, onesided)`: `aten._fft_r2c` of a real `x`, a pair.
- `pygraph.fft_c2c(pair, dim, normalization, forward)`: `aten._fft_c2c`, pair to pair.
- `pygraph.fft_c2r(pair, dim, normalization, last_dim_size)`: `aten._fft_c2r`, pair to real.

`dim` counts the complex value's dims (those of the pair without its last), as ATen's op does.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _complex_view(pair: torch.Tensor) -> torch.Tensor:
    """The complex tensor `pair` holds; an error, not a copy, where its strides hold none (the plan lays
    pairs out with the parts adjacent, so this names a planning bug)."""
    try:
        return torch.view_as_complex(pair)
    except RuntimeError as exc:
        raise RuntimeError(
            f"a complex pair of shape {list(pair.shape)} and strides {list(pair.stride())} is no complex "
            f"tensor's bytes ({exc})"
        ) from None


def _r2c(x: torch.Tensor, dim: list[int], normalization: int, onesided: bool) -> torch.Tensor:
    return torch.view_as_real(aten._fft_r2c.default(x, dim, normalization, onesided))


def _c2c(pair: torch.Tensor, dim: list[int], normalization: int, forward: bool) -> torch.Tensor:
    return torch.view_as_real(aten._fft_c2c.default(_complex_view(pair), dim, normalization, forward))


def _c2r(pair: torch.Tensor, dim: list[int], normalization: int, last_dim_size: int) -> torch.Tensor:
    return aten._fft_c2r.default(_complex_view(pair), dim, normalization, last_dim_size)


def _define(name: str, function: object) -> torch._ops.OpOverload:
    """`pygraph::name` computing `function`, which computes its fake result too (ATen's FFTs have meta
    kernels); the op as the dispatcher's, as exported programs name ops."""
    torch.library.custom_op(f"pygraph::{name}", function, mutates_args=()).register_fake(function)
    return getattr(torch.ops.pygraph, name).default


fft_r2c = _define("fft_r2c", _r2c)
fft_c2c = _define("fft_c2c", _c2c)
fft_c2r = _define("fft_c2r", _c2r)

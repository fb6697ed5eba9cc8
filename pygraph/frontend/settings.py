"""The process-wide settings a compiled program bakes in: autocast, TF32 and the default dtype.

A trace under `torch.autocast` holds autocast's casts as ops of its own (decomposing the exported program
applies them), factory calls without a dtype take the default dtype of the moment, and pygraph routes
float32 products and attentions by whether TF32 is allowed and records cuBLAS and cuDNN calls in the math
mode of the moment. A call made under other settings than its trace would compute something other than
eager without a word (float32 results where eager gives bfloat16), so a compiled model reads these
settings on every call (a few reads in C, well under a microsecond, as Dynamo's global-state guard does)
and runs such a call with a program traced under them.

Once the trace holds autocast's casts, pygraph's own ATen calls (constant folding, derived state, library
ops, the emulator) run with autocast off (`pygraphs_own_ops`): autocast would cast them a second time.
"""

from __future__ import annotations

import torch

AUTOCAST_DEVICES = ("cuda", "cpu")  # the device types pygraph compiles for

# The settings of a call: ((device type, autocast dtype) of each device type autocast is on for, ...),
# TF32 allowed in cuBLAS, TF32 allowed in cuDNN, the default dtype.
Settings = tuple[tuple[tuple[str, torch.dtype], ...], bool, bool, torch.dtype]

pygraphs_own_ops = torch._C._DisableAutocast


def current() -> Settings:
    """The settings in force now."""
    autocast: tuple[tuple[str, torch.dtype], ...] = ()
    if torch._C._is_any_autocast_enabled():
        autocast = tuple(
            (device, torch.get_autocast_dtype(device))
            for device in AUTOCAST_DEVICES
            if torch.is_autocast_enabled(device)
        )
    return (
        autocast,
        torch._C._get_cublas_allow_tf32(),
        torch._C._get_cudnn_allow_tf32(),
        torch.get_default_dtype(),
    )


def _parts(settings: Settings) -> list[str]:
    autocast, matmul, convolution, dtype = settings
    casts = ", ".join(f"autocast({device}, {cast})" for device, cast in autocast) or "no autocast"
    return [
        casts,
        f"TF32 matmuls {'on' if matmul else 'off'}",
        f"TF32 convolutions {'on' if convolution else 'off'}",
        f"default dtype {dtype}",
    ]


def describe(settings: Settings) -> str:
    """`no autocast, TF32 matmuls off, TF32 convolutions on, default dtype torch.float32`."""
    return ", ".join(_parts(settings))


def differences(traced: Settings, now: Settings) -> str:
    """What differs between the settings of a trace and those of a call: `no autocast when compiled,
    autocast(cpu, torch.bfloat16) now`."""
    return "; ".join(
        f"{then} when compiled, {later} now"
        for then, later in zip(_parts(traced), _parts(now), strict=True)
        if then != later
    )

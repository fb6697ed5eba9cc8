"""Which CUDA kernels read a Python number (or a 0-d tensor of a wider dtype) in the result's 2-byte dtype
(ROUNDS: `x % 0.7` in bfloat16 divides by 0.69921875) and which in opmath, float32 (`opmath`), per form of
the operand: a number, a 0-d CPU tensor, a 0-d tensor on the device. `pointwise.Pointwise.reads` follows it.

On the GPU machine: `python3 bench/probes/probe_numbers_read_as_half.py` (output:
bench/results/probe-numbers-read-as-half-s35-h100.log). `?r/u`: r elements differ from the rounded
number's result, u from float32's; `?0/0` where the op cannot tell the two apart, `-` a form not tried.
"""

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

Op = Callable[[torch.Tensor, Any], torch.Tensor]


def _numbers_only(op: Op) -> Op:
    return lambda x, s: None if isinstance(s, torch.Tensor) else op(x, s)


OPS: dict[str, Op] = {
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "rremainder": lambda x, s: torch.remainder(s, x) if isinstance(s, torch.Tensor) else s % x,
    "add": lambda x, s: x + s,
    "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x,
    "mul": lambda x, s: x * s,
    "div": lambda x, s: x / s,
    "pow": lambda x, s: x.abs() ** s,
    "rpow": lambda x, s: torch.pow(s, x),
    "floordiv": lambda x, s: torch.div(x, s, rounding_mode="floor"),
    "trunc": lambda x, s: torch.div(x, s, rounding_mode="trunc"),
    "lt": lambda x, s: (x < s).to(x.dtype),
    "le": lambda x, s: (x <= s).to(x.dtype),
    "eq": lambda x, s: (x == s).to(x.dtype),
    "ne": lambda x, s: (x != s).to(x.dtype),
    "gt": lambda x, s: (x > s).to(x.dtype),
    "clamp": lambda x, s: torch.clamp(x, -s, s),
    "lerp": lambda x, s: torch.lerp(x, -x, s),
    "addcmul": lambda x, s: (
        torch.addcmul(x, x, s) if isinstance(s, torch.Tensor) else torch.addcmul(x, x, x, value=s)
    ),
    "leaky_relu": _numbers_only(F.leaky_relu),
    "elu": _numbers_only(F.elu),
    "softplus": _numbers_only(F.softplus),
    "threshold": _numbers_only(lambda x, s: F.threshold(x, s, 0.0)),
    "where": lambda x, s: torch.where(x > 0, x, s),
    "masked_fill": lambda x, s: x.masked_fill(x > 0, s),
}


def forms(value: float, device: str) -> dict[str, Any]:
    return {"number": value, "cpu0d": torch.tensor(value), f"{device}0d": torch.tensor(value, device=device)}


def classify(op: Op, x: torch.Tensor, given: Any, rounded: Any) -> str:
    try:
        got = op(x, given)
        if got is None:
            return "-"
        wide = given.float() if isinstance(given, torch.Tensor) else given
        r = (got != op(x, rounded)).sum().item()
        u = (got != op(x.float(), wide).to(x.dtype)).sum().item()
    except Exception as e:  # (a form an op does not take: the CPU 0-d bound of a CUDA clamp)
        return f"err {str(e)[:40]}"
    return "ROUNDS" if r == 0 and u > 0 else "opmath" if u == 0 and r > 0 else f"?{r}/{u}"


def main() -> None:
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    s = 0.7  # between two values of either 2-byte dtype
    for dtype in (torch.bfloat16, torch.float16):
        print(device, dtype)
        x = (torch.randn(100000, device=device) * 3).to(dtype)
        given, rounded = forms(s, device), forms(torch.tensor(s).to(dtype).item(), device)
        for name, op in OPS.items():
            row = [f"{form}:{classify(op, x, given[form], rounded[form])}" for form in given]
            print(f"  {name:11s}", "  ".join(row))


if __name__ == "__main__":
    main()

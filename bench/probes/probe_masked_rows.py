"""What eager's `scaled_dot_product_attention` gives for query rows whose mask (boolean, or additive with
-inf) hides every key, by backend, dtype and the inputs' memory layout (contiguous, or dims reversed in
memory as the fuzzer's transposed calls pass them): zeros (the math backend's safe softmax), NaN, the
values' mean (a softmax over equal scores) or other values.

On the GPU machine: `python3 bench/probes/probe_masked_rows.py` (output:
bench/results/masked-rows-s41-h100.log).
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def kind(row: torch.Tensor, values: torch.Tensor) -> str:
    if row.isnan().all():
        return "NaN"
    if (row == 0).all():
        return "zeros"
    if torch.allclose(row.float(), values.float().mean(-2), atol=1e-2):
        return "mean of values"
    return "other"


def main() -> None:
    torch.manual_seed(0)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for layout in ("contiguous", "reversed"):
            x = torch.randn(1, 12, 4, 16, device="cuda", dtype=dtype)
            if layout == "reversed":
                x = x.transpose(0, -1).contiguous().transpose(0, -1)
            keep = torch.ones(1, 12, 1, 4, dtype=torch.bool, device="cuda")
            keep[0, 3] = False  # head 3: every key hidden
            additive = torch.zeros(keep.shape, dtype=dtype, device="cuda").masked_fill(~keep, -torch.inf)
            v = x.tanh()
            for mask in (keep, additive):
                row(x, v, mask, f"{str(dtype)[6:]:9} {layout:10} {'bool' if mask is keep else '-inf':4}")


def row(x: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, label: str) -> None:
    """One line: what each backend gives for the hidden row."""
    results = []
    for name, backends in (
        ("default", None),
        ("math", [SDPBackend.MATH]),
        ("efficient", [SDPBackend.EFFICIENT_ATTENTION]),
        ("cudnn", [SDPBackend.CUDNN_ATTENTION]),
    ):
        try:
            if backends is None:
                out = F.scaled_dot_product_attention(x, x, v, attn_mask=mask)
            else:
                with sdpa_kernel(backends):
                    out = F.scaled_dot_product_attention(x, x, v, attn_mask=mask)
            results.append(f"{name}: {kind(out[0, 3], v[0, 3])}")
        except RuntimeError as exc:
            results.append(f"{name}: refused ({str(exc).splitlines()[0][:60]})")
    print(f"{label} " + "; ".join(results))


if __name__ == "__main__":
    main()

"""Weight rows per program of the matrix-vector kernels that compute their row in a prologue (every program
recomputes it: more rows per program spread that work over more weight), on the decoding step of
`probe_decode.py` (H200, bfloat16): time per step and the GPU time of the kernels costing most.

On the GPU machine: `python3 bench/probes/probe_matvec_rows.py` (output:
bench/results/probe-matvec-rows-s28-h200.log).
"""

import inspect

import torch
from probe_decode import build, gpu_time, inputs, per_step_ms

import pygraph
from pygraph.passes import matvec_kernel

PLAIN = matvec_kernel.matvec_blocks


def rows_per_program(with_prologue: int):
    """`matvec_blocks` giving kernels with a prologue `with_prologue` weight rows per program."""

    def blocks(k: int, products: int = 1) -> tuple[int, int]:
        writer = inspect.currentframe().f_back.f_locals["self"]
        if not writer.prologue_ops:
            return PLAIN(k, products)
        block_n = max(1, with_prologue // products)
        return block_n, max(1, min(8, products * block_n * matvec_kernel.pow2(k) // 1024))

    return blocks


def main() -> None:
    with torch.no_grad():
        step = build()
        check = [inputs(i) for i in range(2)]  # (positions 8 and 9, written again before each is read)
        reference = [step(*x).float() for x in check]
        for rows in (2, 4, 8, 16):
            matvec_kernel.matvec_blocks = rows_per_program(rows)
            compiled = pygraph.export_and_compile(step, inputs(0))
            errors = [(compiled(*inputs(i)).float() - r).abs().max().item() for i, r in enumerate(reference)]
            print(
                f"{rows:2d} rows a program with a prologue: {per_step_ms(compiled):.4f} ms per step "
                f"(logits within {max(errors):.1e} of eager's)",
                flush=True,
            )
            print(gpu_time(compiled), flush=True)


if __name__ == "__main__":
    main()

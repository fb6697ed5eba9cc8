"""Why torch 2.11's draft export fails on half-precision Llama RoPE variants and float16 Marian
(`_has_storage(None)`): prints the whole exception chain of each case's export on the GPU."""

import sys
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import sweep2

from pygraph.frontend.export import export_program

for name, dtype in (("hf/llama_rope_dynamic", torch.float16), ("hf/marian", torch.float16)):
    model, inputs = sweep2.CASES[name]()
    model = model.eval().to("cuda", dtype)
    try:
        with torch.no_grad():
            export_program(model, sweep2._cast(inputs(0), dtype, "cuda"))
        print(name, "exported")
    except Exception as error:
        print(f"==== {name}")
        traceback.print_exception(error, file=sys.stdout)

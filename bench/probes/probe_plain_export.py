"""Whether torch.export alone traces a sweep case: `torch.export.export(model, inputs, strict=False)`
and then `run_decompositions()`, without pygraph's frontend, so that an export failure the sweep reports
can be told apart as torch's own (as under torch 2.11) or as one that pygraph's handling of the trace
brings about. `python3 bench/probes/probe_plain_export.py hf/llava hf/chameleon ...` (exact case names);
one line per case."""

import sys
import time

import torch

sys.path.insert(0, "bench/probes")
import sweep2


def main(names: list[str]) -> None:
    print(f"# torch {torch.__version__}", flush=True)
    for name in names:
        torch.manual_seed(0)
        with torch.device("cpu"):  # (as the sweep builds its cases)
            model, inputs = sweep2.CASES[name]()
        model = model.eval().float()
        start = time.time()
        stage = "export"
        try:
            with torch.no_grad():
                program = torch.export.export(
                    model, sweep2._cast(inputs(0), torch.float32, "cpu"), strict=False
                )
                stage = "run_decompositions"
                program.run_decompositions()
            print(f"OK {name} ({time.time() - start:.0f}s)", flush=True)
        except Exception as error:
            first = " | ".join(line for line in str(error).strip().splitlines()[:3] if line.strip())[:400]
            took = time.time() - start
            print(f"FAIL {name} in {stage}: {type(error).__name__}: {first} ({took:.0f}s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

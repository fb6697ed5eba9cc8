"""Runs one sweep case (`sweep2.py`) under each of several knob settings and prints its error against eager
and where pygraph's results are not finite: which setting a failure needs.
`python3 bench/probes/probe_case_knobs.py NAME [--device cuda] [KNOB=VALUE[,KNOB=VALUE] ...]`; each setting
runs in a fresh process (knobs are read once)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import torch


def _one(name: str, device: str) -> None:
    sys.path.insert(0, os.path.dirname(__file__))
    import sweep2

    import pygraph
    from pygraph.metrics import relative_error

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    with torch.device(device):
        model, inputs = sweep2.CASES[name]()
    model = model.eval().to(device)
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, sweep2._cast(inputs(0), torch.float32, device))
        for seed in (0, 1):
            args = sweep2._cast(inputs(seed), torch.float32, device)
            got, ref = compiled(*args), model(*args)
            got_t = got if isinstance(got, torch.Tensor) else got[0]
            ref_t = ref if isinstance(ref, torch.Tensor) else ref[0]
            bad = (~torch.isfinite(got_t)).nonzero()[:8].tolist()
            print(
                f"  seed {seed}: err {relative_error(got, ref):.1e}, eager finite {bool(torch.isfinite(ref_t).all())}"
                f", pygraph non-finite at {bad}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("settings", nargs="*", default=[""], help="KNOB=VALUE,... per run ('' : defaults)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_intermixed_args()  # (`--device cuda` before or after the settings)
    if args.one:
        _one(args.name, args.device)
        return
    for setting in args.settings or [""]:
        env = dict(os.environ)
        env.update(item.split("=", 1) for item in setting.split(",") if item)
        print(f"{args.name} with {setting or 'defaults'}:", flush=True)
        result = subprocess.run(
            [sys.executable, __file__, args.name, "--device", args.device, "--one"],
            env=env,
            capture_output=True,
            text=True,
        )
        print(result.stdout, end="")
        if result.returncode:
            print("  failed:", result.stderr.strip().splitlines()[-1][:300])


if __name__ == "__main__":
    main()

"""Where a sweep case's numbers go wrong: runs the program pygraph's frontend hands the importer
(`export_program`, rewrites done) node by node on `--device` in float32 and on the CPU in float64, and prints
the first nodes whose results differ (non-finite where the reference is finite, or a relative error over
`--tolerance`), then pygraph's compiled result against eager. If the frontend's program is right on the device
and pygraph's result is not, the error is below the frontend (a kernel or the plan); `PYGRAPH_DUMP_DIR` then
keeps the IR. `python3 bench/probes/probe_program_divergence.py NAME [--device cuda]`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import torch
import torch.utils._pytree as pytree


def _reference(value: Any) -> Any:
    """`value` on the CPU, floating tensors in float64."""

    def move(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.detach().to("cpu", torch.float64 if v.is_floating_point() else v.dtype)
        if isinstance(v, torch.device):
            return torch.device("cpu")
        if v is torch.float32:
            return torch.float64
        return v

    return pytree.tree_map(move, value)


def _differs(got: Any, ref: Any, tolerance: float) -> str:
    """Why the device's result `got` is not the reference's `ref` ("" if it is)."""
    if not isinstance(got, torch.Tensor) or not got.is_floating_point() or got.shape != ref.shape:
        return ""
    got = got.detach().cpu().double()
    ref = ref.double()
    lost = torch.isfinite(ref) & ~torch.isfinite(got)
    if lost.any():
        return f"non-finite where the reference is finite at {lost.nonzero()[:4].tolist()}"
    both = torch.isfinite(ref) & torch.isfinite(got)
    if both.any():
        scale = ref[both].abs().max().clamp_min(1e-30)
        err = float((got[both] - ref[both]).abs().max() / scale)
        if err > tolerance:
            return f"relative error {err:.1e}"
    return ""


def _walk(program: torch.export.ExportedProgram, args: tuple, tolerance: float, limit: int) -> None:
    module = program.module()
    device_env: dict[torch.fx.Node, Any] = {}
    cpu_env: dict[torch.fx.Node, Any] = {}
    flat_args = iter(pytree.tree_leaves(args))
    shown = 0
    for node in module.graph.nodes:
        if node.op == "placeholder":
            device_env[node] = next(flat_args)
            cpu_env[node] = _reference(device_env[node])
            continue
        if node.op == "get_attr":
            value = module
            for part in node.target.split("."):
                value = getattr(value, part)
            device_env[node], cpu_env[node] = value, _reference(value)
            continue
        if node.op != "call_function":
            continue
        args_d, kwargs_d = torch.fx.node.map_arg((node.args, node.kwargs), device_env.__getitem__)
        args_c, kwargs_c = torch.fx.node.map_arg((node.args, node.kwargs), cpu_env.__getitem__)
        device_env[node] = node.target(*args_d, **kwargs_d)
        try:
            cpu_env[node] = node.target(*_reference(args_c), **_reference(kwargs_c))
        except Exception:  # an op without a CPU or float64 kernel: follow the device
            cpu_env[node] = _reference(device_env[node])
        why = _differs(device_env[node], cpu_env[node], tolerance)
        if why and shown < limit:
            shown += 1
            print(f"  {node.name} = {node.target}: {why}")
            print(
                f"    from {[a.name for a in node.all_input_nodes]}; {node.meta.get('stack_trace', '')[-300:]!r}"
            )
    if not shown:
        print("  no node differs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--limit", type=int, default=6)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(__file__))
    import sweep2
    import transformers

    import pygraph
    from pygraph.frontend.export import export_program
    from pygraph.metrics import relative_error

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    with torch.device(args.device):
        model, inputs = sweep2.CASES[args.name]()
    model = model.eval().to(args.device)
    example = sweep2._cast(inputs(0), torch.float32, args.device)
    with torch.no_grad():
        program = export_program(model, example, warn=False)
        for seed in (0, 1):
            call = sweep2._cast(inputs(seed), torch.float32, args.device)
            print(f"seed {seed}: the frontend's program against float64 on the CPU:")
            _walk(program, call, args.tolerance, args.limit)
        compiled = pygraph.export_and_compile(model, example)
        for seed in (0, 1):
            call = sweep2._cast(inputs(seed), torch.float32, args.device)
            print(f"seed {seed}: pygraph against eager {relative_error(compiled(*call), model(*call)):.1e}")


if __name__ == "__main__":
    main()

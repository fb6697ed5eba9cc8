"""Where a draft-exported program, run again on its example inputs, leaves the trace draft export recorded:
compiles a sweep case and, while pygraph's frontend runs the program again (`branches._example_reads`), prints
each node whose real shape or number differs from the one its fake value had in the trace (unbacked sizes at
the values draft export saw), then the node that failed, if one did. For failures such as an `unbind`'s
piece missing in the run (SwitchTransformers under torch 2.11).
`python3 bench/probes/probe_draft_rerun.py NAME [--device cuda] [--limit N]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor

sys.path.insert(0, str(Path(__file__).parent))
import sweep2


def _traced(value: Any) -> Any:
    """The trace's shape of a fake tensor, or its number for a SymInt, with every symbol at its recorded value."""

    def concrete(size: Any, shape_env: Any) -> Any:
        if not isinstance(size, torch.SymInt):
            return size
        known = {**shape_env.var_to_val, **shape_env.unbacked_var_to_val}
        return size.node.expr.xreplace(known)

    if isinstance(value, FakeTensor) and value.fake_mode.shape_env is not None:
        return tuple(concrete(s, value.fake_mode.shape_env) for s in value.shape)
    if isinstance(value, torch.SymInt):
        return concrete(value, value.node.shape_env)
    return None


def _real(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    return value if isinstance(value, int) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--limit", type=int, default=12, help="differing nodes to print")
    args = parser.parse_args()
    shown = 0
    run_node = torch.fx.Interpreter.run_node

    def watched(self: torch.fx.Interpreter, node: torch.fx.Node) -> Any:
        nonlocal shown
        try:
            result = run_node(self, node)
        except Exception as error:
            print(f"failed at {node.format_node()}: {type(error).__name__}: {error}")
            for operand in node.all_input_nodes:
                print(f"  operand {operand.name}: traced {_traced(operand.meta.get('val'))}")
            raise
        traced, real = _traced(node.meta.get("val")), _real(result)
        if traced is not None and real is not None and str(traced) != str(real) and shown < args.limit:
            shown += 1
            trace = (node.meta.get("stack_trace") or "").strip().splitlines()[-1:]
            print(f"{node.name} ({node.target}): traced {traced}, run {real} {' '.join(trace)}")
        return result

    torch.fx.Interpreter.run_node = watched
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    print(sweep2.run_case(args.name, torch.float32, args.device), flush=True)


if __name__ == "__main__":
    main()

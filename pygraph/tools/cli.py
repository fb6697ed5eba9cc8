"""`pygraph`: the command line (example, check, bench, fuzz, explain)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pygraph", description="pygraph: PyTorch models as explicitly built CUDA graphs"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    example = sub.add_parser(
        "example", help="compile the bundled example model, explain it, run it and check it against eager"
    )
    example.add_argument("--print-ir", action="store_true", help="print each stage's IR in full")
    check = sub.add_parser("check", help="compile benchmark workloads and compare them with eager (TF32 off)")
    check.add_argument("--suite", default="small", help="small, paper, stress or all")
    check.add_argument("--workloads", help="comma-separated workload names")
    check.add_argument("--out", type=Path, help="directory for check-<suite>.json")
    bench = sub.add_parser(
        "bench", help="measure pygraph against eager, torch.compile and reduce-overhead on a GPU"
    )
    bench.add_argument("--suite", default="all", help="small, paper, stress or all")
    bench.add_argument("--workloads", help="comma-separated workload names")
    bench.add_argument("--systems", help="comma-separated systems (default: eager,compile,ro,pygraph)")
    bench.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="results directory (latest.json is merged)"
    )
    bench.add_argument(
        "--emulate", action="store_true", help="check correctness through the CPU emulator instead"
    )
    bench.add_argument(
        "--report", action="store_true", help="only redraw the table and chart from latest.json"
    )
    bench.add_argument(
        "--check", help="systems whose max_rel_err is measured (default: all; each check compiles again)"
    )
    bench.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "float16", "bfloat16"],
        help="cast each model and its floating inputs to this dtype (write to another --out)",
    )
    sub.add_parser(
        "fuzz",
        help="compile random programs and compare them with eager (`pygraph fuzz --help`)",
        add_help=False,
    )
    explain = sub.add_parser(
        "explain", help="report coverage, I/O mechanisms, segments from a .plan.mlir or a dump directory"
    )
    explain.add_argument("path", type=Path)
    args, rest = parser.parse_known_args(argv)
    if args.command == "fuzz":
        from .fuzz import cli as run_fuzz

        return run_fuzz(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "example":
        from .example import main as run_example

        return run_example(print_ir=args.print_ir)
    if args.command == "bench":
        from .bench import main as run_bench

        return run_bench(
            args.suite,
            args.workloads,
            args.systems,
            args.out,
            args.emulate,
            args.report,
            args.check,
            args.dtype,
        )
    if args.command == "check":
        from .check import main as run_check

        return run_check(args.suite, args.workloads, args.out)
    return _explain(args.path)


def _explain(path: Path) -> int:
    from ..ir.context import parse
    from ..ir.explain import explain_plan
    from ..ir.plan import read_plan

    files = sorted(path.glob("*.plan.mlir")) if path.is_dir() else [path]
    if not files:
        print(f"pygraph explain: no .plan.mlir in {path}", file=sys.stderr)
        return 1
    for file in files:
        module = parse(file.read_text())
        print(f"== {file.name}")
        print(explain_plan(read_plan(module), module))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`pygraph-opt`: parse an `.mlir` file, run a pass pipeline on it, print the result (mlir-opt's habits).

    pygraph-opt in.plan.mlir -p 'plan-memory,canonicalize' -o out.plan.mlir

Pass tests run it under lit hundreds of times, so it imports no torch. Errors (from the parser, the
verifier, and `PassError`s raised by passes) become diagnostics: printed as `FILE:LINE:COL: error: ...`,
or checked against the input's `// expected-error {{...}}` comments with `--verify-diagnostics`.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

from ..ir._mlir import PassManager, ir
from ..ir.context import make_context, print_module
from ..knobs import knobs
from ..passes import get_pass, pass_names
from ..passes.base import Pass, PassError
from ..passes.pipeline import Instrumentation, PipelineError, UpstreamPass, parse_pipeline, run_pipeline

SPLIT_MARKER = "// -----"

# The first file location inside an MLIR location: `loc("-":3:5)`, `loc("x"("-":3:5))`, `loc(callsite(...))`.
_FILE_LOCATION = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
# mlir-opt's expectation comments, e.g. `// expected-error @+1 {{has 2 arguments}}`.
_EXPECTED = re.compile(r"expected-(error|warning|note|remark) *(?:@([+-]\d+|above|below))? *\{\{(.*)\}\}\s*$")


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pygraph-opt",
        description="Run pygraph and MLIR passes on an .mlir file and print the result.",
    )
    parser.add_argument("input", nargs="?", default="-", help="the .mlir file to read ('-' or absent: stdin)")
    parser.add_argument(
        "-p",
        "--passes",
        default="",
        metavar="PIPELINE",
        help="comma-separated passes, each with optional {option=value ...}; names that are not pygraph "
        "passes go to MLIR's PassManager (canonicalize, func.func(cse)); absent: only parse and print",
    )
    parser.add_argument("-o", "--output", default="-", help="where to write the result (default: stdout)")
    parser.add_argument(
        "--print-ir-after-all", action="store_true", help="print the IR to stderr after every pass"
    )
    parser.add_argument(
        "--print-ir-after",
        action="append",
        default=[],
        metavar="NAME",
        help="print the IR after pass NAME (repeatable)",
    )
    parser.add_argument("--time-passes", action="store_true", help="print how long each pass took to stderr")
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"process the parts between '{SPLIT_MARKER}' lines one by one; print them separated the same way",
    )
    parser.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check the diagnostics against the input's expected-error/warning/note comments instead of printing them",
    )
    parser.add_argument(
        "--list-passes", action="store_true", help="list pygraph's passes and their options, then exit"
    )
    parser.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations in the output")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    if args.list_passes:
        print(describe_passes())
        return 0
    try:
        items = parse_pipeline(args.passes)
        check_pipeline(items, args.print_ir_after)
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
    except (ValueError, ImportError, OSError) as exc:
        print(f"pygraph-opt: error: {exc}", file=sys.stderr)
        return 1
    name = "<stdin>" if args.input == "-" else args.input

    outputs: list[str] = []
    failed = False
    for chunk in split_input(text) if args.split_input_file else [text]:
        instrumentation = Instrumentation(
            verify_each=knobs.verify >= 1,
            print_after_all=args.print_ir_after_all,
            print_after=set(args.print_ir_after),
            time_passes=args.time_passes,
            stream=sys.stderr,
        )
        try:
            output, diagnostics = process(chunk, items, instrumentation, args.mlir_print_debuginfo)
        except PipelineError as exc:
            print(exc, file=sys.stderr)
            return 1
        if args.verify_diagnostics:
            problems = check_diagnostics(chunk, diagnostics, name)
            failed = failed or bool(problems)
        else:
            problems = [f"{d.where(name)}: {d.severity}: {d.message}" for d in diagnostics]
            failed = failed or output is None
        for problem in problems:
            print(problem, file=sys.stderr)
        outputs.append(output or "")

    result = f"{SPLIT_MARKER}\n".join(outputs)
    if args.output == "-":
        sys.stdout.write(result)
    else:
        Path(args.output).write_text(result)
    return int(failed)


def check_pipeline(items: list[Pass | UpstreamPass], print_after: list[str]) -> None:
    """Rejects what would otherwise fail only after the input is parsed: MLIR passes that MLIR cannot
    parse and `--print-ir-after` names that are not in the pipeline (which would silently print nothing)."""
    with ir.Context():
        for item in items:
            if not isinstance(item, UpstreamPass):
                continue
            try:
                PassManager.parse(f"builtin.module({item.text})")
            except ValueError as exc:
                raise ValueError(
                    f"'{item.text}' is not a pygraph pass (see --list-passes) and MLIR cannot use it:\n"
                    f"{str(exc).strip()}"
                ) from None
    names = {item.name for item in items}
    for name in print_after:
        if name not in names:
            raise ValueError(f"--print-ir-after={name}: no pass in the pipeline is named '{name}'")


def split_input(text: str) -> list[str]:
    """The parts of `text` between `// -----` lines, each preceded by as many blank lines as came before
    it, so that the parser's line numbers (in locations and diagnostics) are the file's."""
    lines = text.splitlines(keepends=True)
    chunks, start = [], 0
    for i, line in enumerate(lines):
        if line.strip() == SPLIT_MARKER:
            chunks.append("\n" * start + "".join(lines[start:i]))
            start = i + 1
    chunks.append("\n" * start + "".join(lines[start:]))
    return chunks


@dataclasses.dataclass
class Diagnostic:
    """An MLIR diagnostic copied out of its context (MLIR's objects die with the handler's call)."""

    severity: str  # "error" | "warning" | "note" | "remark"
    message: str
    location: str  # the MLIR location, e.g. `loc("-":3:5)`
    file: str | None  # its first file location: "-" is the input (parsed from text); None: no file
    line: int = 0
    col: int = 0

    @staticmethod
    def from_mlir(diagnostic: Any) -> list[Diagnostic]:
        """An `ir.Diagnostic` or `ir.DiagnosticInfo`, followed by its notes."""
        location = str(diagnostic.location)
        severity = diagnostic.severity.name.lower()
        match = _FILE_LOCATION.search(location)
        if match is None:
            found = Diagnostic(severity, diagnostic.message, location, None)
        else:
            found = Diagnostic(severity, diagnostic.message, location, match[1], int(match[2]), int(match[3]))
        return [found] + [d for note in diagnostic.notes for d in Diagnostic.from_mlir(note)]

    def where(self, name: str) -> str:
        """`FILE:LINE:COL`, with `name` standing for the input."""
        if self.file is None:
            return self.location
        return f"{name if self.file == '-' else self.file}:{self.line}:{self.col}"


def process(
    text: str, items: list[Pass | UpstreamPass], instrumentation: Instrumentation, debug_info: bool = False
) -> tuple[str | None, list[Diagnostic]]:
    """Parses `text`, runs `items` on it and prints the module (pygraph ops always print in generic form).

    Returns the printed module (None when an error was reported) and the diagnostics. A pass that fails
    by raising anything but `PassError` is a bug: that raises `PipelineError`, whose message says how to
    reproduce it.
    """
    diagnostics: list[Diagnostic] = []

    def collect(diagnostic: ir.Diagnostic) -> bool:
        diagnostics.extend(Diagnostic.from_mlir(diagnostic))
        return True

    context = make_context()
    with context, context.attach_diagnostic_handler(collect):
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as exc:
            # The parser reports through the exception, not the handler.
            found = [d for info in exc.error_diagnostics for d in Diagnostic.from_mlir(info)]
            return None, found or [_unlocated_parse_error(text, exc)]
        try:
            run_pipeline(module, items, instrumentation)
        except PassError as exc:
            exc.emit()
        if any(d.severity == "error" for d in diagnostics):
            return None, diagnostics
        printed = print_module(module, debug_info=debug_info)
        return printed, diagnostics


def _unlocated_parse_error(text: str, exc: ir.MLIRError) -> Diagnostic:
    """MLIR sometimes fails without a diagnostic (IRDL ops written in custom form): blame the first line."""
    line = text[: len(text) - len(text.lstrip())].count("\n") + 1
    message = f"{exc} (no location given; pygraph ops parse only in generic form)"
    return Diagnostic("error", message, f'loc("-":{line}:1)', "-", line, 1)


@dataclasses.dataclass
class Expectation:
    """An `expected-<severity> {{message}}` comment: a diagnostic whose message contains `message` on `line`."""

    severity: str
    message: str
    line: int
    comment: tuple[int, int]  # line and column of the comment itself
    met: bool = False


def expectations(text: str) -> list[Expectation]:
    """The expectation comments in `text`. As in mlir-opt, `@+N`/`@-N` move the line, `@above` means the
    nearest line above that is not an expectation comment, `@below` the nearest such line below."""
    lines = text.splitlines()
    found: list[Expectation] = []
    waiting_for_line: list[Expectation] = []
    last_plain_line = 0
    for number, line in enumerate(lines, start=1):
        match = _EXPECTED.search(line)
        if match is None:
            for expectation in waiting_for_line:
                expectation.line = number
            waiting_for_line.clear()
            last_plain_line = number
            continue
        severity, offset, message = match.groups()
        expectation = Expectation(severity, message, number, (number, match.start() + 1))
        if offset == "above":
            expectation.line = last_plain_line
        elif offset == "below":
            expectation.line = len(lines) + 1  # unless a plain line follows
            waiting_for_line.append(expectation)
        elif offset:
            expectation.line = number + int(offset)
        found.append(expectation)
    return found


def check_diagnostics(text: str, diagnostics: list[Diagnostic], name: str) -> list[str]:
    """mlir-opt's complaints: each diagnostic that no expectation in `text` matches, then each
    expectation that no diagnostic met. Empty when they agree."""
    expected = expectations(text)
    problems = []
    for d in diagnostics:
        matching = [
            e
            for e in expected
            if d.file == "-" and e.line == d.line and e.severity == d.severity and e.message in d.message
        ]
        for e in matching:
            e.met = True
        if not matching:
            problems.append(f"{d.where(name)}: error: unexpected {d.severity}: {d.message}")
    for e in expected:
        if not e.met:
            line, col = e.comment
            problems.append(
                f'{name}:{line}:{col}: error: expected {e.severity} "{e.message}" was not produced'
            )
    return problems


def describe_passes() -> str:
    """`--list-passes`: each pass's name, summary and options (its dataclass fields)."""
    lines = ["pygraph passes (-p 'name{option=value ...}'):"]
    for name in pass_names():
        try:
            cls = get_pass(name)
        except ImportError as exc:
            lines.append(f"  {name} - cannot be loaded: {exc}")
            continue
        lines.append(f"  {name} - {summary(cls)}")
        for f in dataclasses.fields(cls):
            type_name = f.type if isinstance(f.type, str) else f.type.__name__
            lines.append(f"      {f.name.replace('_', '-')}: {type_name} = {_default(f)}")
    lines.append(
        "Other names are MLIR passes, run by its PassManager: canonicalize, cse, func.func(cse), ..."
    )
    return "\n".join(lines)


def summary(cls: type[Pass]) -> str:
    """The pass's `summary`, else its docstring's first line ('' when it has neither)."""
    if cls.summary:
        return cls.summary
    doc = (cls.__doc__ or "").strip()
    if doc.startswith(f"{cls.__name__}("):  # made up by @dataclass from the signature
        return ""
    return doc.splitlines()[0] if doc else ""


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return str(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return str(f.default_factory())
    return "(required)"


if __name__ == "__main__":
    sys.exit(main())

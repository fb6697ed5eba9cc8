"""Pass pipelines: parsing `-p 'a,b{opt=v}'`, running with verification, and reproducing failures.

MLIR's textual pipelines cannot name Python passes, so pygraph parses its own syntax: a comma-separated
list of pass names, each with optional `{key=value ...}` options. A name that is not a pygraph pass is
handed to MLIR's PassManager (e.g. `canonicalize`, `cse`).
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ..ir._mlir import PassManager, ir
from ..ir.context import print_module
from . import get_pass, pass_names
from .base import Pass, PassError

# Torch dialect (as imported) -> tensor-level pygraph IR (`.pygraph.mlir`).
TENSOR_PIPELINE = (
    "place-constants,hoist-host-copies,pad-selections,classify-ops,isolate-data-dependent,split-bias,prepare-attention-masks,"
    "move-scales,elide-clones,fuse-pointwise"
)
# Tensor-level pygraph IR -> the plan the backend executes (`.plan.mlir`).
PLAN_PIPELINE = "lower-to-plan,write-in-place,fuse-scatter-values,seed-random,parameter-indirection,out-form,row-phases,split-keys,form-segments,select-graphs,plan-memory,codegen-triton"


@dataclass
class UpstreamPass:
    """An MLIR pass run through the PassManager (textual pipeline element)."""

    text: str

    @property
    def name(self) -> str:
        return self.text.split("{")[0].split("(")[0]

    def run(self, module: ir.Module) -> None:
        with module.context:
            pm = PassManager.parse(f"builtin.module({self.text})")
            pm.run(module.operation)

    def spelling(self) -> str:
        return self.text


def parse_pipeline(text: str) -> list[Pass | UpstreamPass]:
    """`a,b{k=v k2=v2},func.func(cse)` -> pass objects; raises ValueError naming what is wrong."""
    items: list[Pass | UpstreamPass] = []
    for element in _split_top_level(text.strip()):
        name, options = _split_options(element)
        if name in pass_names():
            items.append(get_pass(name).from_options(options))
        elif name:
            items.append(UpstreamPass(element))
    return items


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if depth != 0:
        raise ValueError(f"unbalanced braces in pipeline '{text}'")
    if current.strip():
        parts.append(current.strip())
    return parts


def _split_options(element: str) -> tuple[str, dict[str, str]]:
    if "{" not in element or "(" in element.split("{")[0]:
        return element, {}
    name, rest = element.split("{", 1)
    if not rest.endswith("}"):
        raise ValueError(f"options of '{name}' must end with '}}': '{element}'")
    options = {}
    for item in rest[:-1].split():
        if "=" not in item:
            raise ValueError(f"option '{item}' of '{name}' must be key=value")
        key, value = item.split("=", 1)
        options[key] = value
    return name.strip(), options


def spelling(items: list[Pass | UpstreamPass]) -> str:
    return ",".join(item.spelling() for item in items)


@dataclass
class Instrumentation:
    """What a pipeline run prints besides its result (pygraph-opt's flags)."""

    verify_each: bool = True
    print_after_all: bool = False
    print_after: set[str] = field(default_factory=set)
    time_passes: bool = False
    stream: TextIO = sys.stderr
    timings: list[tuple[str, float]] = field(default_factory=list)


class PipelineError(Exception):
    """A pass failed; the message ends with the pygraph-opt command that reproduces it."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def run_pipeline(
    module: ir.Module,
    items: list[Pass | UpstreamPass],
    instrumentation: Instrumentation | None = None,
    verify: Callable[[ir.Module], None] | None = None,
) -> None:
    """Runs `items` in order; verifies after each (or only at the end) and reports failures with a repro."""
    inst = instrumentation or Instrumentation()
    _verify(module, verify, "the pipeline's input")
    for i, item in enumerate(items):
        # A copy, printed only if the pass fails: printing before every pass cost a tenth of the passes'
        # time (XLNet: 21 prints, 1.6 s; a copy takes a fiftieth of a print).
        before = module.operation.clone() if i == 0 or inst.verify_each else None
        start = time.perf_counter()
        try:
            item.run(module)
            if inst.verify_each or i == len(items) - 1:
                _verify(module, verify, f"pass '{item.name}'")
        except PassError:
            raise
        except Exception as exc:
            raise PipelineError(_failure_message(item, items[i:], before, exc), exc) from exc
        inst.timings.append((item.name, time.perf_counter() - start))
        if inst.print_after_all or item.name in inst.print_after:
            print(f"// -----// IR Dump After {item.name} //----- //", file=inst.stream)
            print(print_module(module), file=inst.stream)
    if inst.time_passes:
        total = sum(t for _, t in inst.timings) or 1e-9
        print(
            "===-------------------------------------------------------------------------===",
            file=inst.stream,
        )
        print("                         ... Pass execution timing report ...", file=inst.stream)
        for name, t in inst.timings:
            print(f"  {t * 1e3:9.2f} ms ({100 * t / total:5.1f}%)  {name}", file=inst.stream)
        print(f"  {total * 1e3:9.2f} ms (100.0%)  Total", file=inst.stream)


def _verify(module: ir.Module, verify: Callable[[ir.Module], None] | None, after: str) -> None:
    try:
        module.operation.verify()
        if verify is not None:
            verify(module)
    except ir.MLIRError as exc:
        raise VerificationError(f"IR does not verify after {after}:\n{exc}") from exc


class VerificationError(Exception):
    pass


def _failure_message(
    item: Pass | UpstreamPass,
    rest: list[Pass | UpstreamPass],
    before: ir.Operation | None,
    exc: BaseException,
) -> str:
    message = f"pass '{item.name}' failed: {type(exc).__name__}: {exc}"
    if before is None:
        return message + "\n(set PYGRAPH_VERIFY=1 to get a reproducer)"
    path = Path(tempfile.mkdtemp(prefix="pygraph-repro-")) / "input.mlir"
    path.write_text(print_module(before, debug_info=True))
    command = f"pygraph-opt {shlex.quote(str(path))} -p {shlex.quote(spelling(rest))} --print-ir-after-all"
    return f"{message}\nreproduce with:\n  {command}"

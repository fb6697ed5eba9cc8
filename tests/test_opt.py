"""`pygraph-opt` where lit is awkward: exit codes, imports, errors raised by passes, crash reports.

The lit tests of the driver are in `tests/filecheck/driver/`.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from pygraph import passes
from pygraph.ir._mlir import ir
from pygraph.passes.base import Pass, PassError, walk
from pygraph.passes.pipeline import Instrumentation, PipelineError
from pygraph.tools.opt import expectations, main, process, split_input

REPO = Path(__file__).resolve().parent.parent

PLAN = """\
"func.func"() <{function_type = (!pygraph.buf) -> (), sym_name = "main"}> ({
^bb0(%arg0: !pygraph.buf):
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [1], 0, f32>} : () -> !pygraph.buf
  "pygraph.kernel"(%arg0, %0) {access = ["r", "w"], grid = [1, 1, 1], kernel = @k, operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
  "func.return"() : () -> ()
}) : () -> ()
"""
KERNEL_LINE = 4  # of PLAN


@dataclass
class RejectKernels(Pass):
    """Rejects every pygraph.kernel, the way passes report what they cannot handle."""

    name = "test-reject-kernels"

    def run(self, module: ir.Module) -> None:
        kernels = [op for op in walk(module) if op.operation.name == "pygraph.kernel"]
        if kernels:
            raise PassError([(op.location, "kernels are not allowed here") for op in kernels])


@dataclass
class Crash(Pass):
    """Fails the way a buggy pass does."""

    name = "test-crash"

    def run(self, module: ir.Module) -> None:
        raise RuntimeError("boom")


@dataclass
class WithOptions(Pass):
    """Has an option of each type.

    Only the first line of this docstring is its summary.
    """

    name = "test-options"
    size: int = 8
    scale: float = 0.5
    exact: bool = False
    mode: str = "fast"

    def run(self, module: ir.Module) -> None:
        pass


@pytest.fixture(autouse=True)
def test_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Registers this file's passes for the test, and keeps crash reproducers in `tmp_path`."""
    for cls in (RejectKernels, Crash, WithOptions):
        monkeypatch.setitem(passes._REGISTRY, cls.name, f"{__name__}:{cls.__name__}")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.mlir"
    path.write_text(PLAN)
    return path


def test_imports_no_torch(plan_file: Path) -> None:
    code = (
        "import sys\n"
        "from pygraph.tools.opt import main\n"
        "assert main(['--list-passes']) == 0\n"
        f"assert main([{str(plan_file)!r}, '-p', 'canonicalize,cse']) == 0\n"
        "sys.exit('torch' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env={"PYTHONPATH": str(REPO)}, capture_output=True, text=True
    )
    assert result.returncode == 0, f"pygraph-opt imported torch (or failed):\n{result.stderr}"


def test_round_trip_prints_custom_form_with_generic_pygraph_ops(
    plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(plan_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("module {\n  func.func @main(")
    assert '"pygraph.kernel"(%arg0, %0)' in out


def test_reads_stdin_and_writes_output_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(PLAN))
    out = tmp_path / "out.mlir"
    assert main(["-", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert '"pygraph.alloc"()' in out.read_text()


def test_debuginfo_locations_are_lines_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "two.mlir"
    path.write_text(f"{PLAN}// -----\n{PLAN}")
    assert main([str(path), "--split-input-file", "--mlir-print-debuginfo"]) == 0
    second = capsys.readouterr().out.split("// -----\n")[1]
    assert f'loc("-":{KERNEL_LINE + PLAN.count(chr(10)) + 1}:3)' in second


def test_errors_are_printed_with_file_line_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(PLAN.replace('access = ["r", "w"]', 'access = ["r"]'))
    assert main([str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err
        == f"{path}:{KERNEL_LINE}:3: error: 'pygraph.kernel' op has 2 arguments but 1 access modes\n"
    )


def test_custom_form_of_a_pygraph_op_gets_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "custom.mlir"
    path.write_text("\n%0 = pygraph.alloc : !pygraph.buf\n")
    assert main([str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:2:1: error: Unable to parse module assembly")


def test_pass_error_becomes_a_diagnostic(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(plan_file), "-p", "test-reject-kernels"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{plan_file}:{KERNEL_LINE}:3: error: kernels are not allowed here\n"


def test_pass_error_meets_expectations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "expect.mlir"
    lines = PLAN.splitlines(keepends=True)
    lines.insert(KERNEL_LINE - 1, "  // expected-error @+1 {{not allowed}}\n")
    path.write_text("".join(lines))
    assert main([str(path), "-p", "test-reject-kernels", "--verify-diagnostics"]) == 0
    assert capsys.readouterr().err == ""

    assert main([str(path), "--verify-diagnostics"]) == 1
    assert (
        capsys.readouterr().err
        == f'{path}:{KERNEL_LINE}:6: error: expected error "not allowed" was not produced\n'
    )


def test_crashing_pass_raises_with_a_reproducer(tmp_path: Path) -> None:
    with pytest.raises(PipelineError) as caught:
        process(PLAN, [WithOptions(size=2), Crash()], Instrumentation())
    message = str(caught.value)
    assert message.startswith("pass 'test-crash' failed: RuntimeError: boom\nreproduce with:\n  pygraph-opt ")
    assert message.endswith(" -p test-crash --print-ir-after-all")
    repro = Path(message.split()[-4])
    assert repro.parent.parent == tmp_path
    assert '"pygraph.kernel"' in repro.read_text()


def test_crash_exits_1_with_the_reproducer(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(plan_file), "-p", "test-options{size=2},test-crash"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "pass 'test-crash' failed: RuntimeError: boom" in captured.err
    assert "-p test-crash --print-ir-after-all" in captured.err


def test_list_passes_shows_summaries_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    assert (
        "  test-options - Has an option of each type.\n"
        "      size: int = 8\n"
        "      scale: float = 0.5\n"
        "      exact: bool = False\n"
        "      mode: str = fast\n"
    ) in out
    assert "  test-crash - Fails the way a buggy pass does.\n" in out


def test_bad_option_of_a_pygraph_pass(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(plan_file), "-p", "test-options{size=big}"]) == 1
    assert capsys.readouterr().err == (
        "pygraph-opt: error: option 'size' of pass 'test-options' expects int, got 'big'\n"
    )
    assert main([str(plan_file), "-p", "test-options{colour=red}"]) == 1
    assert "pass 'test-options' has no option 'colour'" in capsys.readouterr().err


def test_split_input_keeps_line_numbers() -> None:
    chunks = split_input("a\n// -----\nb\nc\n  // -----  \nd")
    assert chunks == ["a\n", "\n\nb\nc\n", "\n\n\n\n\nd"]


def test_expectation_forms() -> None:
    text = (
        "op1\n"  # 1
        "// expected-error {{same line}}\n"  # 2
        "// expected-warning @+2 {{two down}}\n"  # 3
        "// expected-note @-3 {{three up}}\n"  # 4
        "// expected-error @above {{above}}\n"  # 5
        "// expected-error @below {{below}}\n"  # 6
        "op7\n"  # 7
        "// expected-error @below {{dangling}}\n"  # 8
    )
    found = [(e.severity, e.message, e.line) for e in expectations(text)]
    assert found == [
        ("error", "same line", 2),
        ("warning", "two down", 5),
        ("note", "three up", 1),
        ("error", "above", 1),
        ("error", "below", 7),
        ("error", "dangling", 9),
    ]

"""Branches on data: export a model that decides in Python from a value of its data, for the way its example
inputs take, with a check that each call's data take it too.

`if x.sum() > 0:` or `if n.item() > 3:` makes torch.export fail (GuardOnDataDependentSymNode): one traced
program cannot follow both ways. `torch.export.draft_export` traces with the example's real values instead,
keeps the way they take and inserts `_assert_scalar` checks of each condition (torch 2.13; torch 2.11 checks
numbers read but no boolean condition, so pygraph adds those, with the way the exported program takes on the
example, `_check_conditions`). pygraph runs the checks between graphs (`isolate-data-dependent`: the condition is read back to the host, as reduce-overhead's
graph break would), so a call whose data take the other way raises `pygraph.AssumptionFailed`, naming the
line, instead of returning the traced way's result; the compiled model then runs that call again with a
program traced from it (`CompiledModel._another_way`). Any other problem draft export reports (a constraint
on a declared dim violated, a custom op's fake kernel disagreeing with its real one) is an error.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import re
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sympy
import torch
from torch._subclasses import fake_utils, meta_utils
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch._subclasses.fake_utils import MetadataMismatchError
from torch.export._draft_export import FailureType
from torch.export.graph_signature import InputKind, TensorArgument
from torch.fx.experimental.symbolic_shapes import compute_unbacked_bindings
from torch.nn.attention import SDPBackend, sdpa_kernel

from .connectives import connectives_as_arithmetic
from .numbers import numbers_beside_tensors, numbers_on_host, numbers_promoted_as_python
from .rewrite import written_placeholders

_CHECK = torch.ops.aten._assert_scalar.default
_DEFER = torch.ops.aten._assert_async.msg
_DEFERRED = "pygraph: the example's value was "
_NEGATIONS = {
    operator.eq: operator.ne,
    operator.ne: operator.eq,
    operator.lt: operator.ge,
    operator.ge: operator.lt,
    operator.gt: operator.le,
    operator.le: operator.gt,
}
READS_DATA = {torch.ops.aten.item.default, torch.ops.aten._local_scalar_dense.default}
_EXPRESSION = re.compile(r"Runtime assertion failed for expression (.+) on node '[^']*'$")
_UNBACKED = re.compile(r"\bu\d+\b")  # a size or number the data decide, as torch names it
_FRAME = re.compile(
    r'File "([^"]+)", line (\d+)(?:, in \S+\n(?![ \t]*File ")[ \t]*(.*))?|Caused by: \(([^():]+):(\d+) in '
)
_TORCH = Path(torch.__file__).parent
_PACKAGE = str(Path(__file__).parents[1])
# the loggers draft export and its real-value propagation warn through, for each branch
_LOUD = ("torch.export._draft_export", "torch.fx.experimental.symbolic_shapes")


def draft_export(
    model: torch.nn.Module, inputs: tuple, numbers: tuple[torch.Tensor, ...], dynamic_shapes: Any, warn: bool
) -> torch.export.ExportedProgram:
    """`torch.export.draft_export` of `model`, each branch on data taking the way `inputs` take, with a
    warning naming those branches where `warn`; raises ValueError for any other problem the draft found.
    `numbers`: the leaves of `inputs` that are lifted Python numbers (traced beside the model's tensors,
    `numbers_beside_tensors`)."""
    traced = numbers_beside_tensors(model, inputs, numbers)
    # The math backend computes attention's real values: torch 2.11's propagation fails on CUDA's flash and
    # efficient attention in half precision, whose outputs it does not need come back as None
    # (`_has_storage(None)`). The program keeps `scaled_dot_product_attention` whichever backend ran.
    with (
        _real_parameter_values(),
        _signbit_meta_as_bool(),
        _offsets_compared_without_guards(),
        _unbind_as_selects(),
        _real_values_strided_as_fakes(),
        sdpa_kernel([SDPBackend.MATH]),
        numbers_promoted_as_python(model, inputs, numbers),
    ):
        program = torch.export.draft_export(model, traced, dynamic_shapes=dynamic_shapes, strict=False)
    failures = program._report.failures
    other = [f for f in failures if not _taken_or_torchs_own(f)]
    if other:
        raise ValueError("; ".join(_described(f) for f in other))
    _check_conditions(program.graph, _example_reads(program, traced))
    _check_float_bounds(program.graph)
    for node in program.graph.find_nodes(op="placeholder"):  # decomposing traces again: with fakes only
        if isinstance(node.meta.get("val"), FakeTensor):
            node.meta["val"].fake_mode.propagate_real_tensors = False
    if traced is not inputs:
        numbers_on_host(program, traced, inputs)
    if not warn:
        return program
    graph = program.graph
    deferred = [d for d in graph.find_nodes(op="call_function", target=_DEFER) if _deferred(d)]
    taken = sorted(
        {_where(check, read) for check, read in _checks_on_data(graph)} | {_where(d, d) for d in deferred}
    ) or sorted(  # (no check reads a value: the trace fixed a size the data decide, `for u in x.unique()`)
        {_where(check, check) for check in _checks_on_sizes(graph)} or {"a line torch does not name"}
    )
    warnings.warn(
        f"{type(model).__name__} decides in Python from values of its data at {'; '.join(taken)}: pygraph "
        "compiled the way the example inputs take there and checks each call's data on the host; a call "
        "that takes another way is traced and compiled again. Computing both ways and choosing with "
        "torch.where keeps the whole model in graphs",
        stacklevel=_outside_pygraph(),
    )
    return program


@contextlib.contextmanager
def _real_parameter_values() -> Iterator[None]:
    """Draft export's fake tensors carry real values copied from the model's tensors, but torch (2.11, 2.13)
    copies only from tensors of type exactly `torch.Tensor` (`meta_utils._safe_copy`, `_safe_clone`): a
    parameter's fake tensor got uninitialized memory, and a condition on a value computed from parameters
    (`if self.fc(x).sum() > 0:`) took a random way. Here a parameter is copied through a plain tensor
    sharing its storage."""
    copy, clone = getattr(meta_utils, "_safe_copy", None), getattr(meta_utils, "_safe_clone", None)
    if copy is None or clone is None:  # another torch: nothing to work around here
        yield
        return

    def plain(t: Any) -> Any:
        return t.detach() if isinstance(t, torch.nn.Parameter) else t

    meta_utils._safe_copy = lambda dst, src: copy(dst, plain(src))
    meta_utils._safe_clone = lambda src: clone(plain(src))
    try:
        yield
    finally:
        meta_utils._safe_copy, meta_utils._safe_clone = copy, clone


@contextlib.contextmanager
def _signbit_meta_as_bool() -> Iterator[None]:
    """torch's (2.11, 2.13) meta of `prims.signbit` gives its operand's dtype where the kernel gives bool.
    Fake tensors of symbolic sizes meet it through the Python decompositions of floor division and
    `copysign`, and draft export's real values then disagree with the fake: torch infers a fake kernel of
    unbacked sizes whose symbols no output binds, and export fails (PendingUnbackedSymbolNotFound) on
    `x // 2` with a dim declared dynamic. Here the meta gives bool while draft export runs; the traced
    program is unchanged (it holds the floor division, not its decomposition)."""
    signbit = torch.ops.prims.signbit.default
    meta = getattr(signbit, "prim_meta_impl", None)
    if meta is None or meta(torch.empty(0, device="meta")).dtype == torch.bool:  # nothing to work around
        yield
        return
    signbit.prim_meta_impl = lambda a: meta(a).to(torch.bool)
    try:
        yield
    finally:
        signbit.prim_meta_impl = meta


@contextlib.contextmanager
def _offsets_compared_without_guards() -> Iterator[None]:
    """Draft export checks each op's fake output against the real one, and torch (2.11, 2.13) compares the
    storage offsets with `!=`, which guards where the fake offset is symbolic. A boolean mask's index
    (`x[x > 0]` of a 2-d x) selects the columns of `nonzero`'s result, the second at offset u0, the count;
    the guard `Ne(u0, 14)` evaluated on the real count fixed u0 to the example's, and export failed
    (PendingUnbackedSymbolNotFound) on every model that branches on data and indexes with a mask. Here a
    symbolic offset is compared as torch compares symbolic sizes there: from the known values, with no
    guard."""
    check = fake_utils._check_fake_real_tensors

    def checked(
        real: torch.Tensor,
        fake: FakeTensor,
        context: str = "",
        sizes: bool = True,
        strides: bool = False,
        storage_offset: bool = True,
        requires_grad: bool = True,
    ) -> None:
        offset = fake.storage_offset()
        if not isinstance(offset, torch.SymInt) or not torch._C._has_storage(real):
            check(real, fake, context, sizes, strides, storage_offset, requires_grad)
            return
        if requires_grad and real.requires_grad != fake.requires_grad:
            raise MetadataMismatchError(f"{context} mismatched requires_grad-ness of outputs")
        shape_env = offset.node.shape_env
        known = shape_env.backed_var_to_val.keys() | shape_env.real_tensor_prop_unbacked_vals.keys()
        if offset.node.expr.free_symbols <= known:
            same = shape_env._maybe_evaluate_static(
                sympy.Eq(offset.node.expr, real.storage_offset()), compute_hint=True
            )
            if same is not sympy.true:
                raise MetadataMismatchError(f"{context} mismatched storage offset")
        torch._prims.utils.compare_tensor_meta(
            real, fake, check_sizes=sizes, check_strides=strides, allow_rhs_unbacked=True
        )

    fake_utils._check_fake_real_tensors = checked
    try:
        yield
    finally:
        fake_utils._check_fake_real_tensors = check


@contextlib.contextmanager
def _real_values_strided_as_fakes() -> Iterator[None]:
    """Draft export runs each op on fake and real tensors side by side, and composites (`matmul`, `reshape`)
    decompose on the fake's strides: where torch's (2.11, 2.13) fake kernel gives other strides than the
    real one (`copysign` of a transposed tensor: contiguous fake, real in the operand's layout), the
    decomposition chose a `view` that the real tensor cannot take, and export failed. Here a new real
    value (no view, sharing no operand's storage) whose fake has concrete, dense strides is copied into
    those strides."""
    dispatch = FakeTensorMode._dispatch_impl

    def dispatched(mode: FakeTensorMode, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        out = dispatch(mode, func, types, args, kwargs)
        if not mode.propagate_real_tensors:
            return out
        operands = {
            t.real_tensor.untyped_storage().data_ptr()
            for t in torch.utils._pytree.tree_leaves((args, kwargs))
            if isinstance(t, FakeTensor)
            and t.real_tensor is not None
            and torch._C._has_storage(t.real_tensor)
        }
        for fake in torch.utils._pytree.tree_leaves(out):
            real = getattr(fake, "real_tensor", None) if isinstance(fake, FakeTensor) else None
            if (
                real is None
                or not torch._C._has_storage(real)
                or real.untyped_storage().data_ptr() in operands
                or real._is_view()
                or not all(isinstance(s, int) for s in (*fake.shape, *fake.stride(), fake.storage_offset()))
                or real.stride() == fake.stride()
                or fake.storage_offset() != 0
                or not _dense(fake.shape, fake.stride())
            ):
                continue
            restrided = torch.empty_strided(fake.shape, fake.stride(), dtype=real.dtype, device=real.device)
            fake.real_tensor = restrided.copy_(real)
        return out

    FakeTensorMode._dispatch_impl = dispatched
    try:
        yield
    finally:
        FakeTensorMode._dispatch_impl = dispatch


def _dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether a tensor of these sizes and strides covers its bytes once each, in some order of its dims."""
    expected = 1
    for size, stride in sorted(
        ((n, s) for n, s in zip(shape, strides, strict=True) if n != 1), key=lambda d: d[1]
    ):
        if stride != expected:
            return False
        expected *= size
    return True


@contextlib.contextmanager
def _unbind_as_selects() -> Iterator[None]:
    """torch's (2.11, 2.13) decomposition of `unbind`, which fake tensors of symbolic sizes take, splits and
    then squeezes each piece, and the squeeze keeps a dim of unbacked size that a guard fixed to 1: a
    loop over the one value of `x.unique()` (`for u in x.unique():`) got a piece of shape [u0] instead of
    a number, broadcasting it against x refined u0 to x's size, and export failed on its own check
    (`Eq(u0, 1)`). Here each piece is a `select`, as `unbind` is defined; the traced program still holds
    `unbind` (its getitems become selects later, `unbinds_as_selects`)."""
    table = torch._decomp.decomposition_table
    overload = torch.ops.aten.unbind.int
    decomposition = table.get(overload)
    if decomposition is None:  # another torch: nothing to work around here
        yield
        return

    def unbind(t: torch.Tensor, dim: int = 0) -> tuple[torch.Tensor, ...]:
        count = t.shape[dim]
        if not isinstance(count, torch.SymInt):
            return decomposition(t, dim)
        return tuple(t.select(dim, i) for i in range(int(count)))

    table[overload] = unbind
    try:
        yield
    finally:
        table[overload] = decomposition


def _check_conditions(graph: torch.fx.Graph, example: dict[str, int]) -> None:
    """Adds the check draft export leaves out (torch 2.11) for a value read from the data that the trace
    fixed: a condition (`if x.mean() > 0:` is `bool(t.item())`) must be what it was for the example, and
    so must a number read (`n.item()`) that a guard fixed. `example`: each read's value for the example
    inputs, by node name."""
    checked = {read for _, read in _checks_on_data(graph)}
    for read in list(graph.find_nodes(op="call_function", target=torch.ops.aten.item.default)):
        value = read.meta.get("val")
        if read in checked or not isinstance(value, torch.SymBool | torch.SymInt):
            continue
        expression = value.node.expr
        fixed = expression.is_number or expression in (sympy.true, sympy.false)
        if fixed or isinstance(value, torch.SymBool):  # a number the trace left free is a size or a value
            _check_read(graph, read, example[read.name])


def _check_float_bounds(graph: torch.fx.Graph) -> None:
    """Adds the checks torch (2.13) drops for a number read as a float (`s = x.sum().item()`) that a
    condition bounded by a constant (`min(s, 0.25)` for an example where s <= 0.25, `if s <= 1:`): its
    `insert_deferred_runtime_asserts` leaves such single-symbol bounds to the symbol's value range, and
    refines that range for ints only, so the trace's way went unchecked and other calls got its result."""
    present = {str(check.args[1]) for check in graph.find_nodes(op="call_function", target=_CHECK)}
    for read in list(graph.find_nodes(op="call_function", target=torch.ops.aten.item.default)):
        value = read.meta.get("val")
        if not isinstance(value, torch.SymFloat) or not isinstance(value.node.expr, sympy.Symbol):
            continue
        symbol, anchor = value.node.expr, read
        for assertion in value.node.shape_env.deferred_runtime_asserts.get(symbol, []):
            expression = assertion.expr
            compare = _BOUNDS.get(expression.func)
            if compare is None or expression.free_symbols != {symbol} or len(expression.args) != 2:
                continue
            if any(f"expression {expression} on node" in message for message in present):
                continue
            operands = [read if a == symbol else float(a) for a in expression.args]
            with graph.inserting_after(anchor):
                holds = graph.call_function(compare, tuple(operands))
            with graph.inserting_after(holds):
                check = graph.call_function(
                    _CHECK,
                    (holds, f"Runtime assertion failed for expression {expression} on node '{holds.name}'"),
                )
            values = [value if a is read else a for a in operands]
            holds.meta = {"val": compare(*values), "stack_trace": read.meta.get("stack_trace")}
            check.meta = {"stack_trace": read.meta.get("stack_trace")}
            anchor = check


_BOUNDS = {sympy.LessThan: operator.le, sympy.GreaterThan: operator.ge}


def _example_reads(program: torch.export.ExportedProgram, inputs: tuple) -> dict[str, int | float]:
    """The value of each `.item()` of `program` for `inputs` (booleans as 0 or 1; floats as they are, inf and
    NaN among them), by node name: its graph
    run once on the real tensors (copies of those it may write in place, so that the model's state and the
    inputs stay as they were; the random generators are restored; torch's checks are skipped). Draft
    export's record of the way each condition took is keyed by expressions that torch 2.11 rewrites, and in
    half precision the model (which draft export runs) and its exported program may round a condition
    differently: the program's own values are the ones its checks will read."""
    user = iter(leaf for leaf in torch.utils._pytree.tree_leaves(inputs) if isinstance(leaf, torch.Tensor))
    args = [
        (next(user) if isinstance(spec.arg, TensorArgument) else spec.arg.value)
        if spec.kind == InputKind.USER_INPUT
        else program.state_dict.get(spec.target, program.constants.get(spec.target))
        for spec in program.graph_signature.input_specs
    ]
    # Copies of what the run may write: every buffer, constant and input (ops such as `aten.batch_norm`
    # write the running statistics without saying so in their schema), and the parameters an op's schema
    # says it writes; a parameter written anyway is an error, not a silent change of the model.
    written = written_placeholders(program.graph)
    placeholders = program.graph.find_nodes(op="placeholder")
    kinds = [spec.kind for spec in program.graph_signature.input_specs]
    kept = {
        i: (a, a._version)
        for i, (p, a, kind) in enumerate(zip(placeholders, args, kinds, strict=True))
        if isinstance(a, torch.Tensor) and kind == InputKind.PARAMETER and p not in written
    }
    args = [a if i in kept or not isinstance(a, torch.Tensor) else a.clone() for i, a in enumerate(args)]
    reads: dict[str, int | float] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            if node.target is _CHECK:  # the program's way, where it differs from the model's (half precision)
                return None
            result = super().run_node(node)
            if node.target in READS_DATA:
                reads[node.name] = result if isinstance(result, float) else int(result)
            return result

    devices = sorted({a.device.index or 0 for a in args if isinstance(a, torch.Tensor) and a.is_cuda})
    with torch.no_grad(), torch.random.fork_rng(devices):  # (its random ops draw nothing from the model's)
        Recorder(program.graph_module).run(*args)
    changed = [program.graph_signature.input_specs[i].target for i, (a, v) in kept.items() if a._version != v]
    if changed:
        raise ValueError(f"the exported program writes parameters in place ({', '.join(changed)})")
    return reads


def _check_read(graph: torch.fx.Graph, read: torch.fx.Node, example: int) -> None:
    """Checks that `read` (`t.item()`) is `example` in each call: as `_assert_async(t == example)` while
    the program is decomposed (a check of a number would be evaluated when tracing again, at the value the
    trace knows), as a check of the number read after (`_read_deferred_check`)."""
    (tensor,) = read.args
    with graph.inserting_after(read):
        holds = graph.call_function(torch.ops.aten.eq.Scalar, (tensor, example))
    with graph.inserting_after(holds):
        check = graph.call_function(_DEFER, (holds, f"{_DEFERRED}{example}"))
    trace = read.meta.get("stack_trace")
    holds.meta = {"val": tensor.meta["val"].to(torch.bool), "stack_trace": trace}
    check.meta = {"stack_trace": trace}
    if not read.users:
        graph.erase_node(read)


def _deferred(node: torch.fx.Node) -> bool:
    return str(node.args[1]).startswith(_DEFERRED)


def _read_deferred_check(graph: torch.fx.Graph, deferred: torch.fx.Node) -> None:
    """`_assert_async(t == n)` of `_check_read` as `t.to(int64).item() == 1`, checked on the host."""
    holds, message = deferred.args
    shape_env = holds.meta["val"].fake_mode.shape_env
    symbol = shape_env.create_unbacked_symint()
    trace = deferred.meta.get("stack_trace")
    number = _read_integer(graph, holds, deferred, symbol)
    # bound to the read, as a propagation binds each symbol it creates: one left pending fails the next
    number.meta["unbacked_bindings"] = compute_unbacked_bindings(shape_env, symbol)
    with graph.inserting_before(deferred):
        truth = graph.call_function(operator.eq, (number, 1))
        check = graph.call_function(
            _CHECK, (truth, f"Runtime assertion failed for expression == {message[len(_DEFERRED) :]}")
        )
    truth.meta = {"val": symbol == 1, "stack_trace": trace}
    check.meta = {"stack_trace": trace}
    graph.erase_node(deferred)


def _read_integer(
    graph: torch.fx.Graph, flag: torch.fx.Node, before: torch.fx.Node, value: Any
) -> torch.fx.Node:
    """`flag.to(int64).item()` before `before` (whose source line it takes), its value `value`: torch-mlir
    imports no boolean read from the data, nor the `sym_ite` and `sym_not` that draft export makes of one."""
    trace = before.meta.get("stack_trace")
    with graph.inserting_before(before):
        as_int = graph.call_function(torch.ops.aten._to_copy.default, (flag,), {"dtype": torch.int64})
        number = graph.call_function(torch.ops.aten.item.default, (as_int,))
    as_int.meta = {"val": flag.meta["val"].to(torch.int64), "stack_trace": trace}
    number.meta = {"val": value, "stack_trace": trace}
    return number


def _described(failure: Any) -> str:
    """A draft export failure as torch.export would say it: a guard that fixes a dim declared dynamic is
    its "Constraints violated", at the model's line; anything else as draft export reports it."""
    data = failure.data
    if failure.failure_type != FailureType.GUARD_ADDED or data.get("prefix") != "eval":
        return f"{failure.failure_type.name}: {data}"
    files = {index: name for name, index in getattr(torch._logging.structured, "INTERN_TABLE", {}).items()}
    frames = [  # (the innermost frames of the trace, pygraph's and torch's among them)
        frame
        for frame in data.get("user_stack") or []
        if not files.get(frame.get("filename"), _PACKAGE).startswith((str(_TORCH), _PACKAGE))
    ]
    line = f" at `{frames[-1]['loc']}`" if frames else ""
    sources = ", ".join(
        f"{symbol} is {source}" for symbol, source in data.get("symbol_to_sources", {}).items()
    )
    return (
        f"Constraints violated: the model requires {data['expr']} ({sources}){line}, so a dim declared dynamic "
        "cannot take other sizes; declare it static or give it the range that holds"
    )


def _taken_or_torchs_own(failure: Any) -> bool:
    """A draft export failure that leaves the program sound: a branch taken the example's way (a check of it
    in the program), or a fake
    kernel of torch's own whose result disagrees with the real one in metadata the program does not use
    (torch 2.11's CUDA efficient attention: its random seed on the CPU, where the real one is on the GPU)."""
    kind = failure.failure_type
    if kind == FailureType.DATA_DEPENDENT_ERROR:
        return True
    if kind == FailureType.GUARD_ADDED and failure.data.get("prefix") == "runtime_assert":
        return True  # (the same, reported so where dims are declared dynamic: checked in the program)
    return kind == FailureType.MISMATCHED_FAKE_KERNEL and str(failure.data.get("op", "")).startswith("aten.")


def check_branches(program: torch.export.ExportedProgram) -> None:
    """Makes the decomposed `program`'s checks on values of its data importable and their failures
    readable: a boolean `b = t.item()` that the program uses (torch 2.11's; torch-mlir imports no boolean
    `item`) is the item of `t` as an integer, which draft export's `sym_ite(b, 1, 0)` is, and `i == 1`
    elsewhere (a returned one stays: `outputs.numbers_as_tensors` returns `t`); each check on data names
    the line of the model it guards."""
    graph = program.graph
    for deferred in list(graph.find_nodes(op="call_function", target=_DEFER)):
        if _deferred(deferred):
            _read_deferred_check(graph, deferred)
    flags = [
        _integer_condition(graph, read)
        for read in list(graph.find_nodes(op="call_function", target=torch.ops.aten.item.default))
        if isinstance(read.meta.get("val"), torch.SymBool) and any(u.op != "output" for u in read.users)
    ]
    for node in list(graph.find_nodes(op="call_function", target=torch.sym_not)):
        _negate(graph, node)
    _drop_needless_checks(graph, flags)
    connectives_as_arithmetic(graph)
    for check, read in _checks_on_data(graph):
        condition, message = check.args
        match = _EXPRESSION.match(message)
        assumed = match.group(1) if match else message
        check.args = (
            condition,
            f"{_where(check, read)}: this call's data break what the compiled program assumed there "
            f"({assumed}): the example inputs took one way through a condition on their values, or a "
            "torch._check failed",
        )
    graph.lint()
    program.graph_module.recompile()


def _integer_condition(graph: torch.fx.Graph, read: torch.fx.Node) -> torch.fx.Node:
    """Reads the boolean 0-d tensor `t` of `read = t.item()` as an integer `i = t.to(int64).item()`, which
    it returns: draft export's `sym_ite(read, 1, 0)` is `i`, any other use of `read` reads `i == 1`."""
    (flag,) = read.args
    number = _read_integer(graph, flag, read, torch.sym_ite(read.meta["val"], 1, 0))
    with graph.inserting_before(read):
        truth = graph.call_function(operator.eq, (number, 1))
    truth.meta = {"val": read.meta["val"], "stack_trace": read.meta.get("stack_trace")}
    for user in list(read.users):
        if user.target is torch.sym_ite and user.args[1:] == (1, 0):
            number.meta["val"] = user.meta["val"]
            user.replace_all_uses_with(number)
            graph.erase_node(user)
    read.replace_all_uses_with(truth)
    graph.erase_node(read)
    if not truth.users:
        graph.erase_node(truth)
    return number


def _negate(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """`sym_not(a < b)` (torch-mlir imports no `sym_not`) as `a >= b`, and so on for each comparison."""
    (condition,) = node.args
    negation = _NEGATIONS.get(getattr(condition, "target", None))
    if negation is None:
        raise NotImplementedError(f"{_where(node, node)}: `not` of {condition} on data is not supported")
    with graph.inserting_before(node):
        negated = graph.call_function(negation, condition.args)
    negated.meta = dict(node.meta)
    node.replace_all_uses_with(negated)
    graph.erase_node(node)


def _drop_needless_checks(graph: torch.fx.Graph, flags: list[torch.fx.Node]) -> None:
    """Erases the checks that cannot fail, `0 <= f` and `f <= 1` of a boolean read as an integer (draft
    export adds them for the range of `sym_ite`) and those whose condition the trace knows is true (torch
    2.11's decomposing adds `u0 >= 5` of a size that a check `u0 == 5` before it fixed: a constant, which
    the importer cannot import), those every size meets (`Eq(u0, 0) | (u0 > 0)`, which a reshape with -1
    of u0 rows makes: the importer has no `or_`), and the repeats of a check (decomposing re-inserts
    export's checks)."""
    seen = {(operator.ge, (f, 0)) for f in flags} | {(operator.le, (f, 1)) for f in flags}
    for check in list(graph.find_nodes(op="call_function", target=_CHECK)):
        condition = check.args[0]
        if not isinstance(condition, torch.fx.Node):
            continue
        key = (condition.target, condition.args)
        if (
            key in seen
            or condition.meta.get("val") is True
            or _holds_for_every_size(condition.meta.get("val"))
        ):
            graph.erase_node(check)
            if not condition.users:
                graph.erase_node(condition)
        seen.add(key)


def _holds_for_every_size(value: Any) -> bool:
    """Whether `value` is a condition on one size the data decide that every size (0, 1, ...) meets; the
    size's range in the trace is not asked, as the checks themselves narrowed it."""
    if not isinstance(value, torch.SymBool):
        return False
    expression = value.node.expr
    if len(expression.free_symbols) != 1 or not expression.free_symbols <= value.node.shape_env.size_like:
        return False
    try:
        return sympy.S.Naturals0.is_subset(expression.as_set()) is True
    # (not a condition sympy solves in one variable; `Eq(u0, 1) | Eq(Min(32, u0), u0)` recurses past the limit)
    except (NotImplementedError, TypeError, ValueError, RecursionError):
        return False


def _checks_on_data(graph: torch.fx.Graph) -> Iterator[tuple[torch.fx.Node, torch.fx.Node]]:
    """Each `_assert_scalar` on a value read from the data, with the `.item()` nearest to it."""
    for check in graph.find_nodes(op="call_function", target=_CHECK):
        seen, todo = set(), [check]
        while todo:
            current = todo.pop(0)
            sources = [s for s in current.all_input_nodes if s not in seen]
            read = next((s for s in sources if s.target in READS_DATA), None)
            if read is not None:
                yield check, read
                break
            seen.update(sources)
            todo.extend(sources)


def _checks_on_sizes(graph: torch.fx.Graph) -> Iterator[torch.fx.Node]:
    """Each `_assert_scalar` on a size the data decide (`unique`'s, `nonzero`'s count)."""
    for check in graph.find_nodes(op="call_function", target=_CHECK):
        said = _EXPRESSION.match(str(check.args[1]))
        if said and _UNBACKED.search(said.group(1)):
            yield check


def _where(check: torch.fx.Node, read: torch.fx.Node) -> str:
    """`file:line (`code`)` of the model's line that made `check`, or else that read the value."""
    return _line(check) or _line(read) or "a line torch does not name"


def _line(node: torch.fx.Node) -> str | None:
    """`file:line (code)` of the innermost frame of `node`'s stack trace outside torch."""
    frames = user_frames(node.meta.get("stack_trace") or "")
    if not frames:
        return None
    path, line, code = frames[-1]
    return f"{path}:{line} (`{code}`)"


def user_frames(text: str) -> list[tuple[str, str, str]]:
    """(file, line, code) of each frame outside torch that `text` quotes, innermost last: a stack trace
    (`File "...", line N, in f` and its code), or torch's "Caused by" frame of an export error (relative
    to site-packages, no code)."""
    frames = []
    for path, line, code, short, short_line in _FRAME.findall(text):
        if path and "/torch/" not in path:
            frames.append((path, line, code.strip()))
        elif short and not (_TORCH / short).exists():
            frames.append((short, short_line, ""))
    return frames


def failing_line(error: BaseException) -> str | None:
    """`file:line (`code`)` of the model's innermost frame in `error`'s traceback: the model's line where
    torch failed inside, torch's, pygraph's and the standard library's frames skipped."""
    skipped = (str(_TORCH), _PACKAGE, sysconfig.get_paths()["stdlib"])
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith(skipped)]
    if not frames:
        return None
    code = f" (`{frames[-1].line}`)" if frames[-1].line else ""
    return f"{frames[-1].filename}:{frames[-1].lineno}{code}"


def _outside_pygraph() -> int:
    """The `stacklevel` of the caller's innermost frame outside pygraph: a warning names the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


@contextlib.contextmanager
def quiet_tracing() -> Iterator[None]:
    """Silences what tracing logs as it goes (draft export's report, a banner per export and a line per
    real value it used; a program per unbacked symbol it cannot place): pygraph reports what it found."""
    loggers = [logging.getLogger(name) for name in _LOUD]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)

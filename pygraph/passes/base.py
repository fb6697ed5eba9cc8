"""What every pass shares: the `Pass` base class, errors with locations, and option parsing.

A pass is a dataclass whose class attribute `name` is its command-line flag and whose fields are its
options (`-p 'name{field=value}'`). `run(module)` rewrites the module in place; a pass that finds
something it cannot handle raises `PassError` naming the ops, which drivers turn into MLIR
diagnostics (so `--verify-diagnostics` can check them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, ClassVar

from ..ir._mlir import func, ir
from ..ir.dialect import DEVICE, FUSED, TRANSFORMS, BufType
from ..ir.explain import source_location


class PassError(Exception):
    """A pass could not handle some ops: each entry is (location, message)."""

    def __init__(self, errors: list[tuple[ir.Location, str]]) -> None:
        self.errors = errors
        super().__init__("\n".join(f"{describe_location(loc)}: {msg}" for loc, msg in errors))

    @staticmethod
    def at(op: Any, message: str) -> PassError:
        return PassError([(op.location, message)])

    def emit(self) -> None:
        """Reports each error as an MLIR diagnostic at its location."""
        for loc, message in self.errors:
            loc.emit_error(message)


@dataclasses.dataclass
class Pass:
    name: ClassVar[str]
    # One line for --list-passes; the class docstring says more.
    summary: ClassVar[str] = ""

    def run(self, module: ir.Module) -> None:
        raise NotImplementedError

    @classmethod
    def from_options(cls, options: dict[str, str]) -> Pass:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, raw in options.items():
            field = fields.get(key.replace("-", "_"))
            if field is None:
                known = ", ".join(sorted(fields)) or "none"
                raise ValueError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            values[field.name] = _parse_option(cls.name, key, raw, field.type)
        return cls(**values)

    def spelling(self) -> str:
        """The pipeline text that recreates this pass with its options."""
        opts = [
            f"{f.name.replace('_', '-')}={_format_option(getattr(self, f.name))}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        ]
        return f"{self.name}{{{' '.join(opts)}}}" if opts else self.name


def _parse_option(pass_name: str, key: str, raw: str, annotation: Any) -> Any:
    type_name = getattr(annotation, "__name__", str(annotation))
    try:
        if type_name == "bool":
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return raw.lower() in ("true", "1")
        if type_name == "int":
            return int(raw)
        if type_name == "float":
            return float(raw)
    except ValueError:
        raise ValueError(f"option '{key}' of pass '{pass_name}' expects {type_name}, got '{raw}'") from None
    return raw


def _format_option(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def describe_location(loc: ir.Location) -> str:
    """`file:line` of the user's code where possible, with the FX node name (`linear_1`) if known."""
    return source_location(str(loc))


def functions(module: ir.Module) -> Iterator[Any]:
    for op in module.body.operations:
        if isinstance(op, func.FuncOp):
            yield op


def fused_functions(module: ir.Module) -> dict[str, Any]:
    """The fused functions (`pygraph.fused`: what kernel launches call) by name."""
    return {f.sym_name.value: f for f in functions(module) if FUSED in f.attributes}


def main_function(module: ir.Module) -> Any:
    """The public function of the module (the model's forward)."""
    public = [f for f in functions(module) if "sym_visibility" not in f.attributes]
    if len(public) != 1:
        raise PassError([(module.operation.location, f"expected one public function, found {len(public)}")])
    return public[0]


def plan_function(module: ir.Module) -> Any:
    """The public function of a module at the plan level (arguments are buffers); an error names the
    pass to run first otherwise."""
    main = main_function(module)
    if any(not isinstance(t, BufType) for t in main.type.inputs):
        raise PassError.at(main, "the function is not at the plan level: run lower-to-plan first")
    return main


def argument_attrs(fn: Any) -> list[dict[str, ir.Attribute]]:
    """Each argument's attributes, as dicts a pass may edit and write back (`ir.DictAttr.get`)."""
    if "arg_attrs" not in fn.attributes:
        return []
    return [{a.name: a.attr for a in ir.DictAttr(x)} for x in ir.ArrayAttr(fn.attributes["arg_attrs"])]


def argument_devices(fn: Any) -> list[str]:
    """Each argument's `pygraph.device` ("cpu" where none is stated)."""
    return [ir.StringAttr(a[DEVICE]).value if DEVICE in a else "cpu" for a in argument_attrs(fn)]


def walk(op: Any) -> list[Any]:
    """All ops nested in `op` (pre-order), as OpViews; a list, so callers may mutate the IR while iterating."""
    found: list[Any] = []

    def visit(o: Any) -> ir.WalkResult:
        found.append(o.opview if hasattr(o, "opview") else o)
        return ir.WalkResult.ADVANCE

    op.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[1:]


def record_transform(module: ir.Module, pass_name: str, what: str, location: ir.Location) -> None:
    """Appends {pass, what, location} to the module's record of graph-safety transformations."""
    attributes = module.operation.attributes
    entries = list(ir.ArrayAttr(attributes[TRANSFORMS])) if TRANSFORMS in attributes else []
    entry = {
        "pass": ir.StringAttr.get(pass_name),
        "what": ir.StringAttr.get(what),
        "location": ir.StringAttr.get(describe_location(location)),
    }
    attributes[TRANSFORMS] = ir.ArrayAttr.get([*entries, ir.DictAttr.get(entry)])

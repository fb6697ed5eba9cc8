"""The pass registry's promises (`pygraph/passes/__init__.py`), checked for every registered pass.

A pass whose module or FileCheck test is not written yet fails here on purpose.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pygraph.passes import _REGISTRY, get_pass, pass_names
from pygraph.passes.base import Pass
from pygraph.tools.opt import summary

PASS_TESTS = Path(__file__).parent / "filecheck" / "passes"


def test_registry_is_alphabetical() -> None:
    assert pass_names() == sorted(pass_names())


@pytest.mark.parametrize("name", pass_names())
def test_pass_class(name: str) -> None:
    module_name = _REGISTRY[name].split(":")[0]
    if importlib.util.find_spec(module_name) is None:
        pytest.fail(f"pass module {module_name} is missing (registered as '{name}')", pytrace=False)
    cls = get_pass(name)
    assert issubclass(cls, Pass)
    assert cls.name == name, f"registered as '{name}' but its class says name = '{cls.name}'"
    assert summary(cls), f"pass '{name}' has neither a `summary` nor a docstring (--list-passes shows it)"
    # `-p NAME` must work: every option has a default, and the defaults spell as the bare name.
    assert cls.from_options({}).spelling() == name


@pytest.mark.parametrize("name", pass_names())
def test_pass_has_filecheck_test(name: str) -> None:
    path = PASS_TESTS / f"{name}.mlir"
    assert path.is_file(), f"pass '{name}' has no FileCheck test {path.relative_to(Path.cwd())}"

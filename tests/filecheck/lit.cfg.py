# lit configuration for pygraph's FileCheck tests. Run from the repository root: `lit tests/filecheck -v`.
#
# Works without an activated virtual environment or an installed package: `pygraph-opt` runs as
# `python -m pygraph.tools.opt` with the Python running lit, the repository is on PYTHONPATH, and
# that Python's bin directory (where `filecheck` is) is on PATH.
#
# RUN-line forms:
#   pass test:        // RUN: pygraph-opt %s -p NAME | filecheck %s
#   diagnostics:      // RUN: pygraph-opt %s -p NAME --split-input-file --verify-diagnostics
#   round trip:       // RUN: %roundtrip | filecheck %s
#     (prints %s in generic form, parses that again and fails unless the second print is identical)
#   Python test:      # RUN: %python %s | filecheck %s
#
# lit defines `config` before running this file.
# ruff: noqa: F821

import os
import sys

import lit.formats

config.name = "pygraph"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

repo_root = os.path.dirname(os.path.dirname(config.test_source_root))
config.environment["PYTHONPATH"] = repo_root
config.environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]

# Order matters: lit applies these in turn, and before its own (%s, %t), so the expansion of
# %roundtrip still gets `pygraph-opt`, %s and %t replaced.
config.substitutions.append(
    (
        "%roundtrip",
        "pygraph-opt %s --split-input-file -o %t.roundtrip"
        " && pygraph-opt %t.roundtrip --split-input-file | diff %t.roundtrip -"
        " && cat %t.roundtrip",
    )
)
# Only the command word, not `pygraph-opt` inside a path or a longer name.
config.substitutions.append((r"(?<![\w/.-])pygraph-opt(?![\w-])", f"{sys.executable} -m pygraph.tools.opt"))
config.substitutions.append(("%python", sys.executable))

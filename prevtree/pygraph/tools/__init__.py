"""Command-line tools: `pygraph-opt` (the mlir-opt-style pass driver) and `pygraph`."""

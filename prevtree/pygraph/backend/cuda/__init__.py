"""The CUDA backend: plans replayed as CUDA graphs built node by node with cuda-python.

`driver` (checked calls into `cuda.bindings.driver`), `compile` (Triton kernels to cubins, cached on
disk, and to CUfunctions), `graph` (the explicit graph builder; one library call recorded alone) and
`runtime` (`CudaRuntime`: executes a `Plan`). Only `runtime` needs the MLIR bindings (through the
plan), so the GPU smoke script can exercise the rest without them.
"""

"""Executors of plans: the CPU emulator and the CUDA-graph runtime."""

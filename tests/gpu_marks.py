"""The skip condition every GPU test shares (conftest.py marks each such test `gpu` as well)."""

import pytest
import torch

GPU_REASON = "needs a CUDA GPU (run on the GPU machine)"
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason=GPU_REASON)

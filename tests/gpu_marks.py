"""The skip condition every GPU test shares (the GPU tests also carry `@pytest.mark.gpu`)."""

import pytest
import torch

needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the GPU machine)"
)

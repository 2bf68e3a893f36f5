"""The CPU emulator refuses kernels_sm90a's wgmma + TMA GEMM, naming the instruction,
rather than guess at an answer (the variant runs on sm_90 GPUs only:
tests/kernels/test_gemm_sm90.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers.bundled import sm90a_kernels_manifest

import pyoxide
from pyoxide.errors import PyoxideError


def test_the_emulator_refuses_the_wgmma_twin() -> None:
    """A wrong answer is impossible: the emulator stops at the first sm_90 instruction and
    says which, and what to do."""
    sm90 = pyoxide.load(sm90a_kernels_manifest())
    m, n, k = 8, 8, 8
    a = aligned((m, k), ml_dtypes.bfloat16)
    b = aligned((k, n), ml_dtypes.bfloat16)
    c = aligned((m, n), np.float32)
    with pytest.raises(PyoxideError) as e:
        sm90.gemm_bf16_sm90(a, b, c)  # its declared launch; the maps are the emulator's
    text = str(e.value)
    assert "is not emulated" in text and "cvta.to.shared" in text, text
    assert "sm_90 GPU" in text, text


def aligned(shape: tuple[int, int], dtype: object) -> np.ndarray:
    """Zeros at a 64-byte-aligned address (TMA's arrays are 16-byte aligned)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(size + 64, np.uint8)
    at = -raw.ctypes.data % 64
    return raw[at : at + size].view(dtype).reshape(shape)

"""The CPU emulator refuses kernels_sm90a's wgmma + TMA GEMM, naming the instruction,
rather than guess at an answer (the twin runs on sm_90 GPUs only:
tests/kernels/test_gemm_sm90.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers.bundled import sm90a_kernels_manifest

import pyoxide
from pyoxide._twins import SM90_SHARED_BYTES, SM90_THREADS
from pyoxide.errors import PyoxideError


def test_the_emulator_refuses_the_wgmma_twin() -> None:
    """A wrong answer is impossible: the emulator stops at the first sm_90 instruction and
    says which, and what to do."""
    sm90 = pyoxide.load(sm90a_kernels_manifest())
    m, n, k = 8, 8, 8
    a = np.zeros(m * k, ml_dtypes.bfloat16)
    b = np.zeros(k * n, ml_dtypes.bfloat16)
    raw = np.zeros(384 + 64, np.uint8)
    at = -raw.ctypes.data % 64
    maps = raw[at : at + 384]  # TMA maps are 64-byte aligned; the kernel checks
    c = np.zeros(m * n, np.float32)
    with pytest.raises(PyoxideError) as e:
        sm90.gemm_bf16_sm90[1, SM90_THREADS, SM90_SHARED_BYTES](a, b, maps, c, m, n, k)
    text = str(e.value)
    assert "is not emulated" in text and "cvta.to.shared" in text, text
    assert "sm_90 GPU" in text, text

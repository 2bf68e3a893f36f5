"""Float64 references of the row kernels (softmax_rows, layernorm_rows) and the
finite-difference gradient their backward tests take, shared by the kernel tests and the
autograd tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: layernorm_rows' epsilon in the tests.
EPS = 1e-5


def softmax64(x: np.ndarray) -> np.ndarray:
    """Softmax of each row (the last axis), in float64."""
    x64 = np.asarray(x, np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def layernorm64(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Layer norm of each row (the last axis), then weight and bias, in float64."""
    x64 = np.asarray(x, np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x64 - mean) / np.sqrt(var + eps) * w + b  # type: ignore[no-any-return]


def column_gradient(loss: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """d loss / d x by float64 central differences, one column of every row at a time;
    `loss` gives one value per row (or one in all), each depending on its own row only."""
    x = x.astype(np.float64)
    grad = np.zeros_like(x)
    for c in range(x.shape[-1]):
        h = 1e-6 * max(1.0, float(np.abs(x[..., c]).max()))
        up, down = x.copy(), x.copy()
        up[..., c] += h
        down[..., c] -= h
        grad[..., c] = (loss(up) - loss(down)) / (2 * h)
    return grad

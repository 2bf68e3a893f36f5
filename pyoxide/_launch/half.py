"""16-bit floats by value: rounding a Python float (a double) to ``f16``/``bf16``
bits, to nearest with ties to even, and back."""

from __future__ import annotations

import math

#: Where rounding to the nearest half reaches infinity (the largest finite value plus
#: half its spacing): f16 65504 + 16, bf16 (2 - 2**-7) * 2**127 + 2**119.
HALF_OVERFLOW = {"f16": 65520.0, "bf16": 2.0**128 - 2.0**119}


def half_bits(t: str, f: float) -> int:
    """The bits of ``f`` rounded to the nearest ``f16``/``bf16``, ties to even (NumPy's
    float16 does f16; bf16 is done here exactly, from the double, as rounding through
    f32 first could round twice)."""
    import numpy as np  # numpy loads on the first launch, not at import

    if t == "f16":
        return int(np.float16(f).view(np.uint16))
    sign = 0x8000 if math.copysign(1.0, f) < 0 else 0
    a = abs(f)
    if math.isnan(f):
        return sign | 0x7FC0
    if a >= HALF_OVERFLOW["bf16"]:
        return sign | 0x7F80
    _, e = math.frexp(a)  # a = m * 2**e with 0.5 <= m < 1
    q = max(e, -125) - 8  # spacing 2**q: 8 significant bits, fixed below 2**-126
    r = math.ldexp(round(math.ldexp(a, -q)), q)  # scaling is exact; round() ties to even
    return sign | int(np.float32(r).view(np.uint32)) >> 16


def half_value(t: str, bits: int) -> float:
    """The value of ``f16``/``bf16`` bits."""
    import numpy as np

    if t == "f16":
        return float(np.uint16(bits).view(np.float16))
    return float(np.uint32(bits << 16).view(np.float32))

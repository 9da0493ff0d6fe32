"""The numpy array aliases every module uses, defined once.

Vectors are float32 (what embedders return and stores keep); scores and components are float64;
instants are int64 microseconds since the Unix epoch (``chronomem.clock.to_micros``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["F32", "F64", "I32", "I64", "Mask", "Rows", "unit_rows", "unit_vector"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]


def unit_rows(vectors: F32) -> F32:
    """Each row scaled to length 1, as float32; a zero row stays zero. The arithmetic is
    float64: a float32 vector whose squared length under- or overflows float32 (components
    near 1e-20 or 1e20, all valid input) still gets a finite direction."""
    wide = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(wide, axis=-1, keepdims=True)
    out: F32 = np.divide(wide, norms, out=np.zeros_like(wide), where=norms > 0).astype(np.float32)
    return out


def unit_vector(vector: F32) -> F32:
    """One vector scaled to length 1 (see :func:`unit_rows`)."""
    row: F32 = unit_rows(np.asarray(vector)[None, :])[0]
    return row

"""The numpy array aliases every module uses, defined once.

Vectors are float32 (what embedders return and stores keep); scores and components are float64;
instants are int64 microseconds since the Unix epoch (``chronomem.clock.to_micros``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["F32", "F64", "I64", "Mask", "Rows"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]

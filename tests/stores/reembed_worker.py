"""A process that switches a store to another model slowly, to be killed at a random moment
(tests/stores/test_reembed.py): ``python -m tests.stores.reembed_worker LOCATION``."""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from chronomem import Memory


class Slow:
    """Hash-seeded unit vectors of ``dim``, 5 ms per text."""

    def __init__(self, model_id: str = "test/new", dim: int = 12, delay: float = 0.005) -> None:
        self.model_id, self.dim, self._delay = model_id, dim, delay

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        time.sleep(self._delay * len(texts))
        return (
            np.stack([self.vector(t) for t in texts])
            if texts
            else np.empty((0, self.dim), np.float32)
        )


def main() -> int:
    with Memory.open(sys.argv[1], embedder=None) as mem:
        print("READY", flush=True)
        mem.reembed(Slow(), batch=8)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

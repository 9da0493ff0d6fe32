"""The ``Memory`` facade: wires the clock, the store, the embedder and the scoring config.

Reads follow DESIGN §2; writes DESIGN §3; the lifecycle §3; causal reads §4. The engine asks its
clock for "now" once per call and passes instants down; scoring never reads a clock. The verbs
are grouped by concept in the modules of this package; :class:`Memory` is all of them.
"""

from __future__ import annotations

from chronomem.engine.importing import _Importing

__all__ = ["Memory"]


class Memory(_Importing):
    """A memory engine over one store and one space.

    Open with :meth:`open`; use as a context manager or call :meth:`close`. Each public call holds
    an internal lock, so a handle may be shared between threads; several processes may open the
    same store.
    """

"""Touches written in groups, after the read's lock (docs/design/grouped-touches.md).

A touching read queues its touch under the handle's lock, in the order the reads scored, and
waits for it after the lock: the first waiter finding no group being written takes everything
queued and writes it in one transaction; the others wait for that group, then find theirs written
or write the next group. Every read still returns only once its touch is durable (DESIGN §2,
step 9), but the next read scores while it commits, and reads scored meanwhile share a commit."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from chronomem.errors import StoreError
from chronomem.stores.base import MemoryStore, Touch

__all__ = ["Ticket", "TouchWriter"]


@dataclass(slots=True, eq=False)
class Ticket:
    """One read's queued touches; ``done`` once their group was written (or failed: ``error``)."""

    touches: tuple[Touch, ...]
    done: bool = False
    error: BaseException | None = None


class TouchWriter:
    """The touches of one handle's reads (its store and space), written in groups."""

    def __init__(self, store: MemoryStore, space: str) -> None:
        self._store = store
        self._space = space
        self._changed = threading.Condition(threading.Lock())
        self._queued: list[Ticket] = []
        self._writing = False
        self._closed = False

    def queue(self, touches: Sequence[Touch]) -> Ticket:
        """Queue a read's touches (under the handle's lock, so the queue keeps the reads'
        order); :meth:`wait` for the returned ticket."""
        ticket = Ticket(tuple(touches))
        with self._changed:
            if self._closed:
                raise StoreError("this Memory is closed")
            self._queued.append(ticket)
        return ticket

    def wait(self, ticket: Ticket) -> None:
        """Return once the ticket's touches are durable, writing them (and every touch queued
        with them) when no other thread is writing; raise the group's error if it failed."""
        with self._changed:
            while not ticket.done:
                self._write_or_wait()
        if ticket.error is not None:
            # (each read its own copy: one exception raised in several threads would share, and
            # keep growing, one traceback)
            raised = copy.copy(ticket.error)
            raised.__traceback__ = None
            raise raised from ticket.error

    def close(self) -> None:
        """Refuse new touches and wait until every queued one was written."""
        with self._changed:
            self._closed = True
            while self._queued or self._writing:
                self._write_or_wait()

    def _write_or_wait(self) -> None:
        """(Holding the condition's lock.) Wait for the group being written, or, when none is,
        write everything queued as the next group, without the lock while it is written."""
        if self._writing:
            self._changed.wait()
            return
        group, self._queued = self._queued, []
        self._writing = True
        self._changed.release()
        error: BaseException | None = None
        try:
            self._store.touch(self._space, [t for member in group for t in member.touches])
        except BaseException as exc:  # every read of the group raises it
            error = exc
        finally:
            self._changed.acquire()
            self._writing = False
            for member in group:
                member.done, member.error = True, error
            self._changed.notify_all()

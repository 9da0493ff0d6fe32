"""Group commit for store adapters: calls that arrive together run as one batch.

A framework that runs graph nodes in parallel sends a store many small calls at once — threads
of a pool calling ``put``/``get``, or coroutines gathered over ``aput``/``aget``. Run one by one,
each is a transaction and several round trips; run together, they are one. Two combiners:

- :class:`ThreadCombiner`: while one thread runs a batch, the calls of other threads queue; the
  next batch takes all of them (the thread whose call is first in the queue runs it, so no
  caller serves the others for long);
- :class:`LoopCombiner`: the calls made in one turn of an event loop go to a worker thread as one
  batch (through the thread combiner, so they also join concurrent threads' calls).

Each call's results are its own slice of the combined batch. When a combined batch fails, each
of its calls runs alone, so an error reaches only the call that caused it: the ops must be safe to
repeat (reads, keyed writes, deletes are).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["LoopCombiner", "ThreadCombiner"]

Op = TypeVar("Op")
Result = TypeVar("Result")


def answer_each(
    run: Callable[[list[Op]], list[Result]], calls: Sequence[list[Op]]
) -> list[list[Result] | BaseException]:
    """Each call's results (or its error) from one run of all their ops, or from one run each
    when the combined run fails."""
    try:
        results = run([op for ops in calls for op in ops])
    except Exception as exc:
        if len(calls) == 1:
            return [exc]
        return [_alone(run, ops) for ops in calls]
    out: list[list[Result] | BaseException] = []
    start = 0
    for ops in calls:
        out.append(results[start : start + len(ops)])
        start += len(ops)
    return out


def _alone(run: Callable[[list[Op]], list[Result]], ops: list[Op]) -> list[Result] | BaseException:
    try:
        return run(ops)
    except Exception as exc:
        return exc


@dataclass(eq=False)
class _Call(Generic[Op, Result]):
    ops: list[Op]
    ready: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # woken to run the next batch, not with an answer
    answer: list[Result] | BaseException | None = None


class ThreadCombiner(Generic[Op, Result]):
    """Runs the calls of concurrent threads as one batch (see the module docstring)."""

    def __init__(self, run: Callable[[list[Op]], list[Result]]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._queue: list[_Call[Op, Result]] = []
        self._busy = False

    def call(self, ops: list[Op]) -> list[Result]:
        mine: _Call[Op, Result] = _Call(ops)
        with self._lock:
            self._queue.append(mine)
            leading = not self._busy
            self._busy = True
        while not leading:
            mine.ready.wait()
            if mine.answer is not None:
                return _result(mine.answer)
            leading, mine.lead = mine.lead, False  # handed the next batch
            mine.ready.clear()
        with self._lock:
            calls, self._queue = self._queue, []
        for call, answer in zip(calls, answer_each(self._run, [c.ops for c in calls]), strict=True):
            call.answer = answer
            if call is not mine:
                call.ready.set()
        with self._lock:
            if self._queue:  # the first waiting call runs the next batch
                self._queue[0].lead = True
                self._queue[0].ready.set()
            else:
                self._busy = False
        assert mine.answer is not None
        return _result(mine.answer)


class LoopCombiner(Generic[Op, Result]):
    """Runs the calls made in one turn of an event loop as one batch in a worker thread."""

    def __init__(self, run: Callable[[list[Op]], list[Result]]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._waiting: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], list[Op]]]]
        self._waiting = {}

    async def call(self, ops: list[Op]) -> list[Result]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Result]] = loop.create_future()
        with self._lock:
            queue = self._waiting.setdefault(loop, [])
            queue.append((future, ops))
            first = len(queue) == 1
        if first:
            loop.call_soon(self._flush, loop)
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            calls = self._waiting.pop(loop, [])
        task = loop.run_in_executor(None, answer_each, self._run, [ops for _, ops in calls])

        def done(finished: asyncio.Future[list[list[Result] | BaseException]]) -> None:
            error = None if finished.cancelled() else finished.exception()
            answers = [error] * len(calls) if error is not None else finished.result()
            for (future, _), answer in zip(calls, answers, strict=True):
                if future.done():
                    continue
                if isinstance(answer, BaseException):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)

        task.add_done_callback(done)


def _result(answer: list[Result] | BaseException) -> list[Result]:
    if isinstance(answer, BaseException):
        raise answer
    return answer

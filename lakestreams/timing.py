"""Step timings for operators and the benchmark (logger ``lakestreams.timing``), and the
events a progress display follows: a pipeline stage and each timed step starting and ending.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger("lakestreams.timing")
#: Seconds spent per step name in this process (the benchmark reads it).
TOTALS: dict[str, float] = defaultdict(float)
#: Called with (kind, name, done): kind "stage" (bronze, silver, gold) or "step" (a timed
#: step), done False when it starts and True when it ends. Steps may run in threads.
Listener = Callable[[str, str, bool], None]
LISTENERS: list[Listener] = []


def _notify(kind: str, name: str, done: bool) -> None:
    for listener in list(LISTENERS):
        try:
            listener(kind, name, done)
        except Exception:
            # A display never stops the work it shows: a failing one is dropped.
            log.exception("a progress listener failed on %s %s; it gets no more events", kind, name)
            if listener in LISTENERS:
                LISTENERS.remove(listener)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send stage and step events to ``listener`` while the block runs."""
    LISTENERS.append(listener)
    try:
        yield
    finally:
        if listener in LISTENERS:
            LISTENERS.remove(listener)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """A pipeline stage: only announced (its steps are what is timed)."""
    _notify("stage", name, False)
    try:
        yield
    finally:
        _notify("stage", name, True)


@contextmanager
def step(name: str) -> Iterator[None]:
    _notify("step", name, False)
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        TOTALS[name] += elapsed
        log.info("%s: %.2fs", name, elapsed)
        _notify("step", name, True)

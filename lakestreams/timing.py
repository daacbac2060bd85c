"""Step timings for operators and the benchmark (logger ``lakestreams.timing``)."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("lakestreams.timing")
#: Seconds spent per step name in this process (the benchmark reads it).
TOTALS: dict[str, float] = defaultdict(float)


@contextmanager
def step(name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        TOTALS[name] += elapsed
        log.info("%s: %.2fs", name, elapsed)

"""Named fault points: where the fault suite kills a run with SIGKILL.

``LAKESTREAMS_KILL_AT=<point>`` (or ``<point>#<n>``, the n-th time the run passes it) makes
the process kill itself, and the Spark JVM it started, the moment it reaches that point:
as abrupt as a lost machine, with no ``finally`` block and no flush. Each point sits
between two writes that a stage needs both of, which is where a re-run has to find the
state whole. Without the variable a point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import Counter

KILL_ENV = "LAKESTREAMS_KILL_AT"

#: Every named point, in pipeline order, and where the run is when it is killed there.
POINTS: dict[str, str] = {
    "bronze.records": "a micro-batch's records are in bronze; its quarantine rows are not written",
    "bronze.offsets": "a micro-batch is written; the stream has not committed its offsets",
    "silver.ledger": "the silver batch's ledger rows are written; its transactions are not",
    "silver.transactions": "transactions and late errors are written; no DDL or change is derived",
    "silver.dictionary": "DDL records made dictionary revisions and the DDL log; no change table is written",
    "silver.changes": "one source table's change rows are written; the others' are not",
    "silver.done": "every table of the silver batch is written; the batch is not marked done",
    "ddl.alter": "one ALTER TABLE that follows a DDL ran (change table or gold table); the table's structure mark is not moved",
    "plan.opened": "the plan is opened (planned row); no plan table is written",
    "plan.target": "one target's plan table is written; the others' are not",
    "plan.written": "the whole plan and its outcomes are written; dbt has not run",
    "gold.merge": "one gold table's MERGE committed; models running beside it may be part-way",
    "gold.progress": "apply progress is written; the watermarks are not",
    "gold.applied": "the watermarks are written; the plan is not marked applied",
    "delta.write": "any write through lakestreams.delta_io has committed (use #n)",
}

_hits: Counter[str] = Counter()
_guard = threading.Lock()


def kill_spec() -> tuple[str, int] | None:
    """The point and hit number the environment asks for, checked; None when unset."""
    spec = os.environ.get(KILL_ENV, "").strip()
    if not spec:
        return None
    point, sep, nth = spec.partition("#")
    if point not in POINTS:
        raise ValueError(f"{KILL_ENV}={spec!r}: no such fault point; the points are: {', '.join(POINTS)}")
    if sep and not (nth.isdigit() and int(nth) > 0):
        raise ValueError(f"{KILL_ENV}={spec!r}: after '#' give the hit number (1 or more)")
    return point, int(nth) if sep else 1


def kill_point(name: str) -> None:
    """Kill this process (and its process group, when it leads one) on the chosen hit."""
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}")
    point, nth = kill_spec()  # type: ignore[misc]
    if point != name:
        return
    with _guard:
        _hits[name] += 1
        if _hits[name] != nth:
            return
    sys.stderr.write(f"lakestreams: killed at fault point {name}#{nth}\n")
    sys.stderr.flush()
    # Led by the run (the fault suite starts it in a session of its own): take the JVM too.
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def dbt_callbacks() -> list:
    """dbt event callbacks that pass the ``gold.merge`` point after each MERGE statement
    completes; none unless that point is asked for."""
    spec = kill_spec()
    if spec is None or spec[0] != "gold.merge":
        return []
    last: dict[str, str] = {}  # per dbt thread (models run side by side): its last statement

    def on_event(event) -> None:
        name = event.info.name
        if name == "SQLQuery":
            last[event.info.thread] = _statement_head(event.data.sql)
        elif name == "SQLQueryStatus" and last.get(event.info.thread, "").startswith("merge into"):
            kill_point("gold.merge")

    return [on_event]


def _statement_head(sql: str) -> str:
    """The statement's first words, after dbt's leading query comment."""
    text = sql.lstrip()
    if text.startswith("/*"):
        end = text.find("*/")
        text = text[end + 2:].lstrip() if end >= 0 else ""
    return text[:20].lower()

"""Many quiet tables: a channel of ``--tables`` small tables where ``--busy`` get new records.

Two channels in one process and session, each first loaded with ``--rows`` inserts per
table (one run), then given the same new records for ``--busy`` tables (updates and
inserts, ``--changes`` per table) in later runs:

- **wide**: ``--tables`` tables (200), of which ``--busy`` (10) change;
- **narrow**: only the ``--busy`` tables.

Both channels are loaded first; then the busy runs alternate, narrow then wide, for
``--rounds`` rounds (each with an idle run after it), each round new records for the same
tables. Tables without work should cost nothing: the figure is the last round's wide run
above its narrow one, per quiet table (by then both come after the same JVM warm-up).
Usage: ``python bench/many_tables.py [--tables N] [--busy B] [--rows R] [--changes C] [--rounds K]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import bench_channel  # noqa: E402

from lakestreams.pipeline import run_pipeline  # noqa: E402
from lakestreams.spark import build_session, ensure_schemas  # noqa: E402
from lakestreams.timing import TOTALS  # noqa: E402

SOURCE, OWNER = "WIDE.EXAMPLE.COM", "WIDE"


def record(cmd: str, table: str, txn: str, scn: int, pos: int, old: dict | None = None, new: dict | None = None,
           ddl: str | None = None) -> str:
    r = {"source_database": SOURCE, "command_type": cmd, "object_owner": OWNER, "object_name": table,
         "transaction_id": txn, "scn": scn, "commit_scn": scn, "position": pos,
         "commit_time": f"2024-01-01T{scn // 3600 % 24:02d}:{scn // 60 % 60:02d}:{scn % 60:02d}Z", "tag": None}
    if ddl is not None:
        r.update(object_type="TABLE", ddl_text=ddl)
    if old is not None:
        r["old_values"] = old
    if new is not None:
        r["new_values"] = new
    return json.dumps(r) + "\n"


def history(tables: list[str], rows: int) -> list[str]:
    out, scn = [], 1
    for t in tables:
        out.append(record("CREATE TABLE", t, f"ddl.{t}", scn, 1, ddl=(
            f"CREATE TABLE {OWNER.lower()}.{t.lower()} (id NUMBER(9) NOT NULL, name VARCHAR2(20), qty NUMBER(9), "
            f"CONSTRAINT {t.lower()}_pk PRIMARY KEY (id))")))
        scn += 1
    for t in tables:
        for i in range(1, rows + 1):
            out.append(record("INSERT", t, f"i.{t}.{i}", scn, 1, new={"ID": i, "NAME": f"n{i}", "QTY": i}))
            scn += 1
    return out


def changes(tables: list[str], rows: int, per_table: int, start_scn: int, round_: int = 0) -> list[str]:
    """Round ``round_`` of new records for ``tables``: updates of the first rows (their old
    quantity is the one the round before set) and inserts of keys no round used."""
    out, scn = [], start_scn
    for t in tables:
        for j in range(per_table):
            i = j % rows + 1
            if j < rows:
                out.append(record("UPDATE", t, f"u.{t}.{round_}.{j}", scn, 1, old={"ID": i, "QTY": i + 1000 * round_},
                                  new={"QTY": i + 1000 * (round_ + 1)}))
            else:
                out.append(record("INSERT", t, f"n.{t}.{round_}.{j}", scn, 1,
                                  new={"ID": rows + per_table * round_ + j + 1, "NAME": "new", "QTY": 0}))
            scn += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--busy", type=int, default=10)
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2, help="busy runs per channel, alternating (the last is the figure)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out_many_tables"))
    args = ap.parse_args()
    # Step timings on stderr as the runs go (the figures are printed at the end).
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("lakestreams.timing").setLevel(logging.INFO)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    spark = build_session(out / "wh", app_name="lakestreams-bench-many-tables")
    names = [f"W{i:03d}" for i in range(1, args.tables + 1)]
    busy = names[:: max(1, args.tables // args.busy)][: args.busy]
    channels = {}
    loads: dict[str, float] = {}
    for label, tables in (("narrow", busy), ("wide", names)):
        ch = bench_channel(out / label, {"schema": label, "warehouse": "wh", "state": "state"})
        ensure_schemas(spark, ch.storage)
        landing = out / label / "landing" / "bench"
        landing.mkdir(parents=True, exist_ok=True)
        (landing / "f1.jsonl").write_text("".join(history(tables, args.rows)))
        start = time.perf_counter()
        run_pipeline(spark, ch)
        loads[label] = time.perf_counter() - start
        channels[label] = (ch, landing, len(tables))
    # The busy runs alternate between the channels, round after round: the JVM warms up as
    # it goes (the wide load alone runs for many minutes), so the figure is taken from the
    # last round, where both channels' runs come after the same warm-up.
    rounds: list[dict[str, dict]] = []
    for n in range(args.rounds):
        result: dict[str, dict] = {}
        for label, (ch, landing, count) in channels.items():
            (landing / f"f{n + 2}.jsonl").write_text(
                "".join(changes(busy, args.rows, args.changes, 10_000_000 * (n + 1), n)))
            before = dict(TOTALS)
            start = time.perf_counter()
            r = run_pipeline(spark, ch)
            second = time.perf_counter() - start
            # The busy run's slowest steps (seconds; threads overlap, so they may add up to more).
            steps = sorted(((k, v - before.get(k, 0.0)) for k, v in TOTALS.items()), key=lambda kv: -kv[1])[:8]
            start = time.perf_counter()
            run_pipeline(spark, ch)
            idle = time.perf_counter() - start
            result[label] = {"tables": count, "busy_run_s": round(second, 1), "idle_run_s": round(idle, 1),
                             "models_run": len(r.dbt), "busy_run_steps_s": {k: round(v, 1) for k, v in steps}}
        rounds.append(result)
    last = rounds[-1]
    quiet = args.tables - args.busy
    extra = last["wide"]["busy_run_s"] - last["narrow"]["busy_run_s"]
    idle_extra = last["wide"]["idle_run_s"] - last["narrow"]["idle_run_s"]
    print(json.dumps({
        "load_run_s": {k: round(v, 1) for k, v in loads.items()},
        "rounds": rounds,
        "quiet_tables": quiet,
        "wide_over_narrow_s": round(extra, 1),
        "per_quiet_table_ms": round(1000 * extra / quiet, 1) if quiet else None,
        "idle_per_quiet_table_ms": round(1000 * idle_extra / quiet, 1) if quiet else None,
        "wide_vs_narrow": round(last["wide"]["busy_run_s"] / last["narrow"]["busy_run_s"], 2),
    }, indent=2))


if __name__ == "__main__":
    main()

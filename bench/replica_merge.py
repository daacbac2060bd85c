"""What a small plan's apply costs on a large replica, by replica width: the MERGE copies every
replica file it touches, so its rows are the replica's, not the plan's.

One table per width (``--widths``): a key and ``width - 1`` columns of text, decimals and
integers. A history of ``--rows`` INSERTs in one run, then ``--rounds`` rounds of
``--changes`` UPDATEs of two columns at keys spread over the whole table, each one run
through the pipeline (small enough to run ``interpreted``). The rounds alternate the two
ways the apply can run inside that mode:

- ``compiled``: expressions compiled, whole stages not (``lakestreams.spark.compiled_expressions``);
- ``interpreted``: the apply left interpreted like the plan.

The pipeline takes the first from ``COMPILED_EXPRESSIONS_COLUMNS`` columns on (reported as
``pipeline_way``).

Reported per width and way, as medians over the rounds: the run's ``gold.dbt`` step and
the MERGE's own times from its Delta commit (execution, rewrite). Each round checks the
replica: ``--rows`` rows, the round's changes carried by exactly the keys it changed, and
an updated column's sum. Exits 1 if a check fails or an error queue holds an entry.
Wider replicas pass ``gold.structure.DELETION_VECTOR_BYTES`` sooner and then copy no row
(80 columns at the default rows do).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from delta.tables import DeltaTable  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import lakestreams.spark as lspark  # noqa: E402
from lakestreams.config import channel_from_dict  # noqa: E402
from lakestreams.pipeline import run_pipeline  # noqa: E402
from lakestreams.sample import write_jsonl  # noqa: E402
from lakestreams.spark import build_session, ensure_schemas  # noqa: E402
from lakestreams.timing import TOTALS  # noqa: E402

SOURCE = "BENCH.EXAMPLE.COM"
TXN_ROWS = 5_000  # INSERTs per history transaction
#: Each way as the width from which ``compiled_expressions`` compiles: every width, or none.
WAYS = {"compiled": 0, "interpreted": 10**9}


def column_types(width: int) -> list[tuple[str, str]]:
    """The key, then text, decimal and integer columns in turn."""
    kinds = ("VARCHAR2(30)", "NUMBER(12,2)", "NUMBER(9)")
    return [("ID", "NUMBER(10)")] + [(f"C{i:03d}", kinds[i % 3]) for i in range(1, width)]


def value(col: int, key: int, version: int) -> object:
    """Column ``col``'s value at ``key`` after ``version`` updates, typed as ``column_types`` says."""
    kind = col % 3
    if kind == 0:
        return f"v{version}-{(key * (col + 7)) % 9973}"
    if kind == 1:
        return round(((key * (col + 3)) % 100_000 + version) / 100, 2)
    return (key + col + version) % 1_000_000


class Records:
    """Native change records of one table, numbered in commit order."""

    def __init__(self, table: str):
        self.table, self.scn, self.count = table, 1_000, 0

    def txn(self, rows: list[tuple[str, dict | None, dict | None]], ddl: str | None = None) -> list[dict]:
        self.scn += 10 + len(rows)
        self.count += 1
        base = {"source_database": SOURCE, "transaction_id": f"T{self.count}", "commit_scn": self.scn,
                "commit_time": "2024-01-01T00:00:00Z", "tag": None}
        out = []
        if ddl is not None:
            out.append({**base, "command_type": "CREATE TABLE", "object_owner": "BENCH", "object_name": self.table,
                        "object_type": "TABLE", "ddl_text": ddl})
        for command, old, new in rows:
            r = {**base, "command_type": command, "object_owner": "BENCH", "object_name": self.table}
            if old is not None:
                r["old_values"] = old
            if new is not None:
                r["new_values"] = new
            out.append(r)
        out.append({**base, "command_type": "COMMIT"})
        for n, r in enumerate(out, 1):
            r["position"], r["scn"] = n, self.scn - len(out) + n
        return out


def merge_metrics(spark, table: str) -> dict[str, int]:
    """The last commit's MERGE times (its Delta history: one row)."""
    m = DeltaTable.forName(spark, table).history(1).first()["operationMetrics"]  # one row
    return {k: int(m[k]) for k in ("executionTimeMs", "rewriteTimeMs", "numTargetRowsCopied")}


def run_width(spark, out: Path, width: int, rows: int, changes: int, rounds: int) -> dict:
    name = f"W{width}"
    folder = out / f"w{width}"
    shutil.rmtree(folder, ignore_errors=True)
    channel = channel_from_dict({
        "name": f"w{width}", "storage": {"warehouse": "../wh", "state": "state", "schema": f"rm{width}"},
        "landing": [{"name": "src", "path": "landing/src", "transactions": "commit_records"}],
    }, folder)
    ensure_schemas(spark, channel.storage)
    landing = folder / "landing" / "src"
    landing.mkdir(parents=True, exist_ok=True)
    cols = column_types(width)
    ddl = (f"CREATE TABLE bench.{name.lower()} (" + ", ".join(f"{c.lower()} {t}" for c, t in cols)
           + f", CONSTRAINT {name.lower()}_pk PRIMARY KEY (id))")
    rec = Records(name)
    version = dict.fromkeys(range(rows), 0)
    history = rec.txn([], ddl=ddl)
    for start in range(0, rows, TXN_ROWS):
        history += rec.txn([("INSERT", None, {"ID": k, **{c: value(i, k, 0) for i, (c, _t) in enumerate(cols) if i}})
                            for k in range(start, min(rows, start + TXN_ROWS))])
    write_jsonl(landing / "0000_history.jsonl", history)
    started = time.perf_counter()
    run_pipeline(spark, channel)
    history_s = time.perf_counter() - started
    gold = f"{channel.storage.schema_name('gold')}.bench__{name.lower()}"
    stride = max(1, rows // changes)
    seen: dict[str, list[dict]] = {w: [] for w in WAYS}
    failures = []
    for n in range(rounds * len(WAYS)):
        way = list(WAYS)[n % len(WAYS)]
        keys = [(j * stride + n) % rows for j in range(changes)]
        updates = []
        for k in keys:
            version[k] += 1
            updates.append(("UPDATE", {"ID": k}, {c: value(i, k, version[k]) for i, (c, _t) in enumerate(cols) if i in (1, 2)}))
        write_jsonl(landing / f"{n + 1:04d}_changes.jsonl", rec.txn(updates))
        saved, lspark.COMPILED_EXPRESSIONS_COLUMNS = lspark.COMPILED_EXPRESSIONS_COLUMNS, WAYS[way]
        before = dict(TOTALS)
        started = time.perf_counter()
        try:
            run_pipeline(spark, channel)
        finally:
            lspark.COMPILED_EXPRESSIONS_COLUMNS = saved
        run_s = time.perf_counter() - started
        # One row: the replica's rows, those carrying the round, and an updated column's sum.
        count, carried, total = spark.table(gold).agg(
            F.count("*"), F.count_if(F.col("_commit_scn") == rec.scn), F.sum("C002")).first()
        want = sum(value(2, k, v) for k, v in version.items())
        if (count, carried, total) != (rows, len(set(keys)), want):
            failures.append(f"{name} round {n + 1}: {count} rows (want {rows}), {carried} carry the round "
                            f"(want {len(set(keys))}), C002 sums to {total} (want {want})")
        seen[way].append({"run_s": run_s, "gold_dbt_s": TOTALS.get("gold.dbt", 0.0) - before.get("gold.dbt", 0.0),
                          **merge_metrics(spark, gold)})
    queued = spark.table(channel.storage.table("gold", "error_queue").replace("`", "")).count()
    if queued:
        failures.append(f"{name}: {queued} entries in the error queue")
    return {
        "width": width, "rows": rows, "changes": changes, "history_run_s": round(history_s, 1),
        "pipeline_way": "compiled" if width >= lspark.COMPILED_EXPRESSIONS_COLUMNS else "interpreted",
        "medians": {w: {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]} for w, runs in seen.items()},
        "rounds": seen, "failures": failures,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="10,20,30,40", help="replica widths in columns, the key included")
    ap.add_argument("--rows", type=int, default=50_000, help="replica rows (the history's INSERTs)")
    ap.add_argument("--changes", type=int, default=500, help="UPDATEs per round (1%% of the default rows)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per way")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out_replica_merge"))
    args = ap.parse_args()
    out = Path(args.out).resolve()
    shutil.rmtree(out / "wh", ignore_errors=True)
    spark = build_session(out / "wh", app_name="bench-replica-merge")
    results = [run_width(spark, out, int(w), args.rows, args.changes, args.rounds) for w in args.widths.split(",")]
    report = {"rows": args.rows, "changes": args.changes, "rounds": args.rounds,
              "interpreted_records": lspark.interpreted_records(), "widths": results}
    print(json.dumps(report, indent=2))
    failures = [f for r in results for f in r["failures"]]
    for f in failures:
        print("FAILED:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

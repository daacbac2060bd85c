"""Rules benchmark: 10 vs 10,000 table rules over the same change records.

Both cases build their rules from specs (compilation counted), evaluate them with the
rules engine over the same Delta table of N records spread over T tables, and force
every output column through a no-op sink. Runs alternate (small, large, small, large,
…) in one session, so the ratio of medians is meaningful on a noisy machine. A third
figure evaluates the 10 rules as per-row Columns (``Client.discard_reason``) as a
reference point. Usage: ``python bench/rules.py [--records N] [--tables T] [--rules R]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import functions as F  # noqa: E402

from lakestreams.config import ClientSpec, RuleSpec  # noqa: E402
from lakestreams.spark import build_session  # noqa: E402
from silver.rules import build_clients, evaluate  # noqa: E402


def make_records(spark, n: int, tables: int, path: str) -> None:
    """N row LCRs over T tables of schema HR (1% tagged, a few from a second source)."""
    df = spark.range(n).select(
        F.when(F.col("id") % 97 == 0, "DBS2.EXAMPLE.COM").otherwise("DBS1.EXAMPLE.COM").alias("source_database"),
        F.when(F.col("id") % 3 == 0, "UPDATE").otherwise("INSERT").alias("command_type"),
        F.lit("HR").alias("object_owner"),
        F.format_string("T%05d", F.col("id") % tables).alias("object_name"),
        F.lit(None).cast("string").alias("object_type"),
        F.lit(None).cast("string").alias("base_table_owner"),
        F.lit(None).cast("string").alias("base_table_name"),
        F.lit(None).cast("string").alias("ddl_text"),
        F.when(F.col("id") % 100 == 0, "01").alias("tag"),
        F.when(F.col("id") % 3 == 0, F.parse_json(F.format_string('{"ID": %d, "V": "a"}', F.col("id")))).alias(
            "old_values"
        ),
        F.parse_json(F.format_string('{"ID": %d, "V": "b", "N": %d}', F.col("id"), F.col("id") % 1000)).alias(
            "new_values"
        ),
    )
    df.write.format("delta").mode("overwrite").save(path)


def table_rules(count: int, tables: int) -> list[RuleSpec]:
    """Table rules for the T tables that have records, then for tables that have none."""
    return [
        RuleSpec("TABLE", "HR", f"T{i:05d}", source_database="DBS1.EXAMPLE.COM") for i in range(count)
    ]


def run_case(spark, path: str, count: int, tables: int, per_row: bool = False) -> tuple[float, int]:
    start = time.perf_counter()
    clients = build_clients([ClientSpec("apply", "apply", rules=tuple(table_rules(count, tables)))])
    records = spark.read.format("delta").load(path)
    if per_row:
        out = records.withColumn("_discard", clients[0].discard_reason())
    else:
        out = evaluate(records, clients)
    out.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - start
    kept = out.where("_discard IS NULL").count()
    return elapsed, kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--rules", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakestreams-rules-bench-"))
    try:
        spark = build_session(work / "warehouse", app_name="lakestreams-rules-bench")
        path = str(work / "records")
        make_records(spark, args.records, args.tables, path)
        run_case(spark, path, args.tables, args.tables)  # warm-up: JIT, Delta log, codegen
        small, large, per_row = [], [], []
        kept = {}
        for _ in range(args.repeat):
            t, kept["small"] = run_case(spark, path, args.tables, args.tables)
            small.append(t)
            t, kept["large"] = run_case(spark, path, args.rules, args.tables)
            large.append(t)
            t, kept["per_row"] = run_case(spark, path, args.tables, args.tables, per_row=True)
            per_row.append(t)
        assert kept["small"] == kept["large"] == kept["per_row"], kept
        s, lg = statistics.median(small), statistics.median(large)
        print(json.dumps({
            "records": args.records,
            "tables": args.tables,
            "kept": kept["small"],
            f"rules_{args.tables}_s": round(s, 2),
            f"rules_{args.rules}_s": round(lg, 2),
            "ratio": round(lg / s, 3),
            f"rules_{args.tables}_per_row_columns_s": round(statistics.median(per_row), 2),
            "runs_small_s": [round(x, 2) for x in small],
            "runs_large_s": [round(x, 2) for x in large],
        }, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What deletion vectors cost a read: the same filtered count on two copies of one table,
one with ``delta.enableDeletionVectors`` on and one without, neither holding a vector.

Delta plans every scan of a table with the feature on through ``PreprocessTableWithDVs``,
which lists the scan's files to see whether any has a vector; a table without the feature
skips that. On a small replica this fixed cost per read is what the plan pays for each
busy target in every conflict round (``gold.structure.DELETION_VECTOR_BYTES``).

Each round reads both tables, in alternating order, and records per read its Spark jobs
and seconds (the first round warms the session and is not counted). Reported: the medians
per table and their ratio. Exits 1 if the two counts differ.
Usage: ``python bench/dv_reads.py [--rows N] [--rounds R]``.
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

from common import last_job_id  # noqa: E402

from lakestreams.spark import build_session  # noqa: E402

TABLES = {"bench_dv_off": "false", "bench_dv_on": "true"}


def read(spark, table: str, tag: str) -> tuple[int, float, int]:
    """A filtered count of ``table``: its Spark jobs, seconds and result."""
    before = last_job_id(spark, f"{tag}.a")
    start = time.perf_counter()
    n = spark.table(table).where("id % 7 = 1").count()
    seconds = time.perf_counter() - start
    return last_job_id(spark, f"{tag}.b") - before - 1, seconds, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench_dv_reads_"))
    try:
        spark = build_session(folder / "warehouse", "bench_dv_reads", shuffle_partitions=2)
        rows = spark.range(args.rows).selectExpr("id", "cast(id AS string) AS v")
        for table, on in TABLES.items():
            rows.write.format("delta").option("delta.enableDeletionVectors", on).saveAsTable(table)
        seen: dict[str, list[tuple[int, float]]] = {t: [] for t in TABLES}
        counts = set()
        for r in range(args.rounds + 1):
            for table in (TABLES if r % 2 else reversed(TABLES)):
                jobs, seconds, n = read(spark, table, f"{table}.{r}")
                counts.add(n)
                if r:
                    seen[table].append((jobs, seconds))
        report = {"rows": args.rows, "rounds": args.rounds, "counts_agree": len(counts) == 1}
        for table, runs in seen.items():
            report[table] = {"jobs": statistics.median(j for j, _ in runs),
                             "seconds": round(statistics.median(s for _, s in runs), 3),
                             "seconds_range": [round(min(s for _, s in runs), 3), round(max(s for _, s in runs), 3)]}
        report["seconds_on_over_off"] = round(report["bench_dv_on"]["seconds"] / report["bench_dv_off"]["seconds"], 2)
        print(json.dumps(report, indent=2))
        spark.stop()
        return 0 if report["counts_agree"] else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

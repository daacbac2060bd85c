"""End-to-end benchmark: N change records from landing to gold, beside a plain-Spark floor.

The floor reads the same files with plain Spark, appends them to one bronze table and
writes the same final tables with one MERGE each (``bench/floor.py``: per key the last
operation and each column's last carried value; no rules, ledger, transactions, typing
checks or accounting). Both run in the same process and session, so their ratio is meaningful
on a noisy machine. Usage: ``python bench/e2e.py [--records N] [--tables T] [--files F]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import bench_channel, generator_args, gold_rows, timed_stages  # noqa: E402
from floor import apply_files, create_replicas  # noqa: E402

from lakestreams.sample import generate_bench  # noqa: E402
from lakestreams.spark import build_session, ensure_schemas  # noqa: E402
from lakestreams.timing import TOTALS  # noqa: E402


def floor(spark, files: Path, tables: int, schema: str) -> float:
    """Plain Spark, as ``bench/floor.py`` applies a run: the files appended to one bronze
    table, then per table its changes folded per key and one MERGE."""
    start = time.perf_counter()
    names = [f"t{i:02d}" for i in range(1, tables + 1)]
    create_replicas(spark, schema, names)
    apply_files(spark, schema, sorted(str(f) for f in files.glob("*.jsonl")), names, 1)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    generator_args(ap, records=1_000_000, files=20, out="out")
    args = ap.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    counts = generate_bench(out / "landing", records=args.records, tables=args.tables, files=args.files)
    gen_s = time.perf_counter() - t0
    landed = counts["records"]
    ch = bench_channel(out, {"schema": "bench"})
    spark = build_session(ch.storage.warehouse, app_name="lakestreams-bench")
    ensure_schemas(spark, ch.storage)
    stages = timed_stages(spark, ch)
    total = sum(stages.values())
    floor_s = floor(spark, out / "landing" / "bench", args.tables, "bench_floor")
    rows = gold_rows(spark, ch, args.tables)
    correct = rows == {k: v for k, v in counts["final_rows"].items()}
    result = {
        "records": landed,
        "generate_s": round(gen_s, 1),
        "stages_s": {k: round(v, 1) for k, v in stages.items()},
        "records_per_s": {k: round(landed / v) for k, v in stages.items()},
        "total_s": round(total, 1),
        "total_records_per_s": round(landed / total),
        "floor_s": round(floor_s, 1),
        "floor_records_per_s": round(landed / floor_s),
        "ratio_total_to_floor": round(total / floor_s, 2),
        "gold_rows_match_generator": correct,
        "steps_s": {k: round(v, 1) for k, v in sorted(TOTALS.items())},
    }
    print(json.dumps(result, indent=2))
    if not correct:
        print(f"gold rows {rows} != generator {counts['final_rows']}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

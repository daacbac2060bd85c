"""Bronze parse cost of the capture formats: the same changes as native, Debezium and
GoldenGate JSON lines.

Each round writes ``--records`` changes per format (the same inserts and updates, in
transactions of ``--per-txn`` changes) as a text file, then parses each file into bronze
rows and quarantine reasons (``parse_lines`` → ``to_bronze``/``to_quarantine``, written to
the ``noop`` sink so the cost is parsing, not Delta). Native is the baseline, measured in
the same session in every round; the figures are seconds per format and their ratio to
native (median of the rounds), and that every line became a bronze row.
Usage: ``python bench/formats.py [--records N] [--per-txn K] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import functions as F  # noqa: E402

from bronze.records import parse_lines, to_bronze, to_quarantine  # noqa: E402
from lakestreams.config import Landing  # noqa: E402
from lakestreams.spark import build_session  # noqa: E402

SRC = "DBS1.EXAMPLE.COM"
FORMATS = ("native", "debezium", "goldengate")


def lines(fmt: str, n: int, per_txn: int):
    """``n`` changes (every third an update) as lines of ``fmt``, with the format's
    transaction markers (native COMMIT, Debezium BEGIN/END)."""
    for t in range(0, n, per_txn):
        txid, commit = f"1.{t}.7", 1000 + t * 2 + per_txn
        count = min(per_txn, n - t)
        if fmt == "debezium":
            yield {"status": "BEGIN", "id": txid, "ts_ms": 1704067200000, "event_count": None}
        for i in range(count):
            k = t + i
            op = "u" if k % 3 == 2 else "c"
            row = {"ID": k, "NAME": f"name {k}", "AMOUNT": k * 1.5, "NOTE": None}
            before = {"ID": k - 1, "NAME": f"name {k - 1}"} if op == "u" else None
            scn = 1000 + t * 2 + i
            if fmt == "native":
                yield {"source_database": SRC, "command_type": "UPDATE" if op == "u" else "INSERT",
                       "object_owner": "HR", "object_name": "T", "old_values": before, "new_values": row,
                       "transaction_id": txid, "scn": scn, "commit_scn": commit, "position": i + 1,
                       "commit_time": "2024-01-01T00:00:00Z", "tag": None}
            elif fmt == "debezium":
                yield {"schema": {"type": "struct", "fields": []}, "payload": {
                    "before": before, "after": row, "op": op, "ts_ms": 1704067200000,
                    "source": {"connector": "oracle", "db": "ORCLPDB1", "schema": "HR", "table": "T",
                               "txId": txid, "scn": str(scn), "commit_scn": str(commit), "ts_ms": 1704067200000,
                               "snapshot": "false"},
                    "transaction": {"id": txid, "total_order": i + 1, "data_collection_order": i + 1}}}
            else:
                flags = {f"{c}_isMissing": False for c in row}
                yield {"table": "ORCLPDB1.HR.T", "op_type": "U" if op == "u" else "I",
                       "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{scn:020d}", "csn": str(commit), "xid": txid,
                       **({"before": before} if before else {}), "after": {**row, **flags}}
        if fmt == "native":
            yield {"source_database": SRC, "command_type": "COMMIT", "transaction_id": txid, "commit_scn": commit,
                   "commit_time": "2024-01-01T00:00:00Z"}
        elif fmt == "debezium":
            yield {"status": "END", "id": txid, "ts_ms": 1704067200000, "event_count": count}


def parse_seconds(spark, path: Path, fmt: str) -> tuple[float, int, int]:
    landing = Landing("l", path.parent, fmt, "whole_file" if fmt == "goldengate" else "commit_records",
                      source_database=None if fmt == "native" else SRC)
    df = (spark.read.text(str(path)).select(F.col("value").alias("raw"), F.lit(str(path)).alias("_source_file"))
          .withColumns({"_landing": F.lit("l"), "_txn_mode": F.lit(landing.transactions),
                        "_ingest_batch": F.lit(0).cast("bigint"), "_ingested_at": F.current_timestamp()}))
    start = time.perf_counter()
    parsed = parse_lines(df, landing).persist()
    to_bronze(parsed).write.format("noop").mode("overwrite").save()
    to_quarantine(parsed).write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - start
    # Metadata of the run: two counts, not rows.
    tally = parsed.agg(F.count_if(F.col("_reason").isNull()), F.count_if(F.col("_reason").isNotNull())).first()
    parsed.unpersist()
    return seconds, int(tally[0]), int(tally[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--per-txn", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakestreams-bench-formats-"))
    spark = build_session(work / "wh", app_name="lakestreams-bench-formats")
    files = {}
    for fmt in FORMATS:
        files[fmt] = work / fmt / "changes.jsonl"
        files[fmt].parent.mkdir(parents=True)
        with files[fmt].open("w") as f:
            for rec in lines(fmt, args.records, args.per_txn):
                f.write(json.dumps(rec) + "\n")
    parse_seconds(spark, files["native"], "native")  # warm-up
    runs: dict[str, list[float]] = {fmt: [] for fmt in FORMATS}
    counts = {}
    for _ in range(args.rounds):
        for fmt in FORMATS:
            seconds, good, bad = parse_seconds(spark, files[fmt], fmt)
            runs[fmt].append(seconds)
            counts[fmt] = (good, bad)
    base = statistics.median(runs["native"])
    for fmt in FORMATS:
        med = statistics.median(runs[fmt])
        good, bad = counts[fmt]
        print(f"{fmt:10s} lines {good + bad:8d}  bronze {good:8d}  quarantined {bad:3d}  "
              f"median {med:6.2f} s  ×native {med / base:4.2f}  rounds {[round(s, 2) for s in runs[fmt]]}")


if __name__ == "__main__":
    main()

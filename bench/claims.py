"""What the position check of bronze ingest costs (a record must not claim the
``(source_database, transaction_id, position)`` of a different record).

Two channels get the same bronze history (``--history`` native changes); then each round
lands the same new file (``--new`` changes of new transactions) in both and times
``run_bronze``: channel A checks positions, channel B has the check replaced by a no-op
(the baseline, same run, same data). A last file repeats a slice of the history (every
position already held, the payload comparison runs) and is timed on A.
Usage: ``python bench/claims.py [--history N] [--new M] [--rounds R]``.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from formats import lines  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import bronze.ingest as ingest  # noqa: E402
from lakestreams.config import channel_from_dict  # noqa: E402
from lakestreams.spark import build_session, ensure_schemas  # noqa: E402


def write(path: Path, n: int, prefix: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for rec in lines("native", n, 10):
            rec["transaction_id"] = f"{prefix}{rec['transaction_id']}"
            f.write(json.dumps(rec) + "\n")


def timed(spark, channel, check: bool) -> float:
    real = ingest.position_claims, ingest._holders
    if not check:
        ingest.position_claims = lambda rows, held: rows.withColumn("_claim_reason", F.lit(None).cast("string"))
        ingest._holders = lambda *args: None
    try:
        start = time.perf_counter()
        ingest.run_bronze(spark, channel)
        return time.perf_counter() - start
    finally:
        ingest.position_claims, ingest._holders = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--history", type=int, default=200_000)
    ap.add_argument("--new", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakestreams-bench-claims-"))
    spark = build_session(work / "wh", app_name="lakestreams-bench-claims")
    channels = {}
    for name in ("a", "b"):
        channels[name] = channel_from_dict({
            "name": "bench", "storage": {"warehouse": "wh", "state": f"state_{name}", "schema": f"claims_{name}"},
            "landing": [{"name": "src", "path": f"landing_{name}"}]}, work)
        ensure_schemas(spark, channels[name].storage)
        write(channels[name].landing[0].path / "history.jsonl", args.history, "h")
        timed(spark, channels[name], name == "a")
    runs: dict[str, list[float]] = {"a": [], "b": []}
    for r in range(args.rounds):
        for name in ("a", "b") if r % 2 == 0 else ("b", "a"):
            write(channels[name].landing[0].path / f"new_{r}.jsonl", args.new, f"n{r}.")
            runs[name].append(timed(spark, channels[name], name == "a"))
    write(channels["a"].landing[0].path / "again.jsonl", args.new, "h")
    held = timed(spark, channels["a"], True)
    bronze = spark.table(channels["a"].storage.table("bronze", "change_records").replace("`", ""))
    quarantine = spark.table(channels["a"].storage.table("bronze", "quarantine").replace("`", ""))
    # Metadata of the run: counts, not rows.
    rows, bad = bronze.count(), quarantine.count()
    a, b = statistics.median(runs["a"]), statistics.median(runs["b"])
    print(f"history {args.history} changes, new file {args.new} changes, {args.rounds} rounds")
    print(f"with position check   median {a:6.2f} s  rounds {[round(s, 2) for s in runs['a']]}")
    print(f"without (baseline)    median {b:6.2f} s  rounds {[round(s, 2) for s in runs['b']]}  ×{a / b:4.2f}")
    print(f"file of held positions      {held:6.2f} s  ×{held / b:4.2f}  (bronze {rows} rows, quarantined {bad})")


if __name__ == "__main__":
    main()

"""Incremental and late-record benchmark: what a run costs after a long history.

One generated change stream (``generate_bench``) of ``--files`` files, each 1% of it
when ``--files 100``. Two channels run in one process and session:

- **in order**: files 1..N-1 in one run (the full run), then a run with nothing new
  (idle), then file N (the 1% run). The figure: the 1% run above idle, as a share of
  the full run above idle.
- **late**: files 1..N-1 without some transactions of file N/2 (``--late`` of the 1%
  run's records), then file N and the held-back transactions in one run. The held-back
  records are late: later changes to their keys were applied a run before, and the
  changes that depend on them failed and wait in the error queue. The figure: that run
  against the in-order 1% run.

Both channels must end with the generator's final row counts and an empty error queue.
``--late 0`` runs the in-order channel only.
Each timed run reports its Spark jobs, Delta commits, slowest steps and CPU seconds
(``cpu_s``: the driver JVM's, of which JIT compiling and garbage-collection pauses, and
this Python process's; ``common.cpu_account``), when each stage and long step ran
(``phases_s``: ``common.phase_spans``) and what gold's MERGEs spent by Delta's own
metrics (``merges``: ``common.merge_metrics``).
Usage: ``python bench/incremental.py [--records N] [--tables T] [--files F] [--late S]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import (  # noqa: E402
    commit_files,
    cpu_account,
    generator_args,
    gold_rows,
    last_job_id,
    merge_metrics,
    phase_spans,
    queued,
    session_channel,
)

from lakestreams.pipeline import run_pipeline  # noqa: E402
from lakestreams.sample import generate_bench  # noqa: E402
from lakestreams.spark import build_session  # noqa: E402
from lakestreams.timing import TOTALS  # noqa: E402

#: The slowest steps of each timed run (seconds; threads overlap, so they may add up to more).
STEPS: dict[str, dict[str, float]] = {}
#: How many of a run's slowest steps it reports (LAKESTREAMS_BENCH_STEPS, default 10).
SHOWN_STEPS = int(os.environ.get("LAKESTREAMS_BENCH_STEPS", "10"))
#: Spark jobs and Delta commits of each timed run (what a run costs whatever its rows), and
#: which of its stages ran without generated code.
WORK: dict[str, dict] = {}


def timed_run(spark, channel, label: str) -> tuple[float, int]:
    before = dict(TOTALS)
    # The session's warehouse holds the channel's tables (and the other channel's, idle now).
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    jobs, commits_before = last_job_id(spark, f"{label}.a"), commit_files(warehouse)
    cpu_before = cpu_account(spark)
    start = time.perf_counter()
    with phase_spans() as spans:
        result = run_pipeline(spark, channel)
    elapsed = round(time.perf_counter() - start, 1)
    cpu_after = cpu_account(spark)
    committed = commit_files(warehouse) - commits_before
    WORK[label] = {"spark_jobs": last_job_id(spark, f"{label}.b") - jobs - 1,
                   "delta_commits": len(committed),
                   # Which stages ran without generated code (lakestreams.spark.interpreted).
                   "interpreted": {"silver": [r.interpreted for r in result.silver],
                                   "plan": bool(result.plan and result.plan.interpreted)},
                   # Where the run's seconds went (bench.common.cpu_account).
                   "cpu_s": {k: round(cpu_after[k] - cpu_before[k], 1) for k in cpu_after},
                   # When each stage and long step ran, and what gold's MERGEs spent.
                   "phases_s": spans, "merges": merge_metrics(committed)}
    spent = sorted(((k, v - before.get(k, 0.0)) for k, v in TOTALS.items()), key=lambda kv: -kv[1])
    STEPS[label] = {k: round(v, 1) for k, v in spent[:SHOWN_STEPS] if v >= 0.05}
    return elapsed, result.retried


def hold_back(lines: list[str], records: int) -> tuple[list[str], list[str]]:
    """Split one file's lines: whole transactions of about ``records`` records held back
    (the file's first ones, so later changes in the history depend on them), the rest kept."""
    held, kept, txns = [], [], set()
    for line in lines:
        txn = json.loads(line)["transaction_id"]
        if txn in txns or len(held) < records:
            txns.add(txn)
            held.append(line)
        else:
            kept.append(line)
    return held, kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    generator_args(ap, records=200_000, files=100, out="out_incremental")
    ap.add_argument("--late", type=float, default=0.05, help="late records as a share of the 1%% run")
    args = ap.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    counts = generate_bench(out / "generated", records=args.records, tables=args.tables, files=args.files)
    files = sorted((out / "generated" / "bench").glob("changes_*.jsonl"))
    spark = build_session(out / "wh", app_name="lakestreams-bench-incremental")

    def land(schema: str, name: str, lines: list[str]) -> None:
        (out / schema / "landing" / "bench" / name).write_text("".join(lines))

    last_lines = files[-1].read_text().splitlines(keepends=True)
    # In order: the history, nothing new, then the last file.
    a = session_channel(spark, out, "inorder")
    for f in files[:-1]:
        shutil.copy(f, out / "inorder" / "landing" / "bench" / f.name)
    full_s, _ = timed_run(spark, a, "full")
    idle_s, _ = timed_run(spark, a, "idle")
    land("inorder", files[-1].name, last_lines)
    incr_s, _ = timed_run(spark, a, "one_file")
    figures = {
        "records": counts["records"],
        "files": len(files),
        "full_run_s": full_s,
        "idle_run_s": idle_s,
        "one_file_run_s": incr_s,
        "one_file_records": len(last_lines),
        "incremental_share_pct": round(100 * (incr_s - idle_s) / (full_s - idle_s), 1),
    }
    if args.late <= 0:  # --late 0: the in-order channel only
        correct = gold_rows(spark, a, args.tables) == counts["final_rows"] and queued(spark, a) == 0
        print(json.dumps({**figures, "gold_rows_match_generator_and_queues_empty": correct, "work": WORK, "slowest_steps_s": STEPS},
                         indent=2))
        sys.exit(0 if correct else 1)
    # Late: a middle file's first transactions land with the last file.
    b = session_channel(spark, out, "late")
    middle = files[len(files) // 2]
    held, kept = hold_back(middle.read_text().splitlines(keepends=True), int(args.late * len(last_lines)))
    for f in files[:-1]:
        if f != middle:
            shutil.copy(f, out / "late" / "landing" / "bench" / f.name)
    land("late", middle.name, kept)
    history_late_s, _ = timed_run(spark, b, "late_history")
    waiting = queued(spark, b)
    land("late", files[-1].name, last_lines)
    land("late", "late_records.jsonl", held)
    late_s, retried = timed_run(spark, b, "late")

    correct = all(gold_rows(spark, ch, args.tables) == counts["final_rows"] and queued(spark, ch) == 0 for ch in (a, b))
    print(json.dumps({
        **figures,
        "late_history_run_s": history_late_s,
        "late_records": len(held),
        "waiting_in_error_queue_before": waiting,
        "late_run_s": late_s,
        "late_run_records": len(last_lines) + len(held),
        "retried_transactions": retried,
        "late_vs_in_order": round(late_s / incr_s, 2),
        "gold_rows_match_generator_and_queues_empty": correct,
        "work": WORK,
        "slowest_steps_s": STEPS,
    }, indent=2))
    if not correct:
        sys.exit(1)


if __name__ == "__main__":
    main()

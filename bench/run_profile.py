"""Where a small incremental run's time goes: per run, per busy target, and with or
without a Spark job running.

Two channels in one process and session, over the same generator and the same volume per
table: **wide** (``--tables`` tables) and **narrow** (one table, ``1/--tables`` of the
records). Each takes the first ``--history`` of ``--files`` files in one run, then a run
with nothing new (idle). Then rounds alternate: one new file on the narrow channel (one
busy target, about ``records/files/tables`` records), one on the wide channel (every
target busy, ``--tables`` times the records). The figures (medians over ``--rounds``):

- the run with one busy target, the run with all busy, and the idle run;
- the cost of each busy target above the first: (all - one) / (tables - 1);
- the floor of a run with work: one busy target less that per-target cost;
- with the Spark UI on (``LAKESTREAMS_SPARK_CONF="spark.ui.enabled=true;
  spark.ui.retainedJobs=5000;spark.ui.retainedStages=8000"``), the seconds in which at
  least one Spark job ran, read from the UI's REST API; the rest of the run is the
  driver's own work between jobs (analysing and planning queries, Delta commits, dbt);
- with the UI on, the Spark jobs of a run by kind (the job's description, else the call
  site that started it, version numbers and table names left out), for one busy target,
  all busy, and each busy target beyond the first: which kinds of job a target adds.

Usage: ``python bench/run_profile.py [--records N] [--tables T] [--files F] [--history H] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import time
import urllib.request
from collections import Counter
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import bench_channel, last_job_id  # noqa: E402

from lakestreams.pipeline import run_pipeline  # noqa: E402
from lakestreams.sample import generate_bench  # noqa: E402
from lakestreams.spark import build_session, ensure_schemas  # noqa: E402


def _ui_time(text: str) -> float:
    return datetime.strptime(text.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def ui_jobs(spark, first: int, last: int, marks: tuple[str, ...] = ()) -> list[dict] | None:
    """Jobs ``first``..``last`` that succeeded, from the Spark UI's REST API, but those of the
    job groups ``marks`` (``last_job_id``'s marks); None with the UI off."""
    sc = spark.sparkContext
    if not sc.uiWebUrl:
        return None
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/jobs?status=succeeded"
    with urllib.request.urlopen(url) as response:  # the local driver's own UI
        return [j for j in json.load(response) if first <= j["jobId"] <= last and j.get("jobGroup") not in marks]


#: What varies between two jobs of one kind: a quoted name, a path, a number (a version, an
#: id); a Python call site's line number is kept.
_VARYING = re.compile(r"`[^`]*`|'[^']*'|file:\S+|/\S+/(?=[\w.]+\.py:)|(?<!\.py:)\b\d+\b")


def job_kind(job: dict) -> str:
    """A job's kind: its description (Delta and SQL set one), else its name (PySpark names
    a DataFrame action after the Python line that ran it), without what varies per table."""
    text = (job.get("description") or job.get("name") or "?").splitlines()[0][:160]
    return _VARYING.sub("…", text)


def job_kinds(jobs: list[dict] | None) -> dict[str, int] | None:
    """How many of ``jobs`` are of each kind."""
    return None if jobs is None else dict(Counter(job_kind(j) for j in jobs))


def job_seconds(jobs: list[dict] | None) -> float | None:
    """Seconds in which at least one of ``jobs`` ran (the union of their intervals)."""
    if jobs is None:
        return None
    spans = sorted((_ui_time(j["submissionTime"]), _ui_time(j["completionTime"]))
                   for j in jobs if "completionTime" in j)
    busy, end = 0.0, 0.0
    for start, stop in spans:
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    return round(busy, 1)


def timed_run(spark, channel, label: str) -> dict:
    first = last_job_id(spark, f"{label}.a") + 1
    start = time.perf_counter()
    run_pipeline(spark, channel)
    seconds = round(time.perf_counter() - start, 1)
    last = last_job_id(spark, f"{label}.b") - 1
    jobs = ui_jobs(spark, first, last, (f"{label}.a", f"{label}.b"))
    return {"seconds": seconds, "spark_jobs": last - first + 1, "job_seconds": job_seconds(jobs),
            "job_kinds": job_kinds(jobs)}


def lines(f: Path) -> int:
    """Records in a generated file (one per line)."""
    return len(f.read_text().splitlines())


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(values), 1) if values else None


def kinds_per_target(narrow: list[dict], wide: list[dict], tables: int, top: int = 25) -> list[dict] | None:
    """Per job kind, the median count of the runs with one busy target and with all busy,
    and what each busy target beyond the first adds; the ``top`` kinds by that, then by
    count. None with the UI off."""
    if any(r["job_kinds"] is None for r in narrow + wide):
        return None
    names = {k for r in narrow + wide for k in r["job_kinds"]}
    rows = []
    for k in names:
        one = statistics.median(r["job_kinds"].get(k, 0) for r in narrow)
        every = statistics.median(r["job_kinds"].get(k, 0) for r in wide)
        rows.append({"kind": k, "one_busy": one, "all_busy": every, "per_busy_target": round((every - one) / (tables - 1), 2)})
    return sorted(rows, key=lambda r: (-r["per_busy_target"], -r["all_busy"], r["kind"]))[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=40_000, help="records of the wide channel's stream")
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--history", type=int, default=20, help="files taken in the first run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out_run_profile"))
    args = ap.parse_args()
    if args.tables < 2 or args.history + args.rounds > args.files:
        ap.error("--tables must be at least 2, and --history + --rounds at most --files")
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    spark = build_session(out / "wh", app_name="lakestreams-bench-run-profile")
    shapes = {"narrow": (1, args.records // args.tables), "wide": (args.tables, args.records)}
    channels, files = {}, {}
    for name, (tables, records) in shapes.items():
        generate_bench(out / "generated" / name, records=records, tables=tables, files=args.files)
        files[name] = sorted((out / "generated" / name / "bench").glob("changes_*.jsonl"))
        ch = bench_channel(out / name, {"schema": name, "warehouse": "wh", "state": "state"})
        ensure_schemas(spark, ch.storage)
        landing = out / name / "landing" / "bench"
        landing.mkdir(parents=True, exist_ok=True)
        for f in files[name][: args.history]:
            shutil.copy(f, landing / f.name)
        channels[name] = ch
    history = {name: timed_run(spark, ch, f"{name}.history") for name, ch in channels.items()}
    idle = {name: timed_run(spark, ch, f"{name}.idle") for name, ch in channels.items()}
    rounds: dict[str, list[dict]] = {name: [] for name in shapes}
    for i in range(args.rounds):
        for name, ch in channels.items():
            f = files[name][args.history + i]
            shutil.copy(f, out / name / "landing" / "bench" / f.name)
            rounds[name].append({**timed_run(spark, ch, f"{name}.{i}"), "records": lines(f)})
    one, every = median(rounds["narrow"], "seconds"), median(rounds["wide"], "seconds")
    per_target = round((every - one) / (args.tables - 1), 2)
    # The rounds stop part-way through the stream (no final row counts to compare): every
    # change applied is what is checked, an empty error queue on both channels.
    queues_empty = all(
        spark.table(ch.storage.table("gold", "error_queue").replace("`", "")).count() == 0 for ch in channels.values())
    print(json.dumps({
        "tables": args.tables,
        "history_records": {n: sum(lines(f) for f in files[n][: args.history]) for n in shapes},
        "history_run_s": {n: r["seconds"] for n, r in history.items()},
        "idle_run_s": {n: r["seconds"] for n, r in idle.items()},
        "one_busy_target_run_s": one,
        "all_busy_run_s": every,
        "per_busy_target_s": per_target,
        "floor_of_a_run_with_work_s": round(one - per_target, 1),
        "spark_jobs": {"one_busy": median(rounds["narrow"], "spark_jobs"), "all_busy": median(rounds["wide"], "spark_jobs")},
        "seconds_with_a_job_running": {"one_busy": median(rounds["narrow"], "job_seconds"),
                                       "all_busy": median(rounds["wide"], "job_seconds")},
        "spark_jobs_by_kind": kinds_per_target(rounds["narrow"], rounds["wide"], args.tables),
        "rounds": {n: [{k: v for k, v in r.items() if k != "job_kinds"} for r in rs] for n, rs in rounds.items()},
        "error_queues_empty": queues_empty,
    }, indent=2))
    if not queues_empty:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Where a timed run's task time went, by the Spark SQL operation that ran the tasks.

Reads a Spark event log (``spark.eventLog.enabled=true``; a folder of a rolling log, its
``events_*`` parts plain or zstd-compressed, or one file) and takes the jobs between the
marks bench/common.py's ``last_job_id`` leaves around a timed run (``<label>.a`` and
``<label>.b``: ``one_file``, ``full``, ``idle``...). Every task of those jobs is put under
the SQL execution that started it, named by its description (Delta names its operations: a
MERGE's source materialisation, file filtering and rewrite are each a kind of their own),
else its root execution's, else the call that started it, with version numbers and numbers
of files left out. Reported per kind: jobs, tasks, the
tasks' summed run time, CPU time and deserialisation time (seconds), and the share of the
run's task CPU; then the run's wall time and totals. Task time summed over the run against
the cores' time over its wall shows how much of the run the tasks were, and so how much is
the driver's own work (analysing and planning queries, Delta's log, dbt, Python).
``--timeline MIN_S`` lists instead the run's SQL executions of at least that long, in order:
when each ran, for how long, in how many jobs, and how many others ran alongside it.

Usage: ``LAKESTREAMS_SPARK_CONF="spark.eventLog.enabled=true; spark.eventLog.dir=file:///tmp/ev"
python bench/one_file.py --out D``, then ``python bench/task_cpu.py /tmp/ev/<app folder>
[--label one_file] [--top 25 | --timeline 0.5]``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path


def event_lines(path: Path) -> Iterator[str]:
    """The log's lines, its parts in order (a rolling log names them events_<n>_<app>)."""
    parts = [path] if path.is_file() else sorted(
        path.glob("events_*"), key=lambda p: int(re.match(r"events_(\d+)", p.name).group(1)))
    if not parts:
        raise SystemExit(f"no event log at {path} (events_* parts or a file)")
    for part in parts:
        if part.suffix == ".zstd":
            text = subprocess.run(["zstd", "-dc", str(part)], check=True, capture_output=True, text=True).stdout
        else:
            text = part.read_text()
        yield from text.splitlines()


def kind(description: str) -> str:
    """An operation's kind: its first line, numbers of versions and files left out."""
    first = description.strip().splitlines()[0] if description.strip() else "?"
    first = re.sub(r"version: \d+", "version: N", first)
    return re.sub(r"Rewriting \d+ files", "Rewriting N files", first)[:90]


def attribute(lines: Iterator[str], label: str) -> tuple[dict[str, dict[str, float]], dict[str, float], list[dict]]:
    """Per kind of operation: jobs, tasks and task times of the run's jobs; the run's totals;
    and its SQL executions as spans (a root execution and those it started: its name, the
    first job's submission and the last job's end, in seconds from the run's start, and its
    jobs), in order of start. Jobs outside any execution are left out of the spans."""
    executions: dict[str, dict] = {}
    jobs: dict[int, dict] = {}
    stage_job: dict[int, int] = {}
    tasks: list[tuple[int, float, float, float]] = []
    for line in lines:
        e = json.loads(line)
        ev = e["Event"]
        if ev.endswith("SparkListenerSQLExecutionStart"):
            details = (e.get("details") or "").splitlines()
            executions[str(e["executionId"])] = {
                "root": str(e.get("rootExecutionId", e["executionId"])),
                "name": e.get("description") or (details[0] if details else "?"),
            }
        elif ev == "SparkListenerJobStart":
            p = e.get("Properties") or {}
            jobs[e["Job ID"]] = {"ex": p.get("spark.sql.execution.id"), "start": e["Submission Time"],
                                 "mark": (p.get("spark.job.description") or "") + (p.get("spark.jobGroup.id") or ""),
                                 "site": p.get("callSite.short") or "?"}
            for s in e["Stage IDs"]:
                stage_job[s] = e["Job ID"]
        elif ev == "SparkListenerJobEnd":
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif ev == "SparkListenerTaskEnd":
            m = e.get("Task Metrics") or {}
            tasks.append((e["Stage ID"], m.get("Executor Run Time", 0) / 1000,
                          m.get("Executor CPU Time", 0) / 1e9, m.get("Executor Deserialize Time", 0) / 1000))
    marks = {tag: [j for j, v in jobs.items() if tag in v["mark"]] for tag in (f"{label}.a", f"{label}.b")}
    if not all(marks.values()):
        raise SystemExit(f"no marks {label}.a and {label}.b in the log: was the run timed by bench/incremental's timed_run?")
    lo, hi = max(marks[f"{label}.a"]), min(marks[f"{label}.b"])

    def name_of(job: dict) -> str:
        ex = executions.get(job["ex"] or "")
        if ex is None:
            return kind(job["site"])
        return kind(executions.get(ex["root"], ex)["name"] if ex["name"] in ("", "?") else ex["name"])

    by_kind: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for j, job in jobs.items():
        if lo < j < hi:
            by_kind[name_of(job)]["jobs"] += 1
    for stage, run_s, cpu_s, deser_s in tasks:
        j = stage_job.get(stage)
        if j is None or not lo < j < hi:
            continue
        k = by_kind[name_of(jobs[j])]
        k["tasks"] += 1
        k["run_s"] += run_s
        k["cpu_s"] += cpu_s
        k["deserialize_s"] += deser_s
    totals = {f: sum(k[f] for k in by_kind.values()) for f in ("jobs", "tasks", "run_s", "cpu_s", "deserialize_s")}
    t0 = jobs[lo]["end"]
    totals["wall_s"] = (jobs[hi]["start"] - t0) / 1000
    spans: dict[str, dict] = {}
    for j, job in jobs.items():
        ex = executions.get(job["ex"] or "")
        if not lo < j < hi or ex is None:
            continue
        root = executions.get(ex["root"], ex)["name"]
        span = spans.setdefault(ex["root"], {"name": kind(root) if root not in ("", "?") else name_of(job),
                                             "start": job["start"], "end": job["start"], "jobs": 0})
        span["start"] = min(span["start"], job["start"])  # jobs are read in the log's order, not by start
        span["end"] = max(span["end"], job.get("end", job["start"]))
        span["jobs"] += 1
    ordered = sorted(spans.values(), key=lambda s: s["start"])
    for s in ordered:
        s["start"], s["end"] = (s["start"] - t0) / 1000, (s["end"] - t0) / 1000
    return by_kind, totals, ordered


def print_timeline(spans: list[dict], min_s: float) -> None:
    """The spans of at least ``min_s`` seconds: start, length, jobs, how many other spans ran
    alongside at some point (a few at once on a two-core machine each take longer), and the
    root execution's name (its description, else the call that started it)."""
    print(f"{'start_s':>7} {'len_s':>6} {'jobs':>4} {'along':>5}  operation")
    for s in spans:
        if s["end"] - s["start"] < min_s:
            continue
        along = sum(1 for o in spans if o is not s and o["start"] < s["end"] and o["end"] > s["start"])
        print(f"{s['start']:7.1f} {s['end'] - s['start']:6.2f} {s['jobs']:4d} {along:5d}  {s['name']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", type=Path, help="event log folder (a rolling log) or file")
    ap.add_argument("--label", default="one_file", help="the timed run's label (its marks <label>.a/.b)")
    ap.add_argument("--top", type=int, default=25, help="kinds shown, most task CPU first")
    ap.add_argument("--timeline", type=float, metavar="MIN_S",
                    help="list instead the run's SQL executions of at least MIN_S seconds, in order of start")
    args = ap.parse_args()
    by_kind, totals, spans = attribute(event_lines(args.log), args.label)
    if args.timeline is not None:
        print_timeline(spans, args.timeline)
    else:
        rows = sorted(by_kind.items(), key=lambda kv: -kv[1]["cpu_s"])
        print(f"{'jobs':>5} {'tasks':>6} {'run_s':>7} {'cpu_s':>7} {'deser_s':>7} {'cpu%':>5}  operation")
        for name, k in rows[: args.top]:
            share = 100 * k["cpu_s"] / totals["cpu_s"] if totals["cpu_s"] else 0.0
            print(f"{k['jobs']:5.0f} {k['tasks']:6.0f} {k['run_s']:7.1f} {k['cpu_s']:7.1f} {k['deserialize_s']:7.1f} "
                  f"{share:5.1f}  {name}")
    print(json.dumps({k: round(v, 1) for k, v in totals.items()}))


if __name__ == "__main__":
    main()

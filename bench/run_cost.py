"""Fixed cost of a pipeline run: Spark jobs, Delta commits and seconds of a small run.

A run's cost on little data is its Spark jobs and Delta commits, not its rows: this is what
the test suite pays per pipeline run and what every idle table of a large channel adds.
Each round lands ``--records`` generated records over ``--tables`` tables as a new channel
and runs it (the first run of a channel), then runs it again with nothing new (idle).
The baseline, measured in the same session between rounds: a one-row Delta append.
The figures: per run, Spark jobs, Delta commits and seconds, also as one-row appends, and the
seconds of each timed step (the median over rounds).

Beside it, the same append keyed as every stage writes (``lakestreams.delta_io.append``, an
app id and version per write): what the exactly-once key costs a write. Delta answers the
key's check from the table's full state, which it computes first (Spark jobs of their own),
where a plain append needs none. Each round then repeats its last key, which must commit
nothing (the benchmark stops otherwise).

``--compare key=value`` (repeatable) measures session settings against the defaults in the
same process: rounds alternate between the defaults and the settings (set with
``spark.conf.set``, so only runtime SQL settings qualify), and the report gives both and
their ratio.
Usage: ``python bench/run_cost.py [--records N] [--tables T] [--rounds R] [--compare K=V]``.
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

from common import bench_channel, commits, gold_rows, last_job_id  # noqa: E402

from lakestreams.delta_io import append as keyed_append  # noqa: E402
from lakestreams.pipeline import run_pipeline  # noqa: E402
from lakestreams.sample import generate_bench  # noqa: E402
from lakestreams.spark import build_session, extra_spark_conf  # noqa: E402
from lakestreams.timing import TOTALS  # noqa: E402

#: The keyed baseline's table, in the session's default schema.
KEYED_TABLE = "bench_run_cost_keyed"


def measured(spark, fn, tag: str, folder: Path) -> dict:
    before_jobs, before_commits = last_job_id(spark, f"{tag}.a"), commits(folder)
    before_steps = dict(TOTALS)
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    steps = {k: v - before_steps.get(k, 0.0) for k, v in TOTALS.items() if v - before_steps.get(k, 0.0) > 0}
    return {"seconds": seconds, "jobs": last_job_id(spark, f"{tag}.b") - before_jobs - 1,
            "commits": commits(folder) - before_commits, "steps": steps}


def _summary(rows: dict[str, list[dict]], unit: float) -> dict:
    report = {}
    for kind in ("first", "idle"):
        runs = rows[kind]
        seconds = statistics.median(x["seconds"] for x in runs)
        report[f"{kind}_run"] = {"seconds": round(seconds, 1), "in_appends": round(seconds / unit, 1),
                                 "jobs": statistics.median(x["jobs"] for x in runs),
                                 "commits": statistics.median(x["commits"] for x in runs),
                                 "steps": {k: round(statistics.median(x["steps"].get(k, 0.0) for x in runs), 2)
                                           for k in sorted({k for x in runs for k in x["steps"]})}}
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--tables", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out_run_cost"))
    ap.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    try:
        settings = {k: v for pair in args.compare for k, v in extra_spark_conf(pair, "--compare").items()}
    except ValueError as e:
        raise SystemExit(str(e)) from None
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    spark = build_session(out / "warehouse", app_name="lakestreams-bench-run-cost")
    append = spark.range(1).withColumnRenamed("id", "n")
    append.write.format("delta").save((out / "one_row").as_posix())
    # A catalog table, as the stages write: the warehouse's folder of it counts its commits.
    append.write.format("delta").saveAsTable(KEYED_TABLE)
    keyed_folder = out / "warehouse" / KEYED_TABLE
    variants = ["default", "compared"] if settings else ["default"]
    defaults = {k: spark.conf.get(k, None) for k in settings}
    rows = {v: {"first": [], "idle": [], "append": [], "keyed": []} for v in variants}
    # Round 0 warms the JVM up and is not counted; with --compare, rounds alternate.
    for r in range(args.rounds * len(variants) + 1):
        variant = variants[r % len(variants)]
        for k, v in (settings if variant == "compared" else defaults).items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
        folder = out / f"round{r}"
        generate_bench(folder / "landing", records=args.records, tables=args.tables, files=1)
        channel = bench_channel(folder, {"warehouse": "wh", "state": "state", "schema": f"cost{r}"})
        first = measured(spark, lambda ch=channel: run_pipeline(spark, ch), f"first{r}", out)
        idle = measured(spark, lambda ch=channel: run_pipeline(spark, ch), f"idle{r}", out)
        appends = [measured(spark, lambda: append.write.format("delta").mode("append").save((out / "one_row").as_posix()),
                            f"append{r}.{i}", out / "one_row") for i in range(5)]
        def keyed_write(version: int, tag: str) -> dict:
            return measured(spark, lambda: keyed_append(append, KEYED_TABLE, "bench.keyed", version), tag, keyed_folder)

        keyed = [keyed_write(r * 10 + i, f"keyed{r}.{i}") for i in range(5)]
        again = keyed_write(r * 10 + 4, f"keyed{r}.again")  # the last key again: nothing to commit
        assert [k["commits"] for k in keyed] == [1] * 5 and again["commits"] == 0, "a keyed append did not commit exactly once"
        assert sum(gold_rows(spark, channel, args.tables).values()) > 0, "the run applied nothing"
        if r:
            rows[variant]["first"].append(first)
            rows[variant]["idle"].append(idle)
            rows[variant]["append"].extend(appends)
            rows[variant]["keyed"].extend(keyed)
    unit = statistics.median(a["seconds"] for a in rows["default"]["append"])
    report = {"records": args.records, "tables": args.tables, "rounds": args.rounds,
              "one_row_append": {"seconds": round(unit, 3),
                                 "jobs": statistics.median(a["jobs"] for a in rows["default"]["append"])},
              "keyed_one_row_append": {
                  "seconds": round(statistics.median(a["seconds"] for a in rows["default"]["keyed"]), 3),
                  "jobs": statistics.median(a["jobs"] for a in rows["default"]["keyed"])},
              **_summary(rows["default"], unit)}
    if settings:
        compared = _summary(rows["compared"], unit)
        report["compared"] = {"settings": settings, **compared,
                              "one_row_append_seconds": round(statistics.median(
                                  a["seconds"] for a in rows["compared"]["append"]), 3),
                              "keyed_one_row_append_seconds": round(statistics.median(
                                  a["seconds"] for a in rows["compared"]["keyed"]), 3)}
        report["ratio_compared_to_default"] = {
            kind: round(compared[kind]["seconds"] / report[kind]["seconds"], 2) for kind in ("first_run", "idle_run")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

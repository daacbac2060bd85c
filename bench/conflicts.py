"""Conflict detection benchmark: the apply with value conflict detection on and off.

The same generated change stream (old values always match the history, so no conflict
is found: this measures the cost of looking) is run end to end through two channels in
one process and session: one with the default detection (every non-key column of every
UPDATE and DELETE compared with the row the previous change left), one with
``compare_old_values`` off for every column, where the plan skips the comparison. The
gold stage (plan + dbt apply) is compared; runs alternate to spread the machine's noise.
A first run of each mode, not counted, warms the JVM (``--warmup 0`` leaves it out): the
process's first pipeline run compiles and loads most of what the others reuse, and
counted, it would make whichever mode runs first look slower.
Usage: ``python bench/conflicts.py [--records N] [--tables T] [--files F] [--rounds R] [--warmup W]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import bench_channel, generator_args, gold_rows, timed_stages  # noqa: E402

from lakestreams.sample import BENCH_OWNER, generate_bench  # noqa: E402
from lakestreams.spark import build_session, ensure_schemas  # noqa: E402
from lakestreams.timing import TOTALS  # noqa: E402


def run(spark, out: Path, schema: str, tables: int, detect: bool) -> dict:
    compare = [] if detect else [
        {"table": f"{BENCH_OWNER}.T{i:02d}", "columns": "*", "operation": "*", "compare": False}
        for i in range(1, tables + 1)
    ]
    ch = bench_channel(out, {"schema": schema, "warehouse": f"wh_{schema}", "state": f"state_{schema}"},
                       compare_old_values=compare)
    ensure_schemas(spark, ch.storage)
    before = dict(TOTALS)
    stages = {k: round(v, 1) for k, v in timed_stages(spark, ch).items()}
    steps = {k: round(v - before.get(k, 0.0), 1) for k, v in sorted(TOTALS.items()) if k.startswith(("plan.", "gold."))}
    return {"stages_s": stages, "steps_s": steps, "rows": gold_rows(spark, ch, tables)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    generator_args(ap, records=200_000, files=10, out="out_conflicts")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1, help="uncounted runs of each mode before the rounds")
    args = ap.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    counts = generate_bench(out / "landing", records=args.records, tables=args.tables, files=args.files)
    spark = build_session(out / "wh", app_name="lakestreams-bench-conflicts")
    for w in range(args.warmup):
        for mode in ("off", "on"):
            run(spark, out, f"cd_warm_{mode}_{w}", args.tables, mode == "on")
    results: dict[str, list[dict]] = {"off": [], "on": []}
    for r in range(args.rounds):
        for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
            results[mode].append(run(spark, out, f"cd_{mode}_{r}", args.tables, mode == "on"))
    correct = all(x["rows"] == counts["final_rows"] for runs in results.values() for x in runs)
    gold = {m: sum(x["stages_s"]["gold"] for x in runs) / len(runs) for m, runs in results.items()}
    print(json.dumps({
        "records": counts["records"],
        "rounds": args.rounds,
        "warmup_runs_per_mode": args.warmup,
        "gold_s_detection_off": round(gold["off"], 1),
        "gold_s_detection_on": round(gold["on"], 1),
        "detection_overhead_pct": round(100 * (gold["on"] / gold["off"] - 1), 1),
        "gold_rows_match_generator": correct,
        "runs": results,
    }, indent=2))
    if not correct:
        sys.exit(1)


if __name__ == "__main__":
    main()

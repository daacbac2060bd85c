"""The 1% run of bench/incremental.py, again and again from one saved history.

For comparing two versions of the incremental path without paying the history run each
time. ``--prepare`` generates the change stream, runs its history (every file but the last)
and an idle run, as bench/incremental.py's in-order channel does, and saves the folder
(``OUT`` to ``OUT.history``). Each later call restores ``OUT`` from that copy, warms the
JVM with a small channel of its own (two runs, of the history's first two files), then
times an idle run and the run of the last file. It ends by checking gold's row counts
against the generator and the error queue for emptiness, and exits 1 if either fails.

One 1% run per process: Delta keeps table state in the JVM, so a restored folder is read
by a new process only. Give every call the ``--out`` of ``--prepare``: bronze's stream
checkpoint names the landing files by their full path. To compare two checkouts, alternate them on the same saved
history, for example ``python A/bench/one_file.py --out D; python B/bench/one_file.py
--out D`` twice; the machine's noise shows in the spread of each side.
Usage: ``python bench/one_file.py --prepare [--records N] [--tables T] [--files F] [--out D]``,
then ``python bench/one_file.py [--out D]`` (the generator's options count with ``--prepare``
only: later calls run what it saved).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import generator_args, gold_rows, queued, session_channel  # noqa: E402
from incremental import STEPS, WORK, timed_run  # noqa: E402

from lakestreams.pipeline import run_pipeline  # noqa: E402
from lakestreams.sample import generate_bench  # noqa: E402
from lakestreams.spark import build_session  # noqa: E402

#: What ``--prepare`` saves beside the copy: the generator's final rows and the history's runs.
SAVED = "prepared.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    generator_args(ap, records=1_000_000, files=100, out="out_one_file")
    ap.add_argument("--prepare", action="store_true", help="run the history once and save it")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    saved = Path(f"{out}.history")
    if args.prepare:
        shutil.rmtree(out, ignore_errors=True)
        counts = generate_bench(out / "generated", records=args.records, tables=args.tables, files=args.files)
    elif not (saved / SAVED).is_file():
        sys.exit(f"no saved history at {saved}: run with --prepare first")
    else:
        shutil.rmtree(out, ignore_errors=True)
        # A copy that keeps the files' times, as the history run left them.
        subprocess.run(["cp", "-a", str(saved), str(out)], check=True)
    files = sorted((out / "generated" / "bench").glob("changes_*.jsonl"))
    spark = build_session(out / "wh", app_name="lakestreams-bench-one-file")
    a = session_channel(spark, out, "inorder")
    landing = out / "inorder" / "landing" / "bench"
    if args.prepare:
        for f in files[:-1]:
            shutil.copy(f, landing / f.name)
        full_s, _ = timed_run(spark, a, "full")
        idle_s, _ = timed_run(spark, a, "idle")
        prepared = {"final_rows": counts["final_rows"], "tables": args.tables, "history_run_s": full_s,
                    "history_idle_run_s": idle_s, "work": WORK, "slowest_steps_s": STEPS}
        (out / SAVED).write_text(json.dumps(prepared, indent=2))
        spark.stop()
        shutil.rmtree(saved, ignore_errors=True)
        subprocess.run(["cp", "-a", str(out), str(saved)], check=True)
        print(json.dumps({"saved": str(saved), **prepared}, indent=2))
        return
    prepared = json.loads((out / SAVED).read_text())
    # The JVM warmed as a history run would warm it, on a channel of its own.
    warm = session_channel(spark, out, "warm")
    for f in files[:2]:
        shutil.copy(f, out / "warm" / "landing" / "bench" / f.name)
        run_pipeline(spark, warm)
    idle_s, _ = timed_run(spark, a, "idle")
    shutil.copy(files[-1], landing / files[-1].name)
    one_s, _ = timed_run(spark, a, "one_file")
    correct = gold_rows(spark, a, prepared["tables"]) == prepared["final_rows"] and queued(spark, a) == 0
    print(json.dumps({
        "idle_run_s": idle_s,
        "one_file_run_s": one_s,
        "one_file_records": len(files[-1].read_text().splitlines()),
        # No share of it: that run was another process, maybe in another hour
        # (bench/incremental.py measures the share within one run).
        "history_run_s": prepared["history_run_s"],
        "gold_rows_match_generator_and_queues_empty": correct,
        "work": WORK,
        "slowest_steps_s": STEPS,
    }, indent=2))
    sys.exit(0 if correct else 1)


if __name__ == "__main__":
    main()

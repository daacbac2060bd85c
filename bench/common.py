"""What the end-to-end benchmarks share: the generator's arguments, the channel over its
files, the pipeline's stages timed one by one, and the gold row counts to check."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lakestreams.config import Channel, channel_from_dict
from lakestreams.pipeline import run_pipeline
from lakestreams.spark import ensure_schemas
from lakestreams.timing import listening

STAGES = ("bronze", "silver", "gold")


def generator_args(ap: argparse.ArgumentParser, records: int, files: int, out: str) -> None:
    """``--records``, ``--tables``, ``--files`` of ``generate_bench`` and the ``--out`` folder."""
    ap.add_argument("--records", type=int, default=records)
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--files", type=int, default=files)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / out))


def bench_channel(out: Path, storage: dict[str, Any], **extra: Any) -> Channel:
    """The generated source (whole-file transactions under ``out/landing/bench``)."""
    return channel_from_dict(
        {"name": "bench", "storage": storage,
         "landing": [{"name": "bench", "path": "landing/bench", "transactions": "whole_file"}], **extra},
        out,
    )


def session_channel(spark, out: Path, schema: str) -> Channel:
    """The generated source as channel ``schema`` under ``out/schema``, its tables in the
    session's warehouse (``out/wh``), its landing folder made. A warehouse restored from a
    copy has its tables registered again (``ensure_schemas``)."""
    ch = bench_channel(out / schema, {"schema": schema, "warehouse": str(out / "wh"), "state": "state"})
    ensure_schemas(spark, ch.storage)
    (out / schema / "landing" / "bench").mkdir(parents=True, exist_ok=True)
    return ch


def queued(spark, channel: Channel) -> int:
    """Transactions in the channel's error queue."""
    return spark.table(channel.storage.table("gold", "error_queue").replace("`", "")).count()


def timed_stages(spark, channel: Channel) -> dict[str, float]:
    """Seconds per stage, each run on its own."""
    stages = {}
    for stage in STAGES:
        start = time.perf_counter()
        run_pipeline(spark, channel, (stage,))
        stages[stage] = time.perf_counter() - start
    return stages


def last_job_id(spark, tag: str) -> int:
    """The id of a job run now (Spark numbers jobs in order): jobs between two marks."""
    sc = spark.sparkContext
    sc.setJobGroup(tag, tag)
    spark.range(1).count()
    sc.setJobGroup("", "")
    return max(sc.statusTracker().getJobIdsForGroup(tag))


def cpu_account(spark) -> dict[str, float]:
    """Seconds of CPU spent so far, from the driver JVM's management beans and this process:
    the whole JVM (every thread: tasks, query planning, JIT, GC), its JIT compilers, its
    garbage collections (pause time, summed over collectors) and this Python process (dbt
    included). The difference of two readings is where a run's time went: a JVM that keeps
    more than one core busy for a run of N seconds is CPU-bound, one well under it waits."""
    jvm = spark.sparkContext._jvm
    mf = jvm.java.lang.management.ManagementFactory
    gc_ms = sum(max(b.getCollectionTime(), 0) for b in mf.getGarbageCollectorMXBeans())
    # The process's own CPU time (the operating system bean's is not open to Python's reflection).
    cpu = jvm.java.lang.ProcessHandle.current().info().totalCpuDuration()
    return {"jvm_cpu_s": cpu.get().toNanos() / 1e9 if cpu.isPresent() else float("nan"),
            "jit_s": mf.getCompilationMXBean().getTotalCompilationTime() / 1e3,
            "gc_s": gc_ms / 1e3, "python_cpu_s": time.process_time()}


def commit_files(folder: Path) -> set[Path]:
    """Delta commit files under ``folder`` (the session's warehouse holds every channel's
    tables): two readings' difference is what a run committed."""
    return set(folder.rglob("_delta_log/*.json"))


def commits(folder: Path) -> int:
    """Delta commits under ``folder``."""
    return len(commit_files(folder))


#: What ``merge_metrics`` sums of each MERGE's ``operationMetrics`` (times in ms).
MERGE_METRICS = ("executionTimeMs", "materializeSourceTimeMs", "scanTimeMs", "rewriteTimeMs", "numSourceRows",
                 "numTargetRowsCopied", "numTargetFilesRemoved", "numTargetFilesAdded", "numTargetDeletionVectorsAdded")


def merge_metrics(new_commits: set[Path]) -> dict[str, float]:
    """Delta's own account of the MERGEs among ``new_commits`` (commit files; gold's apply
    is one MERGE per busy replica), summed over them: how many, their execution time and
    its parts (materialising the source, scanning for matches, rewriting files) in seconds,
    and the rows and files they read, copied and wrote. MERGEs that ran side by side
    overlap, so the seconds may add up to more than the run's step took."""
    out: dict[str, float] = {"merges": 0, **dict.fromkeys(MERGE_METRICS, 0)}
    for path in new_commits:
        for line in path.read_text().splitlines():
            info = json.loads(line).get("commitInfo")
            if info and info.get("operation") == "MERGE":
                out["merges"] += 1
                for k in MERGE_METRICS:
                    out[k] += int(info.get("operationMetrics", {}).get(k, 0))
    return {k.replace("TimeMs", "_s"): round(v / 1000, 1) if k.endswith("TimeMs") else v for k, v in out.items()}


@contextmanager
def phase_spans(least: float = 1.0) -> Iterator[dict[str, list[float]]]:
    """While the block runs, each pipeline stage's and timed step's span on the wall clock:
    ``[first start, last end]`` in seconds after the block began (the yielded dict, filled
    when the block ends). A step that runs in threads, once per target, spans the window its
    runs took together, not their sum (which the steps' totals give). Steps that span less
    than ``least`` seconds are left out; stages never are. In the order they started."""
    spans: dict[str, list[float]] = {}
    stages: set[str] = set()
    t0 = time.perf_counter()

    def listener(kind: str, name: str, done: bool) -> None:
        t = round(time.perf_counter() - t0, 1)
        if kind == "stage":
            stages.add(name)
        span = spans.setdefault(name, [t, t])
        if done:
            span[1] = t

    out: dict[str, list[float]] = {}
    with listening(listener):
        yield out
    out.update({n: s for n, s in sorted(spans.items(), key=lambda kv: kv[1][0])
                if n in stages or s[1] - s[0] >= least})


def gold_rows(spark, channel: Channel, tables: int) -> dict[str, int]:
    """Rows per generated table (``T01`` …) in gold, to compare with the generator."""
    gold = channel.storage.schema_name("gold")
    return {f"T{i:02d}": spark.table(f"{gold}.bench__t{i:02d}").count() for i in range(1, tables + 1)}

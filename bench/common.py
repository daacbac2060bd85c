"""What the end-to-end benchmarks share: the generator's arguments, the channel over its
files, the pipeline's stages timed one by one, and the gold row counts to check."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from lakestreams.config import Channel, channel_from_dict
from lakestreams.pipeline import run_pipeline
from lakestreams.spark import ensure_schemas

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


def commits(folder: Path) -> int:
    """Delta commits under ``folder`` (the session's warehouse holds every channel's tables)."""
    return sum(1 for p in folder.rglob("_delta_log/*.json"))


def gold_rows(spark, channel: Channel, tables: int) -> dict[str, int]:
    """Rows per generated table (``T01`` …) in gold, to compare with the generator."""
    gold = channel.storage.schema_name("gold")
    return {f"T{i:02d}": spark.table(f"{gold}.bench__t{i:02d}").count() for i in range(1, tables + 1)}

"""Local session starts are serialised: Ivy's shared jar cache takes one download at a time."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: A process that holds the start lock for a second and reports when it held it.
HOLD = """
import sys, time
from pathlib import Path

import pytest
from lakestreams.spark import jar_resolution_lock
with jar_resolution_lock(Path(sys.argv[1])):
    start = time.time()
    time.sleep(1.0)
    print(start, time.time())
"""


def test_processes_starting_at_once_take_the_start_lock_in_turn(tmp_path):
    lock = tmp_path / "start.lock"
    procs = [subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    spans = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        spans.append(tuple(map(float, out.split())))
    spans.sort()
    # Each holder starts after the one before let go: no two held the lock at once.
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)), spans
    assert spans[-1][1] - spans[0][0] >= 3.0


def test_a_start_that_must_wait_says_so_and_waits(tmp_path):
    from lakestreams.spark import jar_resolution_lock

    lock = tmp_path / "start.lock"
    with jar_resolution_lock(lock):
        proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # The waiting process has warned (stderr) and still holds nothing (no output yet).
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        line = proc.stderr.readline() if ready else ""
        if not ready:
            proc.kill()
        assert "another local Spark start holds" in line and str(lock) in line, line
        assert proc.poll() is None
        released = time.time()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert float(out.split()[0]) >= released


#: A process that gets its session as a task on a Databricks cluster would, and reports it.
ON_DATABRICKS = """
import sys
from lakestreams.spark import build_session
spark = build_session(sys.argv[1])
conf = spark.sparkContext.getConf()
print(conf.get("spark.master"), conf.get("spark.sql.extensions", "-"), conf.get("spark.jars.packages", "-"))
spark.stop()
"""


def test_on_databricks_the_runtime_session_is_taken_without_the_local_settings(tmp_path):
    # No runtime here: getOrCreate starts a plain session, which shows that none of the
    # local settings (master local[2], Delta's packages and extension) was applied.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKESTREAMS_", "PYSPARK_SUBMIT"))}
    env["DATABRICKS_RUNTIME_VERSION"] = "17.3"
    proc = subprocess.run([sys.executable, "-c", ON_DATABRICKS, str(tmp_path / "wh")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    master, extensions, packages = proc.stdout.split()[-3:]
    assert (master, extensions, packages) == ("local[*]", "-", "-"), proc.stdout
    assert not (tmp_path / "wh").exists()


def test_the_local_session_keeps_compiled_query_classes_across_runs(spark):
    # Each target compiles plans of its own shape; Spark's default cache (100) would drop
    # them between runs of a channel of a few dozen targets.
    from lakestreams.spark import DEFAULT_CODEGEN_CACHE

    want = int(os.environ.get("LAKESTREAMS_CODEGEN_CACHE", DEFAULT_CODEGEN_CACHE))
    assert int(spark.conf.get("spark.sql.codegen.cache.maxEntries")) == want
    assert DEFAULT_CODEGEN_CACHE > 100


def test_the_local_driver_runs_the_throughput_collector_unless_told_otherwise(spark):
    # The JVM's own collectors, not the option text: ParallelGC's are "PS Scavenge" and
    # "PS MarkSweep", G1's "G1 Young Generation" and the like.
    from lakestreams.spark import DEFAULT_GC

    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {b.getName() for b in beans}
    chosen = [o for o in os.environ.get("LAKESTREAMS_JVM_OPTIONS", "").split() if o.startswith("-XX:+Use") and o.endswith("GC")]
    assert DEFAULT_GC == "-XX:+UseParallelGC"
    assert (names == {"PS Scavenge", "PS MarkSweep"}) == (not chosen or DEFAULT_GC in chosen), names


def test_the_local_session_takes_execution_memory_in_small_pages(spark):
    # What the memory manager hands a task, not the setting's text.
    from lakestreams.spark import DEFAULT_PAGE_SIZE

    page = spark.sparkContext._jsc.sc().env().memoryManager().pageSizeBytes()
    asked = os.environ.get("LAKESTREAMS_PAGE_SIZE", DEFAULT_PAGE_SIZE)
    assert page == spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(asked)
    assert DEFAULT_PAGE_SIZE == "1m" and page <= 1024 * 1024 or "LAKESTREAMS_PAGE_SIZE" in os.environ


def test_the_local_session_commits_delta_logs_through_the_local_file_store(spark, tmp_path):
    # Delta's default store for file: paths starts a readlink process per path checked at
    # each commit (no native Hadoop library here); LAKESTREAMS_SPARK_CONF may choose another.
    from lakestreams.spark import extra_spark_conf

    key = "spark.delta.logStore.file.impl"
    asked = extra_spark_conf(os.environ.get("LAKESTREAMS_SPARK_CONF", "")).get(key, "io.delta.storage.LocalLogStore")
    assert spark.conf.get(key) == asked
    path = str(tmp_path / "t")
    for _ in range(2):
        spark.range(3).write.format("delta").mode("append").save(path)
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").glob("*.json")) == [
        "00000000000000000000.json", "00000000000000000001.json"]
    assert spark.read.format("delta").load(path).count() == 6


def test_the_local_session_builds_column_expressions_without_recording_python_call_sites(spark):
    # PySpark's DataFrame debugging makes several JVM calls per Column call; a plan builds
    # thousands. What PySpark itself reads (cached per process) is what the session set.
    from pyspark.errors.utils import is_debugging_enabled

    from lakestreams.spark import extra_spark_conf

    asked = extra_spark_conf(os.environ.get("LAKESTREAMS_SPARK_CONF", "")).get(
        "spark.python.sql.dataFrameDebugging.enabled", "false")
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == asked
    assert is_debugging_enabled() is (asked.lower() == "true")


def test_the_local_session_looks_java_names_up_once(spark, monkeypatch):
    # F.col asks the JVM what org.apache.spark.sql.functions and its col are, then calls
    # it: with the session's view the two lookups are made once, and every later F.col is
    # the call alone. A field's value and a name not found are not kept.
    from py4j.protocol import Py4JError
    from pyspark import SparkContext
    from pyspark.sql import functions as F

    from lakestreams.jvm_lookups import CachedJVMView

    if os.environ.get("LAKESTREAMS_JVM_LOOKUP_CACHE", "1") == "0":
        pytest.skip("LAKESTREAMS_JVM_LOOKUP_CACHE=0 leaves PySpark's own view (asked for in this environment)")
    assert isinstance(SparkContext._jvm, CachedJVMView) and spark._jvm is SparkContext._jvm
    client = SparkContext._jvm._gateway_client
    sent: list[str] = []
    send = client.send_command

    def counted(command, *args, **kwargs):
        sent.append(command.split("\n")[0])
        return send(command, *args, **kwargs)

    F.col("warm")
    monkeypatch.setattr(client, "send_command", counted)
    column = F.col("a")
    assert sent == ["c"], sent  # the call only: no reflection ("r") command
    integer = SparkContext._jvm.java.lang.Integer
    sent.clear()
    assert integer.MAX_VALUE == 2**31 - 1 and integer.MAX_VALUE == 2**31 - 1
    assert sent.count("r") == 2, sent  # the field is read each time, not kept
    assert "MAX_VALUE" not in integer.__dict__
    for _ in range(2):
        with pytest.raises(Py4JError, match="does not exist"):
            integer.noSuchLakestreamsMember  # noqa: B018 - the lookup is the test
    monkeypatch.undo()
    assert "noSuchLakestreamsMember" not in integer.__dict__
    doubled = spark.range(3).select((F.col("id") * 2).alias("a"))
    assert doubled.where(column > 1).count() == 2  # the kept lookups build working columns


def test_a_small_block_runs_without_generated_code_and_puts_the_settings_back(spark, monkeypatch):
    from lakestreams.spark import INTERPRETED_CONF, interpreted

    monkeypatch.setenv("LAKESTREAMS_INTERPRETED_RECORDS", "10")
    keys = list(INTERPRETED_CONF)
    before = {k: spark.conf.get(k) for k in keys}

    def query():
        return spark.range(20).selectExpr("id", "id * 2 AS twice").where("id % 3 = 0")

    def compiled() -> bool:  # a new query, planned under the session's settings now
        # Whole-stage code shows as "*(n)" before the operators it covers.
        return "*(" in query()._jdf.queryExecution().executedPlan().toString()

    def sums() -> tuple:
        return tuple(query().agg({"twice": "sum", "id": "count"}).first())

    plain = sums()
    assert compiled() is (before["spark.sql.codegen.wholeStage"] == "true")
    # Over the limit, or no count at all: nothing changes.
    for records in (11, None):
        with interpreted(spark, records) as on:
            assert on is False and {k: spark.conf.get(k) for k in keys} == before
    with interpreted(spark, 10) as on:
        assert on is True
        assert {k: spark.conf.get(k) for k in keys} == INTERPRETED_CONF
        assert not compiled()
        assert sums() == plain == (126, 7)
    assert {k: spark.conf.get(k) for k in keys} == before
    # A failing block puts them back too.
    try:
        with interpreted(spark, 0):
            raise RuntimeError("stop")
    except RuntimeError:
        pass
    assert {k: spark.conf.get(k) for k in keys} == before
    # 0 turns it off: even an empty batch compiles.
    monkeypatch.setenv("LAKESTREAMS_INTERPRETED_RECORDS", "0")
    with interpreted(spark, 0) as on:
        assert on is False


def test_inside_a_small_block_the_apply_to_a_wide_replica_compiles_expressions_but_not_whole_stages(spark, monkeypatch):
    from lakestreams.spark import COMPILED_EXPRESSIONS_COLUMNS as wide
    from lakestreams.spark import compiled_expressions, interpreted

    monkeypatch.setenv("LAKESTREAMS_INTERPRETED_RECORDS", "10")
    # Spark counts every class it compiles; a new literal makes a new class.
    compilations = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    literals = iter(range(7_700_001, 7_700_100))

    def compiles() -> int:
        n, before = next(literals), compilations.getCount()
        assert len(spark.range(5).selectExpr(f"id * {n} + 1 AS x").where(f"x > {n}").collect()) == 4  # 4 rows
        return compilations.getCount() - before

    keys = ["spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode"]
    before = {k: spark.conf.get(k, None) for k in keys}
    with interpreted(spark, 10) as small:
        assert small and compiles() == 0
        with compiled_expressions(spark, small, wide):
            assert [spark.conf.get(k) for k in keys] == ["false", "FALLBACK"]
            assert compiles() > 0
            plan = spark.range(3).selectExpr("id * 7 AS y")._jdf.queryExecution().executedPlan().toString()
            assert "*(" not in plan  # no whole-stage code
        assert compiles() == 0
        # Narrower replicas stay interpreted.
        with compiled_expressions(spark, small, wide - 1):
            assert [spark.conf.get(k) for k in keys] == ["false", "NO_CODEGEN"]
            assert compiles() == 0
        try:
            with compiled_expressions(spark, small, wide):
                raise RuntimeError("stop")
        except RuntimeError:
            pass
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    # Outside a small block it changes nothing.
    with compiled_expressions(spark, False, wide):
        assert {k: spark.conf.get(k, None) for k in keys} == before
    assert {k: spark.conf.get(k, None) for k in keys} == before


def test_release_drops_the_checkpoints_a_frame_reads_and_nothing_else(spark):
    from pyspark.sql import functions as F

    from lakestreams.spark import release, settle_released

    def held() -> set[int]:
        return {i.id() for i in spark.sparkContext._jsc.sc().getRDDStorageInfo()}

    before = held()
    a = spark.range(100).withColumn("x", F.col("id") * 2).localCheckpoint()
    b = spark.range(10).localCheckpoint()
    two = held() - before
    kept = spark.range(5).localCheckpoint()
    third = held() - before - two
    assert len(two) == 2 and len(third) == 1
    # A projection, a filter and a join of two checkpoints: both are released; the third
    # stays and still reads.
    joined = a.select("x").where("x < 50").join(b, F.col("x") == F.col("id"))
    assert joined.count() == 5
    assert release(joined, None) == 2
    assert settle_released(spark)
    assert not held() & two and third <= held()
    assert kept.count() == 5
    # What was released cannot be read again: the error says so rather than a wrong answer.
    with pytest.raises(Exception, match="CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND"):
        a.count()
    # A frame over no checkpoint: nothing to release.
    assert release(spark.range(3)) == 0


def test_release_keeps_a_checkpoint_until_the_jobs_running_at_the_call_end(spark):
    """Adaptive execution can answer a query while stages it started still run (an empty
    join side decides it): a checkpoint released then must still serve those stages' tasks."""
    import threading

    from pyspark.sql import functions as F

    from lakestreams.spark import release, settle_released

    sc = spark.sparkContext
    tracker = sc.statusTracker()
    a = spark.range(0, 40, 1, 40).localCheckpoint()
    rdd = a._jdf.queryExecution().analyzed().collectLeaves().apply(0).rdd().id()

    def held() -> bool:
        return rdd in {i.id() for i in sc._jsc.sc().getRDDStorageInfo()}

    # 40 tasks of 0.15 s each on the session's two cores: a job of about 3 s.
    slow = a.select(F.expr("java_method('java.lang.Thread', 'sleep', cast(150 as bigint))").alias("s"), "id")
    outcome = {}

    def run() -> None:
        sc.setJobGroup("release-while-running", "reads a checkpoint released while it runs")
        try:
            outcome["rows"] = slow.agg(F.count("s"), F.sum("id")).first()
        except Exception as e:  # noqa: BLE001 - the failure is what the test reports
            outcome["error"] = e

    reader = threading.Thread(target=run)
    reader.start()
    deadline = time.monotonic() + 60
    while not [j for j in tracker.getJobIdsForGroup("release-while-running")
               if tracker.getJobInfo(j) is not None and tracker.getJobInfo(j).status == "RUNNING"]:
        assert time.monotonic() < deadline, "the reading job never started"
        time.sleep(0.02)
    assert release(a) == 1
    # The job still runs and its later tasks read the blocks: they stay until it ends.
    assert held()
    reader.join(120)
    assert "error" not in outcome, outcome.get("error")
    assert tuple(outcome["rows"]) == (40, sum(range(40)))
    assert settle_released(spark)
    assert not held()

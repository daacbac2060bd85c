"""The local SparkSession with Delta, and table registration for local runs.

Delta's jars come from Maven Central through Ivy at first start (the same
coordinates ``configure_spark_with_delta_pip`` would use), or from a local jar
folder named by ``LAKESTREAMS_JARS_DIR`` for machines without Maven access.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from lakestreams.config import Storage
from lakestreams.delta_io import table_names
from lakestreams.jvm_lookups import cache_jvm_lookups

log = logging.getLogger("lakestreams.spark")

#: delta-spark 4.4.1 is pinned on PyPI, but its jars were never published to Maven
#: Central (only 4.4.0 is there for Spark 4.1/4.2). 4.4.0 jars serve the 4.4.1 Python API.
DEFAULT_DELTA_JAR_VERSION = "4.4.0"
#: Compiled query classes the local session keeps (Spark's default is 100);
#: ``LAKESTREAMS_CODEGEN_CACHE`` overrides it.
DEFAULT_CODEGEN_CACHE = 5000
#: Execution memory's page (``spark.buffer.pageSize``) in the local session;
#: ``LAKESTREAMS_PAGE_SIZE`` overrides it.
DEFAULT_PAGE_SIZE = "1m"
#: The local driver's garbage collector, unless ``LAKESTREAMS_JVM_OPTIONS`` names one. A run
#: is a batch of many small jobs on few cores: G1's concurrent marking threads compete with
#: the tasks for them, a throughput collector does not (bench/incremental.py: a run of 10%
#: new records took 19% less time than under G1, the history run 5% less).
DEFAULT_GC = "-XX:+UseParallelGC"
#: A silver batch or gold plan of at most this many records runs without generated code
#: (``interpreted``); ``LAKESTREAMS_INTERPRETED_RECORDS`` overrides it, 0 turns it off.
DEFAULT_INTERPRETED_RECORDS = 20_000
#: What ``interpreted`` sets: no whole-stage code, and expressions evaluated rather than
#: compiled (Spark's interpreted evaluation, the one its own test suites run as a mode).
#: Adaptive execution stays on: off here, a 1% run over a 1,000,000-record history made 533
#: Spark jobs instead of 764 but took 83.4 and 72.8 s against 69.5 and 71.8 s with it
#: (bench/one_file.py, alternated, a fresh process each), its static plans costing more
#: CPU (121-136 s against 116-120 s) than the jobs it spares.
INTERPRETED_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
#: What a small plan's apply (its dbt run) sets back inside ``interpreted`` when a replica it
#: writes is wide: expressions compiled (Spark's default factory mode), whole stages still
#: not (``compiled_expressions``).
COMPILED_EXPRESSIONS_CONF = {"spark.sql.codegen.factoryMode": "FALLBACK"}
#: From how many replicated columns (the table's own, without gold's bookkeeping columns) a
#: replica counts as wide there.
COMPILED_EXPRESSIONS_COLUMNS = 20
LAYERS = ("bronze", "silver", "gold")


def delta_maven_coordinates() -> str:
    """Maven coordinates of the Delta jar matching the installed pyspark."""
    import pyspark

    major_minor = ".".join(pyspark.__version__.split(".")[:2])
    version = os.environ.get("LAKESTREAMS_DELTA_JAR_VERSION", DEFAULT_DELTA_JAR_VERSION)
    return f"io.delta:delta-spark_{major_minor}_2.13:{version}"


def extra_spark_conf(text: str, source: str = "LAKESTREAMS_SPARK_CONF") -> dict[str, str]:
    """``key=value`` pairs separated by ``;`` (``LAKESTREAMS_SPARK_CONF``): Spark settings
    for the local session on top of the defaults (none are set by default). ``source``
    names where the text came from in the error.

    >>> extra_spark_conf("spark.sql.adaptive.enabled=false; spark.sql.codegen.wholeStage=false")
    {'spark.sql.adaptive.enabled': 'false', 'spark.sql.codegen.wholeStage': 'false'}
    >>> extra_spark_conf("adaptive=false")
    Traceback (most recent call last):
    ...
    ValueError: LAKESTREAMS_SPARK_CONF: 'adaptive=false' is not spark.<setting>=<value>
    """
    out = {}
    for pair in filter(None, (p.strip() for p in text.split(";"))):
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or not key.startswith("spark.") or any(c.isspace() for c in key):
            raise ValueError(f"{source}: {pair!r} is not spark.<setting>=<value>")
        out[key] = value.strip()
    return out


@contextmanager
def jar_resolution_lock(path: Path | None = None) -> Iterator[None]:
    """Hold the machine-wide lock of local session starts (``path``: its file, by default
    one per user in the temp folder). Ivy downloads Delta's jars into one shared cache: two
    processes starting Spark at once on a fresh cache overwrite each other's downloads, and
    both fail ("Downloaded file size (0) doesn't match expected Content Length"). Started
    one after the other, the second finds the jars in the cache. A start that has to wait
    says so (a warning naming the lock file) before it waits. Where ``fcntl`` is missing
    (Windows) starts are not serialised."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path = path or Path(tempfile.gettempdir()) / f"lakestreams-spark-start-{os.getuid()}.lock"
    with path.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("another local Spark start holds %s (it is fetching Delta's jars): waiting for it", path)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def driver_java_options(extra: str, log_cache: int) -> str:
    """The local driver JVM's options: the Delta log cache (``LAKESTREAMS_DELTA_LOG_CACHE``),
    ``DEFAULT_GC`` unless ``extra`` (``LAKESTREAMS_JVM_OPTIONS``) chooses a collector, then
    ``extra``.

    >>> driver_java_options("", 1000)
    '-Ddelta.log.cacheSize=1000 -XX:+UseParallelGC'
    >>> driver_java_options("-XX:+UseG1GC -Xss4m", 50)
    '-Ddelta.log.cacheSize=50 -XX:+UseG1GC -Xss4m'
    """
    chosen = any(o.startswith("-XX:+Use") and o.endswith("GC") for o in extra.split())
    return " ".join([f"-Ddelta.log.cacheSize={log_cache}", *([] if chosen else [DEFAULT_GC]), *extra.split()])


def on_databricks() -> bool:
    """Whether this process runs on a Databricks cluster (its runtime sets the variable)."""
    return bool(os.environ.get("DATABRICKS_RUNTIME_VERSION"))


def build_session(warehouse: Path | str, app_name: str = "lakestreams", shuffle_partitions: int = int(os.environ.get("LAKESTREAMS_SHUFFLE_PARTITIONS", "4"))) -> SparkSession:
    """Get or create the local SparkSession with Delta, warehouse at ``warehouse``."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if on_databricks():
        # The runtime owns the session (Delta built in, the cluster's settings): taken as it
        # is, with none of the local settings below.
        return SparkSession.builder.getOrCreate()
    builder = (
        SparkSession.builder.master(os.environ.get("LAKESTREAMS_SPARK_MASTER", "local[2]"))
        .appName(app_name)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.warehouse.dir", str(Path(warehouse).resolve()))
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", os.environ.get("LAKESTREAMS_DRIVER_MEMORY", "4g"))
        # Delta keeps a log (snapshots and their plans) per table path it has touched; a
        # long session over many tables (the test run, a channel of hundreds) bounds it.
        .config("spark.driver.extraJavaOptions", driver_java_options(
            os.environ.get("LAKESTREAMS_JVM_OPTIONS", ""), int(os.environ.get("LAKESTREAMS_DELTA_LOG_CACHE", "1000"))))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # The status store keeps finished jobs, stages, tasks and SQL plans on the driver
        # even with the UI off; a long session (a scheduled job, the test run) needs little.
        .config("spark.sql.ui.retainedExecutions", "20")
        .config("spark.ui.retainedJobs", "50")
        .config("spark.ui.retainedStages", "50")
        .config("spark.ui.retainedTasks", "2000")
        # Delta's default log store for file: paths renames each commit through Hadoop's
        # FileContext, which (without Hadoop's native library, as pip's PySpark ships) starts
        # a `readlink` process per path it checks: 3,008 of the 4,631 processes a profiled
        # bench/one_file.py run started. The local-file log store renames through the
        # FileSystem API (no process) and serialises commits within the JVM; across
        # processes neither store's put-if-absent is atomic on a local disk, and a channel's
        # runs hold its run lock. 80 appends of 10 rows started 648 `readlink` processes
        # against 1,360; 60 timed appends took 363 ms a commit against 404 ms (mean of
        # seven processes each way, alternated). Delta's version checksums still rename
        # through FileContext.
        .config("spark.delta.logStore.file.impl", "io.delta.storage.LocalLogStore")
        # Small local tables: Delta's default 50 snapshot partitions cost more than they save.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.sql.adaptive.enabled", "true")
        # A sort, window or hash aggregate takes execution memory a page at a time, and Spark
        # sizes the page from the heap: 32 MB for a 4g driver on two cores. A run is
        # thousands of small tasks, each taking (and zeroing) a whole page on the heap for a
        # few thousand rows; under a 200,000-record history whose plan fails 820
        # transactions in cascade, pages kept the heap at 1.4-1.8 GB after each full
        # collection against 0.67-0.80 GB with 1 MB pages. A bigger input takes more pages.
        .config("spark.buffer.pageSize", os.environ.get("LAKESTREAMS_PAGE_SIZE", DEFAULT_PAGE_SIZE))
        # A run compiles code per query shape, and a busy channel has many (each target's
        # plan, typed by its columns): Spark's default cache of 100 compiled classes drops
        # them between runs. On a 27-target channel this cut a run by 13% (first run in a
        # JVM) and 7% (next run), measured one process each, back to back.
        .config("spark.sql.codegen.cache.maxEntries",
                str(int(os.environ.get("LAKESTREAMS_CODEGEN_CACHE", DEFAULT_CODEGEN_CACHE))))
        # PySpark's DataFrame debugging records the Python call site of every Column call
        # (an IPython import attempt, the active session and a setting read, two JVM calls
        # each): a plan builds thousands of column expressions per target, and this cost
        # 4.5x their building time (600 expressions: 10.7 s against 2.4 s). Errors keep
        # their message and JVM stack; LAKESTREAMS_SPARK_CONF can switch it back on.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
        .config("spark.databricks.delta.schema.autoMerge.enabled", "false")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
    )
    for key, value in extra_spark_conf(os.environ.get("LAKESTREAMS_SPARK_CONF", "")).items():
        builder = builder.config(key, value)
    jar_dir = os.environ.get("LAKESTREAMS_JARS_DIR")
    if jar_dir:
        jars = sorted(str(p) for p in Path(jar_dir).glob("*.jar"))
        if not jars:
            raise RuntimeError(f"LAKESTREAMS_JARS_DIR={jar_dir} holds no .jar files")
        builder = builder.config("spark.jars", ",".join(jars))
        spark = builder.getOrCreate()
    else:
        builder = builder.config("spark.jars.packages", delta_maven_coordinates())
        # The JVM resolves the packages as it starts: one process at a time.
        with jar_resolution_lock():
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # Names PySpark reaches in the JVM are looked up once (lakestreams.jvm_lookups);
    # LAKESTREAMS_JVM_LOOKUP_CACHE=0 leaves PySpark's own view.
    if os.environ.get("LAKESTREAMS_JVM_LOOKUP_CACHE", "1") != "0":
        cache_jvm_lookups(spark)
    return spark


def interpreted_records() -> int:
    """Up to how many records a batch or plan runs ``interpreted`` (0: never)."""
    return int(os.environ.get("LAKESTREAMS_INTERPRETED_RECORDS", DEFAULT_INTERPRETED_RECORDS))


@contextmanager
def interpreted(spark: SparkSession, records: int | None) -> Iterator[bool]:
    """Run the block without generated code when ``records`` (a batch's, or a plan's,
    counted up to ``interpreted_records() + 1``) is at most ``interpreted_records()``;
    yields whether it does. Results are the same either way; only the cost differs.

    A small batch runs hundreds of small queries, each over a few rows, and compiling their
    code costs more than running them. bench/incremental.py's shapes, 10 targets, runs
    alternated: a run of 10,000 new records in a fresh process (as a scheduled job runs)
    took 121.7 and 156.3 s interpreted against 152.9 and 168.7 s compiled; in a process
    that had compiled those queries already, 50 new records took 69.0-71.7 s against
    77.4-81.8 s, and 10,000 over a 1,000,000-record history the same either way. A big
    batch compiles once per query and then runs its rows through the compiled code. The
    settings are the session's, put back as they were afterwards; on Databricks the
    runtime's own stand.
    """
    limit = interpreted_records()
    if limit <= 0 or records is None or records > limit or on_databricks():
        yield False
        return
    with session_conf(spark, INTERPRETED_CONF):
        yield True


@contextmanager
def compiled_expressions(spark: SparkSession, small: bool, columns: int) -> Iterator[None]:
    """Inside an ``interpreted`` block (``small``), compile expressions again for the block
    when its widest replica has ``COMPILED_EXPRESSIONS_COLUMNS`` ``columns`` or more: the
    apply's MERGEs. Without deletion vectors a MERGE copies every replica file it touches,
    so the rows it writes grow with the replica, not with the plan, and each row passes
    Delta's statistics projection (a minimum, maximum and null count per indexed column),
    which interpreted costs more per row the more columns there are. Whole stages stay off.

    bench/replica_merge.py, 500 UPDATEs into a 50,000-row replica, three rounds each way
    alternated in one process; the dbt step's median, compiled against interpreted: 1.75
    against 1.70 s at 10 columns, 2.35 against 2.71 s at 20, 2.23 against 3.64 s at 30,
    2.71 against 3.95 s at 40. A replica with deletion vectors copies no row and gains
    nothing: at 80 columns (past the 8 MiB limit) 3.28 against 2.78 s, the cost of
    compiling. Does nothing outside such a block, or for narrower replicas."""
    if not small or columns < COMPILED_EXPRESSIONS_COLUMNS:
        yield
        return
    with session_conf(spark, COMPILED_EXPRESSIONS_CONF):
        yield


@contextmanager
def session_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """Set ``conf`` on the session for the block; put each setting back as it was (or unset
    it) afterwards, also after a failure."""
    saved = {k: spark.conf.get(k, None) for k in conf}
    try:
        for k, v in conf.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


#: Checkpoints released while jobs that may read them were running, per Spark context:
#: (the context, the checkpoints' RDDs, those jobs). Their blocks are dropped once the jobs end.
_RELEASING: list[tuple[object, list, set[int]]] = []
_RELEASING_LOCK = threading.Lock()


def release(*frames: DataFrame | None) -> int:
    """Drop the blocks of the local checkpoints ``frames`` are (or project, filter or
    join): a loop that checkpoints again each round frees what the round replaced at once,
    rather than when the driver's garbage collector finds it unreachable (in local mode the
    blocks fill the driver's heap). A frame read afterwards fails (its blocks are gone), so
    only what nothing reads any more is released. Returns how many checkpoints were.

    A query can return while jobs it started still run: adaptive execution answers once a
    stage decides the result (an empty side of a join, a ``limit`` met) and leaves the
    stages it no longer needs to finish on their own. Their tasks read the checkpoints too,
    so the blocks are dropped only once every job Spark's status tracker lists as running at
    this call has ended (checked here, at each later call, and by ``settle_released``); a
    job started after this call does not read a released frame. Plan metadata and job ids:
    the driver walks each frame's plan, not its rows."""
    rdds = []
    for df in frames:
        if df is None:
            continue
        leaves = df._jdf.queryExecution().analyzed().collectLeaves()
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() == "LogicalRDD":  # a checkpoint's plan
                rdds.append(leaf.rdd())
    if rdds:
        sc = next(df for df in frames if df is not None).sparkSession.sparkContext
        with _RELEASING_LOCK:
            _RELEASING.append((sc, rdds, set(sc.statusTracker().getActiveJobsIds())))
            _drop_released(sc)
    return len(rdds)


def _drop_released(sc) -> int:
    """Drop the released checkpoints of ``sc`` whose jobs have all ended; those of a context
    no longer running went with it. Returns how many releases still wait. Under the lock."""
    tracker = sc.statusTracker()
    waiting = []
    for owner, rdds, jobs in _RELEASING:
        if owner is not sc:
            continue
        running = {j for j in jobs if (info := tracker.getJobInfo(j)) is not None and info.status == "RUNNING"}
        if running:
            waiting.append((owner, rdds, running))
        else:
            for rdd in rdds:
                rdd.unpersist(False)
    _RELEASING[:] = waiting
    return len(waiting)


def settle_released(spark: SparkSession, timeout_s: float = 60.0) -> bool:
    """Wait (up to ``timeout_s``) until every checkpoint released in this session is
    dropped: the end of a stage that released them. Whether none waits any more (what
    still does is dropped by a later call)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with _RELEASING_LOCK:
            if not _drop_released(spark.sparkContext):
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def ensure_schemas(spark: SparkSession, storage: Storage) -> None:
    """Create the layer schemas and, locally, re-register tables found in the warehouse.

    Locally the catalog lives in memory, so tables written by an earlier process are
    registered again from their Delta folders; on Databricks (a catalog is set) Unity
    Catalog keeps them and nothing is registered.
    """
    # Catalog and schema prefix are identifiers checked when the channel was loaded.
    if storage.catalog:
        spark.catalog.setCurrentCatalog(storage.catalog)
    for layer in LAYERS:
        schema = storage.schema_name(layer)
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
        if storage.catalog:
            continue
        folder = Path(storage.warehouse) / f"{schema}.db"
        if not folder.is_dir():
            continue
        existing = table_names(spark, storage, layer)
        for sub in sorted(folder.iterdir()):
            if (sub / "_delta_log").is_dir() and sub.name not in existing:
                # The catalog API takes the path as a value: nothing is pasted into SQL.
                spark.catalog.createTable(f"{schema}.{sub.name}", path=sub.as_posix(), source="delta")


"""The floor of the 1% target: what the least apply of the same change stream costs here.

Issue 5's target: after a 1,000,000-record history, a run with 1% new records costs, above
a run with nothing new, at most 10% of what the history run costs above it. Most of a
small run's cost is fixed (Spark jobs and Delta commits per table, not rows), so the share
depends on how little a run can do at all. This measures that floor on the same generated
stream as ``bench/one_file.py``, in one process, with none of the apply's semantics:

- bronze: the run's new landing files read with a fixed schema and appended to one Delta
  table (one commit);
- per table (four at once, as the apply's dbt threads): the run's records of it, folded to
  one row per key (the last operation; per column the last value a change carried, so
  partial UPDATEs keep the replica's other values), MERGEd into a Delta replica (one
  commit).

Nothing else: no ledger or transactions, rules, typing against a dictionary, ordering or
conflict judging, error queue, instantiation, exactly-once keys, progress or watermarks.
Every run of the pipeline pays for those; this pays for none. So its 1% run is the least
a run made of these Spark and Delta operations costs on this machine, a lower bound for the
pipeline's. Its share is the target as the least apply meets it; a history run that does
more per record lowers a share without making the 1% run cheaper, so the floor's 1% run is
also worth setting beside the pipeline's history run (``bench/one_file.py``).

Runs, as ``bench/one_file.py`` times them: files 1..N-1 in one run (the history, in a
fresh JVM), then two warm-up runs of files 1 and 2 on replicas of their own, a run with
nothing new (idle) and the run of file N (the 1% run); the figure is the 1% run above idle
as a share of the history run above idle, all in this process. Each run reports its
seconds, Spark jobs and Delta commits. It ends by checking every replica's row count
against the generator's and exits 1 if one differs.

The stream is ``--out``'s saved history when ``bench/one_file.py --prepare`` made one
(``OUT.history/generated``), else generated into ``OUT/generated``. ``--deletion-vectors``
gives the replicas deletion vectors (the 1% run's MERGEs then mark rows instead of copying
their files). Usage: ``python bench/floor.py [--records N] [--tables T] [--files F]
[--out D] [--deletion-vectors]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlglot  # noqa: E402
from common import commits, generator_args, last_job_id  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from lakestreams.sample import BENCH_COLUMNS, generate_bench  # noqa: E402
from lakestreams.spark import build_session  # noqa: E402
from silver.transforms import OracleDdl  # noqa: E402
from silver.types import map_oracle_type  # noqa: E402

#: The generated tables' Spark types (``generate_bench``'s Oracle types, mapped as silver maps them).
TYPES = {c: map_oracle_type(sqlglot.exp.DataType.build(t, dialect=OracleDdl)).spark for c, t, _ in BENCH_COLUMNS}
#: The key (``ID``, as every generated table's) and the other columns.
KEY = next(c for c, _, key in BENCH_COLUMNS if key)
COLUMNS = {c: t for c, t in TYPES.items() if c != KEY}
#: The landing records' fields the floor reads; values as text, so a partial UPDATE's
#: carried columns are the map's keys.
RECORD_SCHEMA = ("source_database string, command_type string, object_owner string, object_name string, "
                 "old_values map<string,string>, new_values map<string,string>, transaction_id string, "
                 "scn bigint, commit_scn bigint, position bigint, commit_time timestamp")
#: Replicas MERGEd at once.
THREADS = 4


def create_replicas(spark: SparkSession, db: str, tables: list[str], deletion_vectors: bool = False) -> None:
    """Schema ``db`` with an empty replica per table (lower-case names, as ``apply_files`` takes them)."""
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {db}")
    cols = ", ".join(f"`{c}` {t}" for c, t in COLUMNS.items())
    dv = "true" if deletion_vectors else "false"
    for name in tables:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {db}.{name} (`{KEY}` {TYPES[KEY]}, {cols}, _commit_scn bigint) USING delta "
                  f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{dv}')")


def folded(changes: DataFrame) -> DataFrame:
    """One row per key: its last operation and SCN, and per column the last value a change
    carried with whether any did (``_set_<c>``)."""
    seq = F.struct("commit_scn", "position")
    key = F.coalesce(F.col("new_values")[KEY], F.col("old_values")[KEY]).cast(TYPES[KEY])
    aggs = [F.max_by("command_type", seq).alias("_op"), F.max("commit_scn").alias("_commit_scn")]
    for c in COLUMNS:
        carried = F.map_contains_key("new_values", c)
        # max_by skips rows whose ordering value is NULL: only the changes that carried it.
        aggs += [F.max_by(F.col("new_values")[c], F.when(carried, seq)).alias(c), F.max(carried).alias(f"_set_{c}")]
    return changes.groupBy(key.alias(KEY)).agg(*aggs)


def merge_table(spark: SparkSession, db: str, name: str, batch: int) -> None:
    source = folded(spark.table(f"{db}.bronze").where(
        (F.col("_batch") == batch) & (F.col("object_name") == name.upper())
        & F.col("command_type").isin("INSERT", "UPDATE", "DELETE")))
    view = f"{db}_src_{name}_{batch}"
    source.createOrReplaceTempView(view)
    sets = ", ".join(f"t.`{c}` = CASE WHEN s.`_set_{c}` THEN CAST(s.`{c}` AS {t}) ELSE t.`{c}` END"
                     for c, t in COLUMNS.items())
    names = ", ".join(f"`{c}`" for c in COLUMNS)
    values = ", ".join(f"CAST(s.`{c}` AS {t})" for c, t in COLUMNS.items())
    spark.sql(f"""
        MERGE INTO {db}.{name} t USING {view} s ON t.`{KEY}` = s.`{KEY}`
        WHEN MATCHED AND s._op = 'DELETE' THEN DELETE
        WHEN MATCHED THEN UPDATE SET {sets}, t._commit_scn = s._commit_scn
        WHEN NOT MATCHED AND s._op <> 'DELETE' THEN INSERT (`{KEY}`, {names}, _commit_scn)
          VALUES (s.`{KEY}`, {values}, s._commit_scn)""")
    spark.catalog.dropTempView(view)


def apply_files(spark: SparkSession, db: str, files: list[str], tables: list[str], batch: int) -> None:
    """The floor's apply of ``files`` as ``batch``: one append to ``db.bronze``, then one MERGE
    per replica of ``tables`` (``create_replicas``)."""
    (spark.read.schema(RECORD_SCHEMA).json(files).withColumn("_batch", F.lit(batch))
     .write.format("delta").mode("append").saveAsTable(f"{db}.bronze"))
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        list(pool.map(lambda t: merge_table(spark, db, t, batch), tables))


def floor_run(spark: SparkSession, db: str, landing: Path, tables: list[str], seen: set[str], batch: int) -> dict:
    """One run of schema ``db`` over the landing files not seen yet: seconds, Spark jobs
    (between the marks ``<db>.<batch>.a`` and ``.b``, as ``bench/incremental.py`` counts
    them), Delta commits."""
    wh = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    first, commits_before = last_job_id(spark, f"{db}.{batch}.a"), commits(wh)
    start = time.perf_counter()
    new = sorted(str(f) for f in landing.glob("*.jsonl") if str(f) not in seen)
    if new:
        apply_files(spark, db, new, tables, batch)
        seen.update(new)
    s = round(time.perf_counter() - start, 2)
    # Less the jobs of the closing mark itself (its count may run more than one).
    return {"s": s, "jobs": last_job_id(spark, f"{db}.{batch}.b") - first - _mark_jobs(spark),
            "commits": commits(wh) - commits_before, "files": len(new)}


def _mark_jobs(spark: SparkSession) -> int:
    """The Spark jobs one ``last_job_id`` mark runs."""
    a = last_job_id(spark, "floor.mark.a")
    return last_job_id(spark, "floor.mark.b") - a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    generator_args(ap, records=1_000_000, files=100, out="out_one_file")
    ap.add_argument("--deletion-vectors", action="store_true",
                    help="replicas with deletion vectors: a MERGE marks rows instead of copying their files")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    saved = Path(f"{out}.history") / "generated"
    floor = out.parent / f"{out.name}.floor"
    shutil.rmtree(floor, ignore_errors=True)
    if (saved / "bench").is_dir():
        generated = saved
        final_rows = json.loads((Path(f"{out}.history") / "prepared.json").read_text())["final_rows"]
    else:
        generated = floor / "generated"
        final_rows = generate_bench(generated, records=args.records, tables=args.tables, files=args.files)["final_rows"]
    files = sorted((generated / "bench").glob("changes_*.jsonl"))
    landing = floor / "landing"
    landing.mkdir(parents=True)
    spark = build_session(floor / "wh", app_name="lakestreams-bench-floor")
    tables = sorted(final_rows)
    names = [t.lower() for t in tables]
    for db in ("floor", "floor_warm"):
        create_replicas(spark, db, names, args.deletion_vectors)
    seen: set[str] = set()
    for f in files[:-1]:
        shutil.copy(f, landing / f.name)
    full = floor_run(spark, "floor", landing, names, seen, 1)
    # As bench/one_file.py warms its JVM before the 1% run: two runs of the first two files
    # on replicas of their own (the second one's MERGEs match rows, as the 1% run's do).
    warm, warm_seen = floor / "warm", set()
    warm.mkdir()
    for batch, f in enumerate(files[:2], start=1):
        shutil.copy(f, warm / f.name)
        floor_run(spark, "floor_warm", warm, names, warm_seen, batch)
    idle = floor_run(spark, "floor", landing, names, seen, 2)
    shutil.copy(files[-1], landing / files[-1].name)
    one = floor_run(spark, "floor", landing, names, seen, 3)
    rows = {t: spark.table(f"floor.{t.lower()}").count() for t in tables}
    correct = rows == final_rows
    print(json.dumps({
        "history_run": full, "idle_run": idle, "one_file_run": one,
        "deletion_vectors": args.deletion_vectors,
        "share_of_history_above_idle": round((one["s"] - idle["s"]) / (full["s"] - idle["s"]), 4),
        "replica_rows_match_generator": correct,
    }, indent=2))
    spark.stop()
    sys.exit(0 if correct else 1)


if __name__ == "__main__":
    main()

"""Compare a replica with a snapshot, as HVR's compare does; re-snapshot one table.

The snapshot is a file or folder in the snapshot landing format (``gold.snapshot``):
INSERT records of the table as of an SCN (a TRUNCATE alone: it was empty). Its records are checked as bronze checks
landing lines, then go through the channel's rules, transformations and typing exactly
as silver would take them, in memory: nothing is landed, nothing is applied. The typed
rows are compared with the rows the replica holds:

- row counts and a checksum per side (the sum of a 64-bit hash of each row: equal
  checksums mean equal rows, whatever their order);
- the differing rows, by key: only in the snapshot, only in the replica, or different
  values (with the columns that differ), appended to ``<schema>_gold.apply_compare``
  under a compare id.

Snapshot rows that do not type (a value that does not convert) or that the rules do not
route to the table are counted apart: they are not compared. The replica's applied SCN
for the snapshot's source is reported next to the snapshot's: rows changed between the
two differ for that reason alone.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bronze.records import parse_lines, to_bronze
from gold.plan import COMPARE_TABLE, live_rows
from lakestreams.config import Channel, split_table_name
from lakestreams.delta_io import append, create_missing_tables
from lakestreams.errors import ApplyError
from silver.changes import fill_defaults, table_defaults, target_model_name, type_changes
from silver.rules import build_clients
from silver.run import (
    SNAPSHOT_COMMANDS,
    _any_group,
    _resolve_targets,
    classify,
    load_revisions,
    load_targets,
)

COMPARE_DDL = (
    "compare_id BIGINT, target STRING, source_database STRING, snapshot_scn BIGINT, status STRING, "
    "key STRING, snapshot_row STRING, replica_row STRING, columns ARRAY<STRING>"
)


@dataclass
class CompareResult:
    compare_id: int
    target: str
    source_database: str
    snapshot_scn: int
    applied_scn: int | None
    snapshot_rows: int
    replica_rows: int
    snapshot_checksum: int
    replica_checksum: int
    only_in_snapshot: int
    only_in_replica: int
    different: int
    not_compared: int

    @property
    def identical(self) -> bool:
        return self.only_in_snapshot == self.only_in_replica == self.different == self.not_compared == 0

    def format(self) -> str:
        lines = [
            f"compare {self.compare_id}: {self.target} against the snapshot of {self.source_database} at SCN "
            f"{self.snapshot_scn} (replica applied up to SCN {self.applied_scn})",
            f"  rows       snapshot {self.snapshot_rows:>9}   replica {self.replica_rows:>9}",
            f"  checksum   snapshot {self.snapshot_checksum:>20}   replica {self.replica_checksum:>20}",
            f"  only in snapshot {self.only_in_snapshot}, only in replica {self.only_in_replica}, "
            f"different {self.different}, snapshot rows not compared {self.not_compared}",
        ]
        lines.append("  identical" if self.identical else f"  differing rows in apply_compare (compare_id {self.compare_id})")
        return "\n".join(lines)


def _files(path: Path) -> list[str]:
    """The files of a snapshot: the file itself, or every file under the folder."""
    files = sorted(str(p) for p in path.rglob("*") if p.is_file()) if path.is_dir() else [str(path)]
    if not path.exists() or not files:
        raise ApplyError(f"snapshot {path}: no file there")
    return files


def snapshot_records(spark: SparkSession, path: Path) -> DataFrame:
    """The snapshot's lines as released change records; a line that is not a change
    record refuses the compare, with the first reason (few: metadata)."""
    lines = spark.read.text(_files(path)).withColumnRenamed("value", "raw").select(
        "raw", F.input_file_name().alias("_source_file"), F.lit("snapshot").alias("_landing"),
        F.lit("whole_file").alias("_txn_mode"), F.lit(0).cast("bigint").alias("_ingest_batch"),
        F.current_timestamp().alias("_ingested_at"),
    )
    parsed = parse_lines(lines)
    # At most one reason string reaches the driver: the first unreadable line's.
    bad = parsed.where(F.col("_reason").isNotNull()).select("_reason").limit(1).collect()
    if bad:
        raise ApplyError(f"snapshot {path}: a line is not a change record: {bad[0][0]}")
    # Rows, and the TRUNCATE that says a table was empty at the SCN.
    return to_bronze(parsed).where(F.col("ddl_text").isNull() & F.col("command_type").isin(*SNAPSHOT_COMMANDS)).withColumns({
        "status": F.lit("COMMITTED"), "is_duplicate": F.lit(False), "silver_batch": F.lit(0).cast("bigint"),
        "released_batch": F.lit(0).cast("bigint"),
    })


def typed_snapshot(spark: SparkSession, channel: Channel, path: Path, model: str) -> tuple[DataFrame, DataFrame, str]:
    """The snapshot's rows of target ``model`` typed as silver types them (``_new``, ``_error``),
    the snapshot rows not routed to it, and the source database."""
    clients = build_clients(channel)
    classified = classify(snapshot_records(spark, path), clients)
    accepted = classified.where("_bucket = 'accepted'")
    # The tables the source has now.
    revisions = {k: revs for k, revs in load_revisions(spark, channel).items() if revs[-1].status == "TABLE"}
    targets, _errors = _resolve_targets(channel, clients, revisions, accepted, load_targets(spark, channel),
                                        follow_ddl=False)
    mine = [(key, groups, tdef) for key, (tdef, groups, _source, _shape) in targets.items()
            if target_model_name(key[1], key[2]) == model]
    if not mine:
        raise ApplyError(f"snapshot {path}: no row of it reaches target {model} under the channel's rules")
    if len(mine) > 1:
        raise ApplyError(f"snapshot {path}: rows of {len(mine)} source databases reach {model}; compare one at a time")
    (src, _owner, _name), groups, tdef = mine[0]
    routed = _any_group(groups)
    # As silver fills them: an INSERT takes the defaults of the columns it does not carry.
    typed = fill_defaults(type_changes(accepted.where(routed), tdef, 0), table_defaults(tdef))
    return typed, classified.where(~routed), src


def _checksum(rows: DataFrame) -> tuple[int, int]:
    """Row count and the sum of a 64-bit hash of each row (as decimal: no overflow)."""
    r = rows.select(F.xxhash64(*[F.col(f"`{c}`") for c in rows.columns]).cast("decimal(38,0)").alias("h")).agg(
        F.count("*"), F.sum("h")).first()
    return int(r[0]), int(r[1] or 0)


def compare_snapshot(spark: SparkSession, channel: Channel, table: str, path: str | Path) -> CompareResult:
    """Compare target ``table`` (``owner.table``) with the snapshot at ``path``."""
    st = channel.storage
    model = target_model_name(*split_table_name(table, "table"))
    gold = st.table("gold", model).replace("`", "")
    if not spark.catalog.tableExists(gold):
        raise ApplyError(f"compare: target {table} has no replica ({gold}) yet")
    typed, unrouted, src = typed_snapshot(spark, channel, Path(path), model)
    typed = typed.persist()
    try:
        replica_cols = [c for c in spark.table(gold).columns if not c.startswith("_")]
        keys = next(t for _s, _o, _n, t, _c in load_targets(spark, channel)
                    if target_model_name(t.owner, t.name) == model).key_columns
        good = typed.where(F.col("_error").isNull() & (F.col("_command_type") == "INSERT"))
        snap = good.select(*[F.col(f"_new.`{c}`").alias(c) for c in replica_cols]).alias("s")
        rep = live_rows(spark, gold).select(*replica_cols).alias("r")
        scn_row = typed.agg(F.max("_commit_scn"), F.min("_commit_scn")).first()
        if scn_row[0] is None:
            raise ApplyError(f"compare: the snapshot {path} holds no record of {table}")
        if scn_row[0] != scn_row[1]:
            raise ApplyError(f"compare: the snapshot {path} holds rows of SCN {scn_row[1]} to {scn_row[0]}; "
                             "a snapshot is one SCN")
        differs = F.filter(F.array(*[F.when(~F.col(f"s.`{c}`").eqNullSafe(F.col(f"r.`{c}`")), F.lit(c))
                                     for c in replica_cols]), lambda x: x.isNotNull())
        marked = snap.withColumn("_s", F.lit(True)).alias("s").join(
            rep.withColumn("_r", F.lit(True)).alias("r"),
            reduce(lambda a, b: a & b, [F.col(f"s.`{k}`").eqNullSafe(F.col(f"r.`{k}`")) for k in keys]), "full",
        )
        status = (F.when(F.col("s._s").isNull(), "only_in_replica").when(F.col("r._r").isNull(), "only_in_snapshot")
                  .when(F.size(differs) > 0, "different"))
        compare_id = time.time_ns() // 1000
        diff = marked.select(
            F.lit(compare_id).cast("bigint").alias("compare_id"), F.lit(model).alias("target"),
            F.lit(src).alias("source_database"), F.lit(scn_row[0]).cast("bigint").alias("snapshot_scn"),
            status.alias("status"),
            F.to_json(F.struct(*[F.coalesce(F.col(f"s.`{k}`"), F.col(f"r.`{k}`")).alias(k) for k in keys])).alias("key"),
            F.when(F.col("s._s").isNotNull(), F.to_json(F.struct(*[F.col(f"s.`{c}`").alias(c) for c in replica_cols])))
            .alias("snapshot_row"),
            F.when(F.col("r._r").isNotNull(), F.to_json(F.struct(*[F.col(f"r.`{c}`").alias(c) for c in replica_cols])))
            .alias("replica_row"),
            F.when(F.col("s._s").isNotNull() & F.col("r._r").isNotNull(), differs).alias("columns"),
        ).where("status IS NOT NULL")
        report_table = st.table("gold", COMPARE_TABLE)
        create_missing_tables(spark, st, "gold", ((COMPARE_TABLE, COMPARE_DDL),))
        append(diff, report_table, "gold.compare", compare_id)
        # One row per status (at most three): counts, not the differing rows.
        counts = spark.table(report_table.replace("`", "")).where(F.col("compare_id") == compare_id).groupBy(
            "status").count().collect()
        by_status = {r["status"]: r["count"] for r in counts}
        (snap_n, snap_sum), (rep_n, rep_sum) = _checksum(snap), _checksum(rep)
        applied = spark.table(st.table("gold", "apply_progress").replace("`", "")).where(
            (F.col("target") == model) & (F.col("source_database") == src)).agg(F.max("applied_scn")).first()[0]
        return CompareResult(
            compare_id=compare_id, target=model, source_database=src, snapshot_scn=scn_row[0], applied_scn=applied,
            snapshot_rows=snap_n, replica_rows=rep_n, snapshot_checksum=snap_sum, replica_checksum=rep_sum,
            only_in_snapshot=by_status.get("only_in_snapshot", 0), only_in_replica=by_status.get("only_in_replica", 0),
            different=by_status.get("different", 0),
            not_compared=typed.where("_error IS NOT NULL").count() + unrouted.count(),
        )
    finally:
        typed.unpersist()


def resnapshot(spark: SparkSession, channel: Channel, table: str, path: str | Path) -> list[Path]:
    """Land the snapshot at ``path`` (of ``table`` alone) in the channel's snapshot folder:
    the next run loads it into the target and instantiates the table there. Returns the
    files landed."""
    folders = [ld for ld in channel.landing if ld.snapshot]
    if not folders:
        raise ApplyError("resnapshot: the channel has no snapshot landing folder (a landing with snapshot: true)")
    model = target_model_name(*split_table_name(table, "table"))
    _typed, unrouted, _src = typed_snapshot(spark, channel, Path(path), model)
    if unrouted.limit(1).count():
        raise ApplyError(f"resnapshot: the snapshot {path} holds rows that do not reach {table}: "
                         "a re-snapshot of one table holds that table alone")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    folder = folders[0].path
    folder.mkdir(parents=True, exist_ok=True)
    landed = []
    for i, f in enumerate(_files(Path(path))):
        dst = folder / f"resnapshot_{model}_{stamp}_{i:04d}.jsonl"
        shutil.copyfile(f, dst)
        landed.append(dst)
    return landed

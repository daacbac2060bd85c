"""Incremental, exactly-once ingest of landing folders into bronze.

Each landing folder is read by a Structured Streaming file source with an
``availableNow`` trigger and its own checkpoint, so a re-run reads only new files and
a run with no new files writes nothing. Every micro-batch writes bronze and
quarantine with ``txnAppId``/``txnVersion`` = (landing, batch id): a batch replayed after
a crash is skipped by Delta rather than appended twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bronze.records import (
    BRONZE_DDL,
    POSITION_KEY,
    QUARANTINE_DDL,
    claims_position,
    parse_lines,
    position_claims,
    to_bronze,
    to_quarantine,
)
from lakestreams.config import Channel, Landing
from lakestreams.delta_io import append
from lakestreams.faults import kill_point

BRONZE_TABLE = "change_records"
QUARANTINE_TABLE = "quarantine"


@dataclass
class IngestCounts:
    landing: str
    batches: int = 0
    records: int = 0
    quarantined: int = 0


def create_bronze_tables(spark: SparkSession, channel: Channel) -> None:
    """Create the bronze tables if missing (append-only; change data feed on for silver)."""
    st = channel.storage
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {st.table('bronze', BRONZE_TABLE)} ({BRONZE_DDL}) USING DELTA "
        "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'delta.appendOnly' = 'true')"
    )
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {st.table('bronze', QUARANTINE_TABLE)} ({QUARANTINE_DDL}) USING DELTA "
        "TBLPROPERTIES ('delta.appendOnly' = 'true')"
    )


def _batch_writer(channel: Channel, landing: Landing, counts: IngestCounts):
    st = channel.storage
    bronze_table = st.table("bronze", BRONZE_TABLE)
    quarantine_table = st.table("bronze", QUARANTINE_TABLE)
    app = f"{channel.name}.{landing.name}"

    def write(batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        parsed = (
            batch.withColumn("_landing", F.lit(landing.name))
            .withColumn("_txn_mode", F.lit(landing.transactions))
            .withColumn("_ingest_batch", F.lit(batch_id).cast("bigint"))
            .withColumn("_ingested_at", F.current_timestamp())
            .transform(lambda lines: parse_lines(lines, landing))
            .persist()
        )
        rows = None
        try:
            valid = to_bronze(parsed)
            rows = position_claims(valid, _holders(spark, bronze_table, valid)).persist()
            clashes = rows.where(F.col("_claim_reason").isNotNull()).select(
                "raw", F.col("_claim_reason").alias("reason"), "_landing", "_source_file", "_ingest_batch", "_ingested_at"
            )
            # One row of counts per micro-batch: metadata.
            tally = rows.agg(
                F.count_if(F.col("_claim_reason").isNull()).alias("ok"),
                F.count_if(F.col("_claim_reason").isNotNull()).alias("clash"),
            ).first()
            ok = int(tally["ok"])
            bad = int(tally["clash"]) + parsed.where(F.col("_reason").isNotNull()).count()
            # An empty write would still commit a table version: skip it.
            if ok:
                append(rows.where(F.col("_claim_reason").isNull()).drop("_claim_reason"), bronze_table, f"bronze:{app}", batch_id)
                kill_point("bronze.records")
            if bad:
                append(to_quarantine(parsed).unionByName(clashes), quarantine_table, f"quarantine:{app}", batch_id)
            counts.batches += 1
            counts.records += ok
            counts.quarantined += bad
            kill_point("bronze.offsets")
        finally:
            if rows is not None:
                rows.unpersist()
            parsed.unpersist()

    return write


def _holders(spark: SparkSession, bronze_table: str, rows: DataFrame) -> DataFrame | None:
    """The bronze records that already hold a position this batch claims, or None when
    none does (the common case: one scan of three key columns, no payload read)."""
    keys = list(POSITION_KEY)
    bronze = spark.table(bronze_table.replace("`", ""))
    claimed = rows.where(claims_position()).select(*keys).distinct()
    # A limit-1 count: metadata, not change data.
    if bronze.select(*keys).join(claimed, keys, "left_semi").limit(1).count() == 0:
        return None
    return bronze


def ingest_landing(spark: SparkSession, channel: Channel, landing: Landing) -> IngestCounts:
    """Ingest the new files of one landing folder; returns what this call added."""
    counts = IngestCounts(landing.name)
    landing.path.mkdir(parents=True, exist_ok=True)
    checkpoint = channel.storage.state / "checkpoints" / "bronze" / landing.name
    lines = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", 64)
        .load(str(landing.path))
        .select(F.col("value").alias("raw"), F.col("_metadata.file_path").alias("_source_file"))
    )
    query = (
        lines.writeStream.foreachBatch(_batch_writer(channel, landing, counts))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .queryName(f"bronze_{channel.name}_{landing.name}")
        .start()
    )
    query.awaitTermination()
    return counts


def run_bronze(spark: SparkSession, channel: Channel) -> list[IngestCounts]:
    """Ingest every landing folder of the channel."""
    create_bronze_tables(spark, channel)
    return [ingest_landing(spark, channel, landing) for landing in channel.landing]

"""Idempotent Delta writes: every stage writes through these, keyed by (app id, version)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def append(df: DataFrame, table: str, app_id: str, version: int) -> None:
    """Append once: Delta skips the write if (app_id, version) already committed to ``table``."""
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", version)
        .saveAsTable(table.replace("`", ""))
    )


def overwrite(df: DataFrame, table: str, app_id: str, version: int) -> None:
    """Replace the table's content once per (app_id, version). A new schema may bring a
    TIMESTAMP_NTZ column (a DDL added a DATE): Delta wants its table feature enabled first."""
    if "timestamp_ntz" in df.schema.simpleString() and df.sparkSession.catalog.tableExists(table.replace("`", "")):
        allow_timestamp_ntz(df.sparkSession, table)
    (
        df.write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .option("txnAppId", app_id)
        .option("txnVersion", version)
        .saveAsTable(table.replace("`", ""))
    )


def log_state(spark: SparkSession, table: str, row: tuple, schema: str, app_id: str, version: int) -> None:
    """Append one run-log row (with the time) once: the stages' intent and completion log."""
    df = spark.createDataFrame([row], schema).withColumn("at", F.current_timestamp())
    append(df, table, app_id, version)


def allow_timestamp_ntz(spark: SparkSession, table: str) -> None:
    """Enable Delta's timestampNtz feature on an existing table (``table``: a Storage.table
    name), which a new TIMESTAMP_NTZ column needs first."""
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")

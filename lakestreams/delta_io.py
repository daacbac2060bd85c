"""Idempotent Delta writes: every stage writes through these, keyed by (app id, version)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    _parse_datatype_string,
)

from lakestreams.config import Storage
from lakestreams.faults import kill_point


def append(df: DataFrame, table: str, app_id: str, version: int, merge_schema: bool = False) -> None:
    """Append once: Delta skips the write if (app_id, version) already committed to ``table``.
    ``merge_schema``: fields ``df`` has and the table lacks are added (Delta schema merging)."""
    writer = df.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", version)
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    writer.saveAsTable(table.replace("`", ""))
    kill_point("delta.write")


def append_rows(df: DataFrame, table: str, app_id: str, version: int) -> bool:
    """``append`` if ``df`` has a row; whether it had. An empty append still commits a
    table version, and the table's next reader rebuilds its snapshot for it: the logs most
    runs leave empty (errors, outcomes) pay one small count instead."""
    if df.limit(1).count() == 0:  # one number, no rows
        return False
    append(df, table, app_id, version)
    return True


def overwrite(df: DataFrame, table: str, app_id: str, version: int) -> None:
    """Replace the table's content once per (app_id, version). A new schema may bring a
    TIMESTAMP_NTZ column (a DDL added a DATE): Delta wants its table feature enabled first;
    a table that holds such a column has it already (no ALTER, no commit of its own)."""
    name = table.replace("`", "")
    spark = df.sparkSession
    if "timestamp_ntz" in df.schema.simpleString() and spark.catalog.tableExists(name):
        if "timestamp_ntz" not in spark.table(name).schema.simpleString():
            allow_timestamp_ntz(spark, table)
    (
        df.write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .option("txnAppId", app_id)
        .option("txnVersion", version)
        .saveAsTable(name)
    )
    kill_point("delta.write")


def log_state(spark: SparkSession, table: str, row: tuple, schema: str, app_id: str, version: int,
              merge_schema: bool = False, at_micros: int | None = None) -> None:
    """Append one run-log row (with the time: ``at_micros``, epoch microseconds, when
    given) once: the stages' intent and completion log."""
    at = F.current_timestamp() if at_micros is None else F.timestamp_micros(F.lit(at_micros))
    df = local_rows(spark, [row], schema).withColumn("at", at)
    append(df, table, app_id, version, merge_schema)


def table_names(spark: SparkSession, storage: Storage, layer: str, views: bool = True) -> set[str]:
    """The names of a layer's tables and views (temporary views left out; ``views=False``:
    its persistent views too), as the catalog keeps them (lower case). SHOW statements,
    whose rows reach the driver in one call: ``spark.catalog.listTables`` makes a few py4j
    calls per table, which a channel of many quiet tables paid on every run (0.35 s a
    listing at 80 tables), and it cannot decode its rows where expressions are not compiled
    (``spark.sql.codegen.factoryMode=NO_CODEGEN``, as ``lakestreams.spark.interpreted``
    sets it: Spark's EXPRESSION_DECODING_FAILED on ``catalog.Table``)."""
    # Catalog and schema are identifiers checked when the channel was loaded; named in full,
    # whatever catalog the session is in (a notebook's listing, explore.layer_tables).
    # One row per table: metadata.
    schema = ".".join(f"`{p}`" for p in (storage.catalog, storage.schema_name(layer)) if p)
    names = {r[0] for r in spark.sql(f"SHOW TABLES IN {schema}").where("NOT isTemporary").select("tableName").collect()}
    if not views:
        names -= {r[0] for r in spark.sql(f"SHOW VIEWS IN {schema}").where("NOT isTemporary").select("viewName").collect()}
    return names


def create_missing_tables(spark: SparkSession, storage: Storage, layer: str, tables: Sequence[tuple[str, str]]) -> None:
    """Create those of the layer's tables (name, constant column list) that do not exist
    yet. One catalog listing instead of a CREATE TABLE IF NOT EXISTS per table: every stage
    checks its tables, and each such statement loads the table's Delta log."""
    found = table_names(spark, storage, layer)
    for name, ddl in tables:
        if name.lower() not in found:
            # Names and column lists are the project's constants (quoted by Storage.table).
            spark.sql(f"CREATE TABLE IF NOT EXISTS {storage.table(layer, name)} ({ddl}) USING DELTA")


def drop_table(spark: SparkSession, table: str) -> bool:
    """Drop a Delta table and its data; False if there was none. Locally a new process registers the tables it finds
    in the warehouse as external tables (``ensure_schemas``), whose DROP keeps the folder:
    a table created again under that name would find the old log, so the folder goes too."""
    name = table.replace("`", "")
    if not spark.catalog.tableExists(name):
        return False
    location = urlparse(DeltaTable.forName(spark, name).detail().first()["location"])
    # ``table`` is a Storage.table name: checked identifiers, quoted.
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    if location.scheme in ("", "file") and Path(location.path).is_dir():
        shutil.rmtree(location.path)
    return True


def allow_timestamp_ntz(spark: SparkSession, table: str) -> None:
    """Enable Delta's timestampNtz feature on an existing table (``table``: a Storage.table
    name), which a new TIMESTAMP_NTZ column needs first."""
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")


def local_rows(spark: SparkSession, rows: Sequence, schema: str | StructType) -> DataFrame:
    """A frame of rows the driver made (run-log rows, dictionary revisions, settings) as
    literals: unlike ``createDataFrame`` over a list it needs no Python worker, which on a
    small table costs more than the write. Rows are tuples, Row objects or dicts in
    ``schema``'s field order; values become typed literals, never SQL text."""
    struct = schema if isinstance(schema, StructType) else _parse_datatype_string(schema)
    if not rows:
        return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in struct.fields])
    try:
        text = json.dumps([_plain(r, struct) for r in rows])
    except _NotPlain:
        # Decimals, times, dates and other values: typed literals, a few JVM calls per value.
        return spark.range(1).select(F.inline(F.array(*[_literal(r, struct) for r in rows])))
    # Strings, booleans, whole numbers and their arrays, maps and structs (the run logs, the
    # registry and dictionary rows): one text literal read by the schema, whatever the
    # number of values (ten registry rows: 0.06 s against 1.2 s as literals). FAILFAST: a
    # value the schema cannot read stops here, never becomes a NULL.
    return spark.range(1).select(F.inline(F.from_json(F.lit(text), ArrayType(struct), {"mode": "FAILFAST"})))


def _fields(value, dtype: StructType) -> list:
    """A row (a tuple, Row or dict) as (value, field) pairs of ``dtype``; a dict's missing
    fields are NULL, a tuple must have one value per field."""
    if isinstance(value, Mapping):
        return [(value.get(f.name), f) for f in dtype.fields]
    values = list(value)
    if len(values) != len(dtype.fields):
        raise ValueError(f"a row of {len(values)} values for {len(dtype.fields)} fields: {value!r}")
    return list(zip(values, dtype.fields, strict=True))


class _NotPlain(Exception):
    """A value ``_plain`` leaves to ``_literal``."""


#: Whole-number types and their ranges.
_WHOLE = {ByteType: 7, ShortType: 15, IntegerType: 31, LongType: 63}


def _plain(value, dtype: DataType):
    """``value`` as JSON that ``from_json`` reads back as exactly ``value`` under ``dtype``:
    a string for STRING, a bool for BOOLEAN, an int in range for the whole-number types, and
    arrays, string-keyed maps and structs of them; anything else raises ``_NotPlain``."""
    if value is None:
        return None
    if isinstance(dtype, StructType):
        return {f.name: _plain(v, f.dataType) for v, f in _fields(value, dtype)}
    if isinstance(dtype, ArrayType) and isinstance(value, (list, tuple)):
        return [_plain(v, dtype.elementType) for v in value]
    if isinstance(dtype, MapType) and isinstance(dtype.keyType, StringType) and isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {k: _plain(v, dtype.valueType) for k, v in value.items()}
    elif isinstance(dtype, StringType) and isinstance(value, str):
        return value
    elif isinstance(dtype, BooleanType) and isinstance(value, bool):
        return value
    elif type(dtype) in _WHOLE and type(value) is int and -(2 ** _WHOLE[type(dtype)]) <= value < 2 ** _WHOLE[type(dtype)]:
        return value
    raise _NotPlain


def _literal(value, dtype: DataType) -> Column:
    if value is None:
        return F.lit(None).cast(dtype)
    if isinstance(dtype, StructType):
        return F.struct(*[_literal(v, f.dataType).alias(f.name) for v, f in _fields(value, dtype)])
    if isinstance(dtype, ArrayType):
        return F.array(*[_literal(v, dtype.elementType) for v in value]).cast(dtype)
    if isinstance(dtype, MapType):
        pairs = [c for k, v in value.items() for c in (_literal(k, dtype.keyType), _literal(v, dtype.valueType))]
        return F.create_map(*pairs).cast(dtype)
    return F.lit(value).cast(dtype)

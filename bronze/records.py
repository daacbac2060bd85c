"""Parsing and checking landing lines as native change records (pure transformations).

Each line is parsed once into a VARIANT, so ``old_values``/``new_values`` keep their
JSON types and the difference between an absent column and a JSON null. A line that is
not a change record gets a reason and goes to quarantine; nothing is dropped.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from bronze.formats import CONVERTERS, first_reason
from lakestreams.config import GLOBAL_NAME_JAVA, Landing

ROW_COMMANDS = ("INSERT", "UPDATE", "DELETE", "LOB_UPDATE", "TRUNCATE")
#: Transaction control: BEGIN is an optional marker; COMMIT completes a transaction (with
#: ``event_count``: once that many of its records have landed), ROLLBACK discards it.
CONTROL_COMMANDS = ("COMMIT", "ROLLBACK", "BEGIN")
STRING_FIELDS = (
    "source_database",
    "command_type",
    "object_owner",
    "object_name",
    "object_type",
    "base_table_owner",
    "base_table_name",
    "ddl_text",
    "current_schema",
    "logon_user",
    "transaction_id",
    "tag",
)
INTEGER_FIELDS = ("scn", "commit_scn", "position", "event_count")

#: Columns of the bronze change-record table, in order.
BRONZE_COLUMNS = (
    *STRING_FIELDS[:10],
    "old_values",
    "new_values",
    "transaction_id",
    "scn",
    "commit_scn",
    "position",
    "commit_time",
    "tag",
    "event_count",
    "raw",
    "_landing",
    "_txn_mode",
    "_source_file",
    "_ingest_batch",
    "_ingested_at",
)

BRONZE_DDL = """
  source_database STRING, command_type STRING, object_owner STRING, object_name STRING,
  object_type STRING, base_table_owner STRING, base_table_name STRING, ddl_text STRING,
  current_schema STRING, logon_user STRING, old_values VARIANT, new_values VARIANT,
  transaction_id STRING, scn BIGINT, commit_scn BIGINT, position BIGINT,
  commit_time TIMESTAMP, tag STRING, event_count BIGINT, raw STRING, _landing STRING, _txn_mode STRING,
  _source_file STRING, _ingest_batch BIGINT, _ingested_at TIMESTAMP
"""

QUARANTINE_DDL = """
  raw STRING, reason STRING, _landing STRING, _source_file STRING,
  _ingest_batch BIGINT, _ingested_at TIMESTAMP
"""


CHECKED_FIELDS = (*STRING_FIELDS, *INTEGER_FIELDS, "old_values", "new_values", "commit_time")


def _kind(field: str) -> Column:
    """Spark's name of the JSON type of a top-level field; NULL when absent, VOID for null.

    Computed once per line by :func:`parse_lines` (column ``_k_<field>``).
    """
    return F.col(f"_k_{field}")


def _present(field: str) -> Column:
    """The field is there and not JSON null."""
    k = _kind(field)
    return k.isNotNull() & (k != F.lit("VOID"))


def _is_integer(field: str) -> Column:
    k = _kind(field)
    return k.isin("BIGINT", "INT", "SMALLINT", "TINYINT") | k.rlike(r"^DECIMAL\(\d+,0\)$")


def _get(field: str) -> Column:
    """The field as a string (integer fields: bigint; NULL when it does not convert), computed once per line."""
    return F.col(f"_g_{field}")


def _extract(field: str, spark_type: str) -> Column:
    return F.expr(f"try_variant_get(_v, '$.{field}', '{spark_type}')")


def _reason() -> Column:
    """First reason a parsed line is not a change record, or NULL when it is one."""
    cmd = _get("command_type")
    is_ddl = _present("ddl_text")
    is_control = cmd.isin(*CONTROL_COMMANDS) & ~is_ddl
    is_row = ~is_ddl & ~is_control
    # A COMMIT that counts its records, and a BEGIN, may leave the commit SCN and time to them.
    commit_from_records = is_control & ((cmd == "BEGIN") | ((cmd == "COMMIT") & _present("event_count")))
    src_kind = F.schema_of_variant(F.col("_src"))
    checks: list[tuple[Column, str | Column]] = [
        (F.trim(F.col("raw")) == "", "empty line"),
        (
            ~F.expr("is_valid_utf8(raw)"),
            "line is not valid UTF-8 (the capture must write UTF-8: check the character set it writes files in)",
        ),
        (F.col("_src").isNull(), "not valid JSON"),
        (F.col("_more"), "more than one JSON value on the line (one change record per line)"),
        (F.coalesce(~src_kind.startswith("OBJECT"), F.lit(False)) & F.col("_format_reason").isNull(), "not a JSON object"),
        (F.col("_format_reason").isNotNull(), F.col("_format_reason")),
    ]
    for f in STRING_FIELDS:
        checks.append((_present(f) & (_kind(f) != "STRING"), f"field {f} is not a string"))
    for f in INTEGER_FIELDS:
        checks.append((_present(f) & ~_is_integer(f), f"field {f} is not an integer"))
        checks.append((_present(f) & _is_integer(f) & _get(f).isNull(), f"field {f} does not fit a 64-bit integer"))
        checks.append((_present(f) & (_get(f) < 0), f"field {f} is negative"))
    for f in ("old_values", "new_values"):
        checks.append((_present(f) & ~_kind(f).startswith("OBJECT"), f"field {f} is not a JSON object"))
    checks += [
        (~_present("command_type"), "missing command_type"),
        (~_present("transaction_id"), "missing transaction_id"),
        (_present("event_count") & ~(is_control & (cmd == "COMMIT")), "event_count belongs on a COMMIT record only"),
        (~_present("commit_scn") & ~commit_from_records, "missing commit_scn"),
        (~_present("source_database"), "missing source_database"),
        (~_get("source_database").rlike(GLOBAL_NAME_JAVA), "field source_database is not a global database name (e.g. DBS1.EXAMPLE.COM)"),
        (~_present("commit_time") & ~commit_from_records, "missing commit_time"),
        (
            _present("commit_time") & F.try_to_timestamp(_get("commit_time")).isNull(),
            "field commit_time is not an ISO-8601 timestamp",
        ),
        (_present("tag") & ~_get("tag").rlike("^([0-9A-Fa-f]{2})*$"), "field tag is not a hex string"),
        (
            is_row & ~cmd.isin(*ROW_COMMANDS),
            F.concat(F.lit("command_type "), cmd, F.lit(" is not a row command (") ,
                     F.lit(", ".join(ROW_COMMANDS + CONTROL_COMMANDS)), F.lit(") and the record has no ddl_text")),
        ),
        ((is_row | is_ddl) & ~_present("scn"), "missing scn"),
        ((is_row | is_ddl) & ~_present("position"), "missing position"),
        (
            (is_row | is_ddl) & (_get("scn") > _get("commit_scn")),
            "scn is above commit_scn",
        ),
        (is_row & ~(_present("object_owner") & _present("object_name")), "row record without object_owner/object_name"),
        (is_row & cmd.isin("INSERT") & ~_present("new_values"), "INSERT without new_values"),
        (is_row & cmd.isin("UPDATE", "LOB_UPDATE") & ~_present("new_values"), "UPDATE without new_values"),
        (is_row & cmd.isin("UPDATE", "LOB_UPDATE", "DELETE") & ~_present("old_values"), "UPDATE/DELETE without old_values"),
    ]
    return first_reason(checks)


def parse_lines(lines: DataFrame, landing: Landing | None = None) -> DataFrame:
    """Lines (``raw``, ``_source_file``, …) → the same rows with ``_v`` (the line as a
    native change record), ``_reason`` and helper columns. A Debezium or GoldenGate
    landing folder's lines are mapped onto the native record first (:mod:`bronze.formats`)."""
    # Parsed as the one element of an array: a JSON reader stops after the first value, so
    # a line holding two records (or a record and garbage) would otherwise lose the rest.
    parsed = lines.withColumn("_src", F.try_parse_json(F.concat(F.lit("["), F.col("raw"), F.lit("]")))).withColumns({
        "_more": F.expr("variant_get(_src, '$[1]') IS NOT NULL"),
        "_src": F.expr("variant_get(_src, '$[0]')"),
    })
    fmt = landing.format if landing is not None else "native"
    if fmt == "native":
        parsed = parsed.withColumns({"_v": F.col("_src"), "_format_reason": F.lit(None).cast("string")})
    else:
        parsed = CONVERTERS[fmt](parsed, landing.source_database)
    kinds = [F.expr(f"schema_of_variant(variant_get(_v, '$.{f}'))").alias(f"_k_{f}") for f in CHECKED_FIELDS]
    values = [_extract(f, "string").alias(f"_g_{f}") for f in (*STRING_FIELDS, "commit_time")]
    values += [_extract(f, "bigint").alias(f"_g_{f}") for f in INTEGER_FIELDS]
    return parsed.select("*", *kinds, *values).withColumn("_reason", _reason())


def to_bronze(parsed: DataFrame) -> DataFrame:
    """Valid parsed lines → rows of the bronze change-record table. ``parsed`` is best
    persisted first, as the ingest does: a Debezium record's mapping (with its value
    decoding) is a large expression, which the optimizer would otherwise copy into each
    field read from it."""
    # Global names compare case-insensitively in Oracle; rules and channel files use upper case.
    cols = [(F.upper(_get(f)) if f == "source_database" else _get(f)).alias(f) for f in STRING_FIELDS[:10]]
    cols += [
        F.expr("variant_get(_v, '$.old_values')").alias("old_values"),
        F.expr("variant_get(_v, '$.new_values')").alias("new_values"),
        _get("transaction_id").alias("transaction_id"),
        *(_get(f).alias(f) for f in ("scn", "commit_scn", "position")),
        F.try_to_timestamp(_get("commit_time")).alias("commit_time"),
        F.upper(_get("tag")).alias("tag"),
        _get("event_count").alias("event_count"),
        F.col("raw"),
        F.col("_landing"),
        F.col("_txn_mode"),
        F.col("_source_file"),
        F.col("_ingest_batch"),
        F.col("_ingested_at"),
    ]
    return parsed.where(F.col("_reason").isNull()).select(*cols)


def record_hash() -> Column:
    """Identity of a bronze record's payload: the same change landed twice hashes the same."""
    parts = [
        F.coalesce(F.col(c).cast("string"), F.lit("\u0000"))
        for c in (
            "source_database", "command_type", "object_owner", "object_name", "object_type",
            "base_table_owner", "base_table_name", "ddl_text", "transaction_id", "scn",
            "commit_scn", "position", "commit_time", "tag", "event_count",
        )
    ]
    parts += [F.coalesce(F.to_json(F.col(c)), F.lit("\u0000")) for c in ("old_values", "new_values")]
    return F.sha2(F.concat_ws("\u0001", *parts), 256)


POSITION_KEY = ("source_database", "transaction_id", "position")


def claims_position() -> Column:
    """A bronze row claims its position: it has one and is not a control record (COMMIT,
    ROLLBACK, BEGIN claim none, even when they carry one)."""
    return F.col("position").isNotNull() & ~(F.col("command_type").isin(*CONTROL_COMMANDS) & F.col("ddl_text").isNull())


def position_claims(rows: DataFrame, accepted: DataFrame | None) -> DataFrame:
    """Bronze rows → the same rows with ``_claim_reason`` set on those whose
    ``(source_database, transaction_id, position)`` is held by a different record.

    A position belongs to the first record that claimed it: one already in bronze
    (``accepted``), else the first of this batch in (file, line text) order. The same
    payload again is a duplicate (silver counts it) and keeps its place; a different
    payload cannot be told apart from the right one by anything but landing order, so it
    goes to quarantine with the file of the record that holds the position. Which rows
    claim a position: :func:`claims_position`.
    """
    keys = list(POSITION_KEY)
    claims = claims_position()
    rows = rows.withColumns({"_h": record_hash(), "_claims": claims})
    w = Window.partitionBy(*keys, "_claims").orderBy("_source_file", "raw")
    first = rows.withColumns({"_fh": F.first("_h").over(w), "_ff": F.first("_source_file").over(w)})
    if accepted is not None:
        held = (
            accepted.where(claims)
            .join(rows.where("_claims").select(*keys).distinct(), keys, "left_semi")
            .withColumn("_ah", record_hash())
            .groupBy(*keys)
            .agg(F.min("_ah").alias("_ah"), F.min("_source_file").alias("_af"))
        )
        first = first.join(held, keys, "left")
    else:
        first = first.withColumns({"_ah": F.lit(None).cast("string"), "_af": F.lit(None).cast("string")})
    holder_hash = F.coalesce("_ah", "_fh")
    clash = F.col("_claims") & (F.col("_h") != holder_hash)
    reason = F.concat(
        F.lit("another record with a different payload holds position "), F.col("position").cast("string"),
        F.lit(" of transaction "), F.col("transaction_id"), F.lit(" from "), F.col("source_database"),
        F.lit(" (landed in "), F.coalesce("_af", "_ff"),
        F.lit("); a position belongs to one change: fix the capture and land the right record once"),
    )
    return first.select(*BRONZE_COLUMNS, F.when(clash, reason).alias("_claim_reason"))


def to_quarantine(parsed: DataFrame) -> DataFrame:
    """Invalid parsed lines → quarantine rows with the reason."""
    return parsed.where(F.col("_reason").isNotNull()).select(
        "raw",
        F.col("_reason").alias("reason"),
        "_landing",
        "_source_file",
        "_ingest_batch",
        "_ingested_at",
    )

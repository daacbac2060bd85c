"""Driver-made rows as literal frames: the same rows and types as ``createDataFrame``; a
layer's table names from one catalog statement."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pytest
from chispa import assert_df_equality
from conftest import make_channel
from pyspark.sql import Row

from lakestreams.delta_io import create_missing_tables, local_rows, table_names
from lakestreams.spark import ensure_schemas
from silver.dictionary import DICTIONARY_DDL

SCHEMA = (
    "n BIGINT, s STRING, d DECIMAL(10,2), t TIMESTAMP, day DATE, flag BOOLEAN, xs ARRAY<STRING>, "
    "m MAP<STRING, STRING>, nested ARRAY<STRUCT<name: STRING, cols: ARRAY<STRING>>>"
)
ROWS = [
    (1, "a'; DROP TABLE x; --", Decimal("12.50"), dt.datetime(2026, 1, 2, 3, 4, 5, 123456), dt.date(2026, 1, 2), True,
     ["x", None], {"K": "v"}, [("c1", ["A", "B"]), ("c2", [])]),
    Row(n=2, s=None, d=None, t=None, day=None, flag=None, xs=[], m={}, nested=None),
    {"n": 3, "s": "b", "xs": None},  # missing fields are NULL, as createDataFrame makes them
]


def test_literal_rows_equal_created_rows(spark):
    assert_df_equality(local_rows(spark, ROWS, SCHEMA), spark.createDataFrame(ROWS, SCHEMA), ignore_nullable=True)
    assert_df_equality(local_rows(spark, [], SCHEMA), spark.createDataFrame([], SCHEMA), ignore_nullable=True)
    row = {"source_database": "DB", "owner": "HR", "table_name": "T", "revision_scn": 5,
           "columns": [{"name": "ID", "oracle_type": "NUMBER", "spark_type": "int", "nullable": False}],
           "renames": {"NEW": "OLD"}, "constraints": [{"name": "PK", "kind": "P", "columns": ["ID"]}]}
    assert_df_equality(local_rows(spark, [row], DICTIONARY_DDL), spark.createDataFrame([row], DICTIONARY_DDL),
                       ignore_nullable=True)


#: Only strings, booleans and whole numbers: read from one JSON text literal.
PLAIN = "n BIGINT, i INT, b TINYINT, s STRING, flag BOOLEAN, xs ARRAY<STRING>, m MAP<STRING, BIGINT>, " \
    "nested ARRAY<STRUCT<name: STRING, cols: ARRAY<STRING>>>"
PLAIN_ROWS = [
    (2**63 - 1, -(2**31), 127, 'a\'"; DROP TABLE x; --\n\t\\ é ✓ 𝄞', False, ["", None], {"K": -1, "L": None},
     [("c1", ["A"]), ("c2", [])]),
    Row(n=-(2**63), i=2**31 - 1, b=-128, s="", flag=True, xs=[], m={}, nested=[None]),
    {"n": 3},
]


def test_plain_rows_read_from_one_text_equal_created_rows(spark):
    plain = local_rows(spark, PLAIN_ROWS, PLAIN)
    assert "from_json" in plain._jdf.queryExecution().logical().toString()
    assert_df_equality(plain, spark.createDataFrame(PLAIN_ROWS, PLAIN), ignore_nullable=True)
    assert "from_json" not in local_rows(spark, ROWS, SCHEMA)._jdf.queryExecution().logical().toString()
    # A value of another Python type than its field's (an int for a STRING) is a typed literal, cast as before.
    assert local_rows(spark, [(5, None, None, 7, None, None, None, None)], PLAIN).first()["s"] == "7"


def test_a_row_of_the_wrong_width_is_refused(spark):
    with pytest.raises(ValueError, match="a row of 2 values for 9 fields"):
        local_rows(spark, [(1, "a")], SCHEMA)
    with pytest.raises(ValueError, match="a row of 2 values for 8 fields"):
        local_rows(spark, [(1, "a")], PLAIN)


def test_table_names_are_the_layers_tables_and_views_not_temporary_views(spark, tmp_path):
    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    assert table_names(spark, ch.storage, "gold") == set()
    create_missing_tables(spark, ch.storage, "gold", (("Apply_Progress", "n BIGINT"), ("other", "s STRING")))
    spark.sql(f"CREATE OR REPLACE VIEW {ch.storage.table('gold', 'v')} AS SELECT 1 AS n")
    spark.range(1).createOrReplaceTempView("temporary_one")
    try:
        # The catalog keeps names in lower case; a temporary view is no table of the layer.
        assert table_names(spark, ch.storage, "gold") == {"apply_progress", "other", "v"}
        assert table_names(spark, ch.storage, "silver") == set()
        # Listed again, nothing is created twice.
        create_missing_tables(spark, ch.storage, "gold", (("apply_progress", "n BIGINT"),))
        assert table_names(spark, ch.storage, "gold") == {"apply_progress", "other", "v"}
        assert table_names(spark, ch.storage, "gold", views=False) == {"apply_progress", "other"}
        # A catalog is named in the statement, whatever catalog the session is in.
        in_catalog = dataclasses.replace(ch.storage, catalog="spark_catalog")
        assert table_names(spark, in_catalog, "gold", views=False) == {"apply_progress", "other"}
    finally:
        spark.catalog.dropTempView("temporary_one")


def test_an_overwrite_enables_timestamp_ntz_once_then_writes_alone(spark, tmp_path):
    from pyspark.sql import functions as F

    from lakestreams.delta_io import overwrite

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    table = ch.storage.table("silver", "plan__t")
    overwrite(spark.range(2), table, "t", 1)
    with_day = spark.range(3).withColumn("day", F.lit("2026-01-02 03:04:05").cast("timestamp_ntz"))
    overwrite(with_day, table, "t", 2)
    overwrite(with_day.where("id > 0"), table, "t", 3)
    overwrite(with_day, table, "t", 3)  # the same key again: skipped
    ops = [r[0] for r in spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").select("operation").collect()]
    # The first write, the feature enabled once, then one commit per new write.
    assert ops == ["CREATE OR REPLACE TABLE AS SELECT", "SET TBLPROPERTIES", "CREATE OR REPLACE TABLE AS SELECT",
                   "CREATE OR REPLACE TABLE AS SELECT"], ops
    assert spark.table(table.replace("`", "")).count() == 2


def test_an_empty_log_append_commits_nothing_and_a_row_commits_once(spark, tmp_path):
    from lakestreams.delta_io import append_rows

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    table = ch.storage.table("silver", "log_t")
    create_missing_tables(spark, ch.storage, "silver", (("log_t", "n BIGINT, s STRING"),))
    empty = local_rows(spark, [], "n BIGINT, s STRING")
    assert append_rows(empty, table, "log", 1) is False
    one = local_rows(spark, [(1, "a")], "n BIGINT, s STRING")
    assert append_rows(one, table, "log", 2) is True
    assert append_rows(one, table, "log", 2) is True  # the same key again: Delta skips the write
    ops = [r[0] for r in spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").select("operation").collect()]
    assert ops == ["CREATE TABLE", "WRITE"], ops
    assert spark.table(table.replace("`", "")).count() == 1


def test_differs_compares_rows_as_multisets_with_nulls(spark):
    from gold.plan import differs

    schema = "k STRING, n BIGINT"
    a = local_rows(spark, [("x", None), ("y", 1), ("y", 1)], schema)
    assert not differs(a, local_rows(spark, [("y", 1), ("x", None), ("y", 1)], schema))
    assert not differs(a, local_rows(spark, [("y", 1), ("x", None), ("y", 1)], schema).select("n", "k"))
    assert differs(a, local_rows(spark, [("x", None), ("y", 1)], schema))  # one copy fewer
    assert differs(a, local_rows(spark, [("x", 0), ("y", 1), ("y", 1)], schema))  # NULL is not 0
    assert differs(local_rows(spark, [], schema), local_rows(spark, [("x", None)], schema))
    # As many rows each side, but not as many copies of each.
    assert differs(a, local_rows(spark, [("x", None), ("x", None), ("y", 1)], schema))


def test_a_plan_without_failed_transactions_joins_nothing_and_one_with_them_drops_and_flags_theirs(spark):
    from gold.plan import failed_transactions, with_failed_flag, without_failed

    keys = "_source_database STRING, _transaction_id STRING"
    changes = local_rows(spark, [("A", "1.1", 1), ("A", "1.2", 2), ("B", "1.1", 3)], f"{keys}, v INT")
    failed = local_rows(spark, [("A", "1.1", "ORA-01403")], f"{keys}, _error STRING")
    assert failed_transactions(failed.limit(0)) is None
    assert without_failed(changes, None) is changes  # no join: the same plan
    assert_df_equality(with_failed_flag(changes, None).select("v", "_failed"),
                       local_rows(spark, [(1, None), (2, None), (3, None)], "v INT, _failed BOOLEAN"), ignore_row_order=True)
    bad = failed_transactions(failed)
    # Only source A's transaction 1.1 failed: B's 1.1 is another transaction.
    assert_df_equality(without_failed(changes, bad).select("v"), local_rows(spark, [(2,), (3,)], "v INT"),
                       ignore_row_order=True)
    assert_df_equality(with_failed_flag(changes, bad).select("v", "_failed"),
                       local_rows(spark, [(1, True), (2, None), (3, None)], "v INT, _failed BOOLEAN"), ignore_row_order=True)


def test_a_run_log_written_before_the_ledger_bound_reads_from_the_start_then_gains_it(spark, tmp_path):
    from lakestreams.delta_io import log_state
    from silver.run import DONE_ROW, RUN_ROW, open_from

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    runs = ch.storage.table("silver", "runs")
    # The run log as earlier versions made it: no bound column.
    create_missing_tables(spark, ch.storage, "silver", (("runs", RUN_ROW + ", at TIMESTAMP"),))
    log_state(spark, runs, (1, 1, 3, "done"), RUN_ROW, "silver.runs.done", 1)
    assert open_from(spark, ch) == 0  # the whole ledger
    log_state(spark, runs, (2, 4, 5, "done", 2), DONE_ROW, "silver.runs.done", 2, merge_schema=True)
    # A re-execution's batch logs no bound: the last one stands.
    log_state(spark, runs, (3, 6, 5, "done"), RUN_ROW, "silver.runs.done", 3)
    log_state(spark, runs, (4, 6, 7, "started"), RUN_ROW, "silver.runs.start", 4)
    assert "open_from" in spark.table(runs.replace("`", "")).columns
    assert (open_from(spark, ch), open_from(spark, ch, 2), open_from(spark, ch, 4)) == (2, 0, 2)

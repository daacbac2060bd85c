"""Driver-made rows as literal frames: the same rows and types as ``createDataFrame``; a
layer's table names from one catalog statement."""

from __future__ import annotations

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


def test_a_row_of_the_wrong_width_is_refused(spark):
    with pytest.raises(ValueError, match="a row of 2 values for 9 fields"):
        local_rows(spark, [(1, "a")], SCHEMA)


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
    finally:
        spark.catalog.dropTempView("temporary_one")

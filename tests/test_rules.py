"""System-created rules read as Oracle prints them, and rule sets behave as Table 5-1."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lakestreams.config import ClientSpec, RuleSpec
from silver.rules import Client, Rule, RuleSet, build_client

ROWS = [
    # source, command, owner, name, tag, base owner, base name, ddl
    ("DBS1.EXAMPLE.COM", "INSERT", "HR", "LOCATIONS", None, None, None, None),
    ("DBS1.EXAMPLE.COM", "INSERT", "HR", "EMPLOYEES", None, None, None, None),
    ("DBS1.EXAMPLE.COM", "INSERT", "OE", "ORDERS", None, None, None, None),
]
SCHEMA = (
    "source_database STRING, command_type STRING, object_owner STRING, object_name STRING, tag STRING, "
    "base_table_owner STRING, base_table_name STRING, ddl_text STRING"
)


def test_conditions_read_as_the_reference_prints_them():
    table_dml = Rule("LOCATIONS1", "DML", RuleSpec("TABLE", "HR", "LOCATIONS", source_database="DBS1.EXAMPLE.COM"))
    assert table_dml.condition == (
        "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'LOCATIONS')) and "
        ":dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    )
    table_ddl = Rule("COUNTRIES1", "DDL", RuleSpec("TABLE", "HR", "COUNTRIES", source_database="DBS1.EXAMPLE.COM"))
    assert table_ddl.condition == (
        "(((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'COUNTRIES') or "
        "(:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'COUNTRIES')) and "
        ":ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    )
    schema_ddl = Rule("HR1", "DDL", RuleSpec("SCHEMA", "HR", source_database="DBS1.EXAMPLE.COM"))
    assert schema_ddl.condition == (
        "((:ddl.get_object_owner() = 'HR' or :ddl.get_base_table_owner() = 'HR') and "
        ":ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    )
    assert Rule("G1", "DML", RuleSpec("GLOBAL")).condition == "(:dml.is_null_tag() = 'Y' )"
    assert Rule("G2", "DDL", RuleSpec("GLOBAL", include_tagged_lcr=True)).condition == (
        "(( :ddl.get_source_database_name()>=' ' OR :ddl.get_source_database_name()<=' ') )"
    )


LOC = Rule("LOCATIONS1", "DML", RuleSpec("TABLE", "HR", "LOCATIONS"))
HR = Rule("HR1", "DML", RuleSpec("SCHEMA", "HR"))


@pytest.mark.parametrize(
    "negative, positive, kept",
    [
        # Table 5-1, row by row: (negative set, positive set) → which records the client keeps.
        (None, None, {"LOCATIONS", "EMPLOYEES", "ORDERS"}),
        (None, (HR,), {"LOCATIONS", "EMPLOYEES"}),
        ((LOC,), None, {"EMPLOYEES", "ORDERS"}),
        ((LOC,), (HR,), {"EMPLOYEES"}),
        ((), None, {"LOCATIONS", "EMPLOYEES", "ORDERS"}),
        ((), (HR,), {"LOCATIONS", "EMPLOYEES"}),
        (None, (), set()),
        ((), (), set()),
        ((LOC,), (), set()),
    ],
)
def test_table_5_1(spark, negative, positive, kept):
    client = Client(
        "apply",
        "apply",
        positive=None if positive is None else RuleSet("POS", positive),
        negative=None if negative is None else RuleSet("NEG", negative),
    )
    df = spark.createDataFrame(ROWS, SCHEMA)
    got = {r["object_name"] for r in df.where(client.discard_reason().isNull()).collect()}
    assert got == kept


def test_tag_and_source_conditions(spark):
    client = build_client(
        ClientSpec("apply", "apply", rules=(RuleSpec("GLOBAL", source_database="DBS2.EXAMPLE.COM"),))
    )
    rows = [
        ("DBS2.EXAMPLE.COM", "INSERT", "HR", "A", None, None, None, None),
        ("DBS2.EXAMPLE.COM", "INSERT", "HR", "B", "11", None, None, None),
        ("DBS1.EXAMPLE.COM", "INSERT", "HR", "C", None, None, None, None),
        ("DBS2.EXAMPLE.COM", "CREATE TABLE", "HR", "D", None, None, None, "CREATE TABLE hr.d (x NUMBER)"),
    ]
    df = spark.createDataFrame(rows, SCHEMA).withColumn("reason", client.discard_reason())
    reasons = {r["object_name"]: r["reason"] for r in df.collect()}
    assert reasons["A"] is None
    assert reasons["B"] == reasons["C"] == reasons["D"] == "apply apply: no rule of positive rule set APPLY_RULESET is TRUE"
    assert df.where(F.col("reason").isNull()).count() == 1

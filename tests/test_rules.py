"""Rules read as Oracle prints them, rule sets behave as Table 5-1, and bad rules are refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from lakestreams.config import ClientSpec, RuleSpec
from lakestreams.errors import ConfigError, RuleError
from silver.rules import Client, RuleSet, build_clients, subset_conditions, system_condition

DBS1 = "DBS1.EXAMPLE.COM"

# Conditions as the rules reference prints them (whitespace as printed).
REFERENCE = {
    "table_dml_locations": (
        "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'LOCATIONS')) and "
        ":dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    ),
    "table_ddl_countries": (
        "(((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'COUNTRIES') or "
        "(:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'COUNTRIES')) and "
        ":ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    ),
    "schema_dml_hr": (
        "((:dml.get_object_owner() = 'HR') and :dml.is_null_tag() = 'Y' and "
        ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    ),
    "schema_ddl_hr": (
        "((:ddl.get_object_owner() = 'HR' or :ddl.get_base_table_owner() = 'HR') and "
        ":ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    ),
    "global_dml": "(:dml.is_null_tag() = 'Y' )",
    "global_ddl_tagged": "(( :ddl.get_source_database_name()>=' ' OR :ddl.get_source_database_name()<=' ') )",
    "negative_job_history": (
        "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'JOB_HISTORY')) and "
        ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    ),
    "and_condition_dml": (
        "(((((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'DEPARTMENTS')) and "
        ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )) and (:dml.get_tag() = HEXTORAW('02')))"
    ),
    "and_condition_ddl": (
        "(((((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'DEPARTMENTS') or "
        "(:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'DEPARTMENTS')) and "
        ":ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )) and (:ddl.get_tag() = HEXTORAW('02')))"
    ),
}
SUBSET_REFERENCE = {
    "INSERT": (
        ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND "
        ":dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type() IN ('UPDATE','INSERT') AND "
        "(:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND "
        "(:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_command_type()='INSERT' OR "
        "((:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND "
        "(((:dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NOT NULL) AND "
        "NOT (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2)) OR "
        "((:dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NULL) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL "
        "WHERE (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2))))))"
    ),
    "UPDATE": (
        ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND "
        ":dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type()='UPDATE' AND "
        "(:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) "
        "AND (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2) AND "
        "(:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2)"
    ),
    "DELETE": (
        ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND "
        ":dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type() IN ('UPDATE','DELETE') AND "
        "(:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND "
        "(:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_command_type()='DELETE' OR "
        "((:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND "
        "(((:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NOT NULL) AND "
        "NOT (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2)) OR "
        "((:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NULL) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL "
        "WHERE (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2))))))"
    ),
}


def test_system_created_conditions_read_as_the_reference_prints_them():
    and_02 = ":lcr.get_tag() = HEXTORAW('02')"
    got = {
        "table_dml_locations": system_condition(RuleSpec("TABLE", "HR", "LOCATIONS", source_database=DBS1), "DML"),
        "table_ddl_countries": system_condition(RuleSpec("TABLE", "HR", "COUNTRIES", source_database=DBS1), "DDL"),
        "schema_dml_hr": system_condition(RuleSpec("SCHEMA", "HR", source_database=DBS1), "DML"),
        "schema_ddl_hr": system_condition(RuleSpec("SCHEMA", "HR", source_database=DBS1), "DDL"),
        "global_dml": system_condition(RuleSpec("GLOBAL"), "DML"),
        "global_ddl_tagged": system_condition(RuleSpec("GLOBAL", include_tagged_lcr=True), "DDL"),
        "negative_job_history": system_condition(
            RuleSpec("TABLE", "HR", "JOB_HISTORY", include_tagged_lcr=True, source_database=DBS1), "DML"
        ),
        "and_condition_dml": system_condition(
            RuleSpec("TABLE", "HR", "DEPARTMENTS", include_tagged_lcr=True, source_database=DBS1,
                     and_condition=and_02), "DML"
        ),
        "and_condition_ddl": system_condition(
            RuleSpec("TABLE", "HR", "DEPARTMENTS", include_tagged_lcr=True, source_database=DBS1,
                     and_condition=and_02), "DDL"
        ),
    }
    assert got == REFERENCE


def test_subset_rules_read_as_the_reference_prints_them():
    texts, columns = subset_conditions(
        RuleSpec("SUBSET", "HR", "REGIONS", source_database=DBS1, dml_condition="region_id=2")
    )
    assert texts == SUBSET_REFERENCE
    assert columns == ("REGION_ID",)


def test_subset_rules_are_three_positive_rules_named_after_the_table():
    spec = ClientSpec("apply", "apply", rules=(
        RuleSpec("SUBSET", "HR", "REGIONS", source_database=DBS1, dml_condition="region_id=2"),
    ))
    (client,) = build_clients([spec])
    assert [(r.name, r.subset_dml) for r in client.positive.rules] == [
        ("REGIONS1", "INSERT"), ("REGIONS2", "UPDATE"), ("REGIONS3", "DELETE")
    ]
    assert client.negative is None


ROWS = [
    ("DBS1.EXAMPLE.COM", "INSERT", "HR", "LOCATIONS", None, None, None, None),
    ("DBS1.EXAMPLE.COM", "INSERT", "HR", "EMPLOYEES", None, None, None, None),
    ("DBS1.EXAMPLE.COM", "INSERT", "OE", "ORDERS", None, None, None, None),
]
SCHEMA = (
    "source_database STRING, command_type STRING, object_owner STRING, object_name STRING, tag STRING, "
    "base_table_owner STRING, base_table_name STRING, ddl_text STRING"
)
(_LOC_CLIENT,) = build_clients([ClientSpec("apply", "a", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"),))])
(_HR_CLIENT,) = build_clients([ClientSpec("apply", "a", rules=(RuleSpec("SCHEMA", "HR"),))])
LOC, HR = _LOC_CLIENT.positive.rules[0], _HR_CLIENT.positive.rules[0]


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
    (client,) = build_clients(
        [ClientSpec("apply", "apply", rules=(RuleSpec("GLOBAL", source_database="DBS2.EXAMPLE.COM"),))]
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


@pytest.mark.parametrize(
    "spec, message",
    [
        (RuleSpec("CONDITION", condition=":dml.get_object_name() = SYSDATE"), "SYSDATE"),
        (RuleSpec("CONDITION", condition="DELETE FROM hr.employees"), "rule condition"),
        (RuleSpec("CONDITION", condition=":dml.get_object_owner() IN (SELECT owner FROM all_tables)"), "line"),
        (RuleSpec("TABLE", "HR", "EMPLOYEES", and_condition=":lcr.get_foo() = 1"), "get_foo"),
        (RuleSpec("SUBSET", "HR", "REGIONS", dml_condition="region_id = UPPER('x')"), "UPPER"),
        (RuleSpec("SUBSET", "HR", "REGIONS", dml_condition="region_id IS NULL"), "REGION_ID"),
    ],
    ids=["function", "statement", "other_table", "unknown_member", "subset_function", "subset_untyped"],
)
def test_refused_rules_name_the_construct(spec, message):
    with pytest.raises(RuleError, match=message):
        build_clients([ClientSpec("apply", "apply", rules=(spec,))])


def test_rule_set_cannot_be_positive_and_negative_for_one_client():
    with pytest.raises(RuleError, match="both positive and negative"):
        build_clients([ClientSpec("apply", "a", positive_rule_set="X", negative_rule_set="X")])


def test_transformation_must_name_a_positive_rule():
    from lakestreams.config import TransformSpec

    spec = ClientSpec("apply", "a", rules=(RuleSpec("SCHEMA", "HR", inclusion_rule=False),),
                      transformations=(TransformSpec("HR1", "rename_schema", owner="HR", to_owner="X"),))
    with pytest.raises(ConfigError, match="not in the positive rule set"):
        build_clients([spec])


def test_custom_transformations_run_on_what_their_rule_kept(spark):
    from lakestreams.config import TransformSpec
    from silver.rules import evaluate
    from silver.transforms import register

    register("tag_it", {"tag": F.lit("AA")})
    register("upper_names", lambda df: df.withColumn("object_name", F.lower("object_name")))
    register("bad_shape", lambda df: df.drop("tag"))
    spec = ClientSpec("apply", "apply", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"), RuleSpec("TABLE", "HR", "EMPLOYEES")),
                      transformations=(TransformSpec("LOCATIONS1", "custom", function="tag_it"),
                                       TransformSpec("LOCATIONS1", "custom", function="upper_names", step_number=1)))
    df = spark.createDataFrame(ROWS, SCHEMA)
    out = {r["object_owner"] + "." + r["object_name"]: r["tag"] for r in evaluate(df, build_clients([spec])).collect()}
    assert out == {"HR.locations": "AA", "HR.EMPLOYEES": None, "OE.ORDERS": None}
    bad = ClientSpec("apply", "apply", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"),),
                     transformations=(TransformSpec("LOCATIONS1", "custom", function="bad_shape"),))
    with pytest.raises(RuleError, match="same columns"):
        evaluate(df, build_clients([bad]))
    register("drop_it", lambda df: df.limit(0))
    register("twice", lambda df: df.unionByName(df))
    for fn, error in (("drop_it", "drop_it dropped the record"), ("twice", "twice returned the record 2 times")):
        spec = ClientSpec("apply", "apply", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"),),
                          transformations=(TransformSpec("LOCATIONS1", "custom", function=fn),))
        got = evaluate(df, build_clients([spec])).where("object_name = 'LOCATIONS'").select("_rule_error").collect()
        assert [r[0] for r in got] == [f"custom transformation {error}"]
    with pytest.raises(ConfigError, match="not registered"):
        build_clients([ClientSpec("apply", "apply", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"),),
                                  transformations=(TransformSpec("LOCATIONS1", "custom", function="nope"),))])


def test_clients_with_one_name_would_share_their_default_sets():
    with pytest.raises(ConfigError, match="share the name"):
        build_clients([ClientSpec("capture", "strm", rules=(RuleSpec("SCHEMA", "HR"),)),
                       ClientSpec("apply", "strm", rules=(RuleSpec("TABLE", "HR", "JOBS"),))])


@pytest.mark.parametrize(
    "transformation, message",
    [
        (dict(kind="rename_column", column="A", to_column="B", value_type="BOTH"), "value_type"),
        (dict(kind="rename_column", column="A", to_column="B", value_type="NEW"), "only value_type"),
        (dict(kind="rename_table", to_owner="HR", to_table="X", step_number="1"), "step_number"),
        (dict(kind="add_column", column="C", column_type="NUMBER(2)", value=123), "digits before the point"),
        (dict(kind="add_column", column="C", column_type="VARCHAR2(2)", value="abc"), "longer than 2"),
        (dict(kind="add_column", column="C", column_type="VARCHAR2(4)", value="éèà"), "longer than 4 bytes"),
        (dict(kind="add_column", column="C", column_type="NUMBER(3,-2)", value=123456), "more than 5 digits before"),
        (dict(kind="add_column", column="C", column_type="NUMBER(2)", expression="SYSDATE"), "SYSDATE"),
        (dict(kind="add_column", column="C", column_type="NOT A TYPE(", value=1), "Oracle type"),
    ],
)
def test_refused_transformations(transformation, message):
    from lakestreams.config import TransformSpec

    t = TransformSpec("LOCATIONS1", owner="HR", table="LOCATIONS", **transformation)
    with pytest.raises((ConfigError, RuleError), match=message):
        build_clients([ClientSpec("apply", "a", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"),), transformations=(t,))])


def test_add_column_values_fit_by_the_columns_own_measure():
    """A CHAR-semantics column counts characters, a NUMBER with a negative scale holds p-s digits."""
    from lakestreams.config import TransformSpec

    for column_type, value in (("VARCHAR2(3 CHAR)", "éèà"), ("NVARCHAR2(3)", "éèà"), ("NUMBER(3,-2)", 12300)):
        t = TransformSpec("LOCATIONS1", owner="HR", table="LOCATIONS", kind="add_column", column="C",
                          column_type=column_type, value=value)
        build_clients([ClientSpec("apply", "a", rules=(RuleSpec("TABLE", "HR", "LOCATIONS"),), transformations=(t,))])


def test_targets_never_share_a_change_or_gold_table(spark):
    """Transformations may rename targets; a rename that would mix tables is refused."""
    from lakestreams.config import channel_from_dict
    from silver.dictionary import parse_create_table
    from silver.evolution import Revision
    from silver.run import _GROUP, _resolve_targets

    ch = channel_from_dict({"name": "c", "landing": [{"name": "s", "path": "l"}]}, Path("."))
    src = "DBS1.EXAMPLE.COM"
    a = parse_create_table("CREATE TABLE hr.a (id NUMBER(4) PRIMARY KEY, x VARCHAR2(5))")
    b = parse_create_table("CREATE TABLE hr.b (id NUMBER(4) PRIMARY KEY, y NUMBER(3))")
    held = dataclasses.replace(a, name="T")
    registry = [(src, "HR", "A", held, "chg__dbs1_example_com__hr__t")]
    tables = {(src, "HR", "A"): a, (src, "HR", "B"): b, (src, "HR", "A__B"): dataclasses.replace(a, name="A__B")}
    revisions = {k: [Revision(100, t)] for k, t in tables.items()}  # each created at SCN 100
    paths = [
        (src, "HR", "A", "HR", "T", None, None),        # the table the registry holds: fine
        (src, "HR", "B", "HR", "T", None, None),        # another source table into it: refused
        (src, "HR", "A", "HR", "bad name", None, None),  # not a plain name: refused
        (src, "HR", "A", "HR__A", "B", None, None),     # gold table hr__a__b
        (src, "HR", "A__B", "HR", "A__B", None, None),  # the same change and gold table names: refused
    ]
    accepted = spark.createDataFrame(paths, ", ".join(f"{c} STRING" for c in _GROUP))
    targets, errors = _resolve_targets(ch, [], revisions, accepted, registry)
    assert set(targets) == {(src, "HR", "T"), (src, "HR__A", "B")}
    messages = sorted(m for _, m in errors)
    assert len(messages) == 3
    assert any("already holds HR.A from DBS1.EXAMPLE.COM" in m for m in messages)
    assert any("not a plain name" in m for m in messages)
    assert any("change table chg__dbs1_example_com__hr__a__b already holds HR.A" in m for m in messages)
    # the held table with another structure (a column more) is refused too
    wider = dataclasses.replace(held, columns=held.columns[:1])
    _, errors = _resolve_targets(ch, [], revisions, accepted.limit(1), [(src, "HR", "A", wider, "chg__dbs1_example_com__hr__t")])
    assert ["another structure" in m for _, m in errors] == [True]

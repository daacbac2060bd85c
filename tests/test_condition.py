"""Rule conditions as Oracle prints them: parsed, refused with a position, compiled to Columns."""

from __future__ import annotations

import doctest
import json
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

import silver.condition
from lakestreams.errors import RuleError
from silver.condition import parse_condition, parse_subset_condition, parse_value, rewrite_lcr

SCHEMA = (
    "id INT, source_database STRING, command_type STRING, object_owner STRING, object_name STRING, "
    "object_type STRING, base_table_owner STRING, base_table_name STRING, ddl_text STRING, "
    "current_schema STRING, logon_user STRING, old_values STRING, new_values STRING, tag STRING"
)


def rec(id, command="INSERT", owner="HR", name="REGIONS", *, old=None, new=None, tag=None,
        source="DBS1.EXAMPLE.COM", object_type=None, base=(None, None), ddl=None):
    """One change record; old/new are dicts turned into VARIANT images (None: image absent)."""
    old, new = (None if v is None else json.dumps(v) for v in (old, new))
    return (id, source, command, owner, name, object_type, *base, ddl, owner if ddl else None,
            "HR" if ddl else None, old, new, tag)


def evaluate(spark, columns: dict, records: list[tuple]) -> dict[int, dict]:
    """{record id: {name: value}} for named Columns over the records."""
    df = spark.createDataFrame(records, SCHEMA).select(
        "*", F.parse_json("old_values").alias("ov"), F.parse_json("new_values").alias("nv")
    ).drop("old_values", "new_values").withColumnsRenamed({"ov": "old_values", "nv": "new_values"})
    rows = df.select("id", *(c.alias(k) for k, c in columns.items())).collect()
    return {r["id"]: r.asDict() for r in rows}


def truth(spark, conditions: dict[str, str], records: list[tuple]) -> dict[int, dict]:
    return evaluate(spark, {k: parse_condition(t).column() for k, t in conditions.items()}, records)


# ---- Every rule condition printed in /work/shared/reference/streams-rules.txt (line numbers there).

INSERT_RULE = (  # line 509, the insert rule of ADD_SUBSET_RULES(hr.regions, 'region_id=2')
    ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND :dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type() IN ('UPDATE','INSERT') AND (:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_command_type()='INSERT' OR ((:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND (((:dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NOT NULL) AND NOT (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2)) OR ((:dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NULL) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2))))))"
)
UPDATE_RULE = (  # line 525
    ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND :dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type()='UPDATE' AND (:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2)"
)
DELETE_RULE = (  # line 535
    ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND :dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type() IN ('UPDATE','DELETE') AND (:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_command_type()='DELETE' OR ((:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (((:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NOT NULL) AND NOT (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2)) OR ((:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NULL) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2))))))"
)
TABLE_DML_AND = (  # line 889: ADD_TABLE_RULES(hr.departments, and_condition => ':lcr.get_tag() = HEXTORAW(''02'')')
    "(((((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'DEPARTMENTS')) and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )) and (:dml.get_tag() = HEXTORAW('02')))"
)
TABLE_DDL_AND = (  # line 891
    "(((((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'DEPARTMENTS') or (:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'DEPARTMENTS')) and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )) and (:ddl.get_tag() = HEXTORAW('02')))"
)

ROW_RECORDS = [
    rec(1, "INSERT", "HR", "LOCATIONS", new={"LOCATION_ID": 1}),
    rec(2, "INSERT", "HR", "DEPARTMENTS", new={"DEPARTMENT_ID": 1}, tag="02"),
    rec(5, "UPDATE", "OE", "ORDERS", old={"ORDER_ID": 1}, new={"ORDER_ID": 2}, source="DBS2.EXAMPLE.COM"),
    rec(6, "DELETE", "HR", "JOB_HISTORY", old={"EMPLOYEE_ID": 1}, tag="01"),
]
DDL_RECORDS = [
    rec(3, "CREATE TABLE", "HR", "COUNTRIES", object_type="TABLE", ddl="CREATE TABLE hr.countries (c INT)"),
    rec(4, "CREATE INDEX", "HR", "DEPT_IX", object_type="INDEX", base=("HR", "DEPARTMENTS"), tag="02",
        ddl="CREATE INDEX hr.dept_ix ON hr.departments (department_id)"),
]
REFERENCE = [  # (line, condition, ids of the records of its kind where it is TRUE)
    (299, "(:dml.is_null_tag() = 'Y' )", {1, 5}),
    (305, "(:ddl.is_null_tag() = 'Y' )", {3}),
    (333, "(( :dml.get_source_database_name()>=' ' OR :dml.get_source_database_name()<=' ') )", {1, 2, 5, 6}),
    (335, "(( :ddl.get_source_database_name()>=' ' OR :ddl.get_source_database_name()<=' ') )", {3, 4}),
    (376, "((:dml.get_object_owner() = 'HR') and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )", {1}),
    (378, "((:ddl.get_object_owner() = 'HR' or :ddl.get_base_table_owner() = 'HR') and :ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )", {3}),
    (427, "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'LOCATIONS')) and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )", {1}),
    (438, "(((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'COUNTRIES') or (:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'COUNTRIES')) and :ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )", {3}),
    (831, "((:dml.get_object_owner() = 'HR') and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )", {1}),
    (849, "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'JOB_HISTORY')) and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )", {6}),
    (889, TABLE_DML_AND, {2}),
    (891, TABLE_DDL_AND, {4}),
]


@pytest.fixture(scope="module")
def reference_results(spark):
    return truth(spark, {f"line{line}": text for line, text, _ in REFERENCE}, ROW_RECORDS + DDL_RECORDS)


@pytest.mark.parametrize("line, text, expected", REFERENCE, ids=[f"line{r[0]}" for r in REFERENCE])
def test_reference_conditions_parse_and_evaluate(reference_results, line, text, expected):
    # The rules engine evaluates a :dml condition on row LCRs only and a :ddl one on DDL LCRs only.
    kind = {r[0] for r in (DDL_RECORDS if parse_condition(text).variable == "ddl" else ROW_RECORDS)}
    assert {i for i in kind if reference_results[i][f"line{line}"]} == expected


def test_subset_rules_declare_their_columns():
    for text in (INSERT_RULE, UPDATE_RULE, DELETE_RULE):
        cond = parse_condition(text)
        assert cond.variable == "dml"
        assert cond.value_columns == {("NEW", "REGION_ID"), ("OLD", "REGION_ID")}


SUBSET_CASES = {  # id: (command, old image, new image, (insert rule, update rule, delete rule)) — lines 510-545
    "insert 2": ("INSERT", None, {"REGION_ID": 2, "REGION_NAME": "Americas"}, (True, False, False)),
    "insert 3": ("INSERT", None, {"REGION_ID": 3}, (False, False, False)),
    "insert NULL": ("INSERT", None, {"REGION_ID": None}, (False, False, False)),
    "update 4 to 2 migrates to insert": ("UPDATE", {"REGION_ID": 4}, {"REGION_ID": 2}, (True, False, False)),
    "update NULL to 2 migrates to insert": ("UPDATE", {"REGION_ID": None}, {"REGION_ID": 2}, (True, False, False)),
    "update 2 to 1 migrates to delete": ("UPDATE", {"REGION_ID": 2}, {"REGION_ID": 1}, (False, False, True)),
    "update 2 to NULL migrates to delete": ("UPDATE", {"REGION_ID": 2}, {"REGION_ID": None}, (False, False, True)),
    "update 2 to 2": ("UPDATE", {"REGION_ID": 2}, {"REGION_ID": 2}, (False, True, False)),
    "update 1 to 1": ("UPDATE", {"REGION_ID": 1}, {"REGION_ID": 1}, (False, False, False)),
    "delete 2": ("DELETE", {"REGION_ID": 2}, None, (False, False, True)),
    "delete 3": ("DELETE", {"REGION_ID": 3}, None, (False, False, False)),
    # Oracle's UPDATE new image holds only changed columns: get_value('NEW', ...) falls back to the old one.
    "update keeps region 2": ("UPDATE", {"REGION_ID": 2, "REGION_NAME": "a"}, {"REGION_NAME": "b"},
                              (False, True, False)),
    "update keeps region 1": ("UPDATE", {"REGION_ID": 1, "REGION_NAME": "a"}, {"REGION_NAME": "b"},
                              (False, False, False)),
}


@pytest.fixture(scope="module")
def subset_results(spark):
    records = [rec(i, cmd, old=old, new=new) for i, (cmd, old, new, _) in enumerate(SUBSET_CASES.values())]
    records.append(rec(99, "INSERT", "HR", "COUNTRIES", new={"REGION_ID": 2}))  # another table
    records.append(rec(98, "INSERT", new={"REGION_ID": 2}, tag="01"))  # tagged
    return truth(spark, {"insert": INSERT_RULE, "update": UPDATE_RULE, "delete": DELETE_RULE}, records)


@pytest.mark.parametrize("case", list(SUBSET_CASES))
def test_subset_rules_behave_as_the_reference_says(subset_results, case):
    got = subset_results[list(SUBSET_CASES).index(case)]
    assert (got["insert"], got["update"], got["delete"]) == SUBSET_CASES[case][3]


def test_subset_rules_are_false_for_other_tables_and_tagged_records(subset_results):
    for i in (98, 99):
        assert not any(subset_results[i][k] for k in ("insert", "update", "delete"))


def test_json_null_is_a_present_column_and_absent_is_null(spark):
    conds = {
        "absent": ":dml.get_value('NEW','\"A\"') IS NULL",
        "null_value": ":dml.get_value('NEW','\"A\"').AccessNumber() IS NULL",
        "absent_no_old": ":dml.get_value('NEW','a','N') IS NULL",  # unquoted name is upper-cased
        "old_absent": ":dml.get_value('OLD','\"A\"') IS NULL",
    }
    got = truth(spark, conds, [
        rec(1, "UPDATE", old={"A": 1}, new={"A": None}),
        rec(2, "UPDATE", old={"A": 1}, new={"B": 1}),
        rec(3, "UPDATE", old={"B": 1}, new={"B": 2}),
        rec(4, "INSERT", new={"A": 5}),
    ])
    assert got[1] | {"id": 0} == {"id": 0, "absent": False, "null_value": True, "absent_no_old": False, "old_absent": False}
    assert got[2] | {"id": 0} == {"id": 0, "absent": False, "null_value": False, "absent_no_old": True, "old_absent": False}
    assert got[3] | {"id": 0} == {"id": 0, "absent": True, "null_value": True, "absent_no_old": True, "old_absent": True}
    assert got[4]["old_absent"] is True and got[4]["absent"] is False


def test_operators_types_and_three_valued_logic(spark):
    conds = {
        "num_str": ":dml.get_value('NEW','\"A\"').AccessNumber() = '2.50'",
        "in": ":dml.get_value('NEW','\"A\"').AccessNumber() NOT IN (1, -3)",
        "between": ":dml.get_value('NEW','\"A\"').AccessNumber() BETWEEN 2 AND 3",
        "varchar": ":dml.get_value('NEW','\"NAME\"').AccessVarchar2() LIKE 'Sm_th%'",
        "char": ":dml.get_value('NEW','\"NAME\"').AccessChar() <> 'x'",
        "escape": ":dml.get_value('NEW','\"NAME\"').AccessVarchar2() LIKE '%!%' ESCAPE '!'",
        "backslash": ":dml.get_value('NEW','\"NAME\"').AccessVarchar2() LIKE 'a\\b'",  # no escape in Oracle
        "date": ":dml.get_value('NEW','\"HIRED\"').AccessDate() >= DATE '2024-01-01'",
        "ts": ":dml.get_value('NEW','\"HIRED\"').AccessTimestamp() < TIMESTAMP '2024-01-05 10:00:01'",
        "raw": ":dml.get_tag() = '0A' AND :dml.is_null_tag() ^= 'Y'",
        # NULL propagates: NOT(NULL) is NULL, which the rule reads as FALSE.
        "not_null": "NOT (:dml.get_value('NEW','\"A\"').AccessNumber() = 1)",
        "or_null": ":dml.get_value('NEW','\"A\"').AccessNumber() = 1 OR 1 = 1",
        "empty_string_is_null": ":dml.get_object_name() = ''",
        "exists": "EXISTS (SELECT 1 FROM DUAL WHERE :dml.get_value('NEW','\"A\"').AccessNumber() = 2.5)",
        "not_exists": "NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE :dml.get_value('NEW','\"A\"').AccessNumber() = 1)",
    }
    got = truth(spark, conds, [
        rec(1, new={"A": 2.5, "NAME": "Smith%", "HIRED": "2024-01-05 10:00:00"}, tag="0a"),
        rec(2, new={"A": None, "NAME": "a\\b", "HIRED": "2023-12-31T23:59:59"}),
    ])
    assert {k for k, v in got[1].items() if v is True} == {
        "num_str", "in", "between", "varchar", "char", "escape", "date", "ts", "raw", "not_null", "or_null", "exists",
        "not_exists",
    }
    assert {k for k, v in got[2].items() if v is True} == {"char", "backslash", "ts", "or_null", "not_exists"}


def test_results_do_not_depend_on_ansi_mode(spark):
    conds = {
        "eq": ":dml.get_value('NEW','\"A\"').AccessNumber() = '2'",
        "date": ":dml.get_value('NEW','\"A\"').AccessDate() > '2020-01-01'",
        "name": ":dml.get_value('NEW','\"A\"').AccessVarchar2() IN ('2', 'x')",
    }
    records = [rec(1, new={"A": 2}), rec(2, new={"A": "x"}), rec(3, new={"A": "2020-06-01"})]
    before = spark.conf.get("spark.sql.ansi.enabled")
    try:
        results = []
        for mode in ("true", "false"):
            spark.conf.set("spark.sql.ansi.enabled", mode)
            results.append(truth(spark, conds, records))
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)
    assert results[0] == results[1]
    assert [results[1][i]["eq"] for i in (1, 2, 3)] == [True, False, False]
    assert [results[1][i]["date"] for i in (1, 2, 3)] == [False, False, True]


# ---- Refusals name the construct and where it is.

REFUSED = [
    (":dml.get_object_name() = SYSDATE", "function SYSDATE is not allowed (line 1, column 26)"),
    ("UPPER(:dml.get_object_name()) = 'HR'", "function UPPER is not allowed (line 1, column 1)"),
    (":dml.get_object_owner() = 'HR' AND\n  my_func(1) = 2", "function MY_FUNC is not allowed (line 2, column 3)"),
    ("NOT EXISTS (SELECT 1 FROM hr.employees WHERE 1 = 1)", "table hr.employees is not allowed (line 1, column 27)"),
    (":dml.get_object_name() IN (SELECT 1 FROM SYS.DUAL)", "subquery is not allowed (line 1, column 28)"),
    ("EXISTS (SELECT 1 FROM DUAL WHERE 1 = 1 ORDER BY 1)", "ORDER in an EXISTS subquery is not allowed (line 1"),
    ("EXISTS (SELECT 2 FROM DUAL WHERE 1 = 1)", "select list of an EXISTS subquery must be 1 (line 1"),
    ("EXISTS (SELECT 1 FROM DUAL)", "needs a WHERE clause (line 1"),
    ("DELETE FROM hr.regions", "statement DELETE is not allowed (line 1, column 1)"),
    ("DROP TABLE hr.regions", "statement DROP is not allowed (line 1, column 1)"),
    ("1 = 1; DELETE FROM hr.regions", "';' is not allowed (line 1, column 6)"),
    (":ddl.get_value('NEW','\"A\"') IS NULL", "member get_value is not allowed on :ddl"),
    (":dml.get_object_type() = 'TABLE'", "member get_object_type is not allowed on :dml"),
    (":dml.get_foo() = 'x'", "member get_foo of :dml is not allowed (line 1, column 6)"),
    (":dml.get_object_name() = 'A' AND :ddl.get_object_name() = 'B'", "uses both :dml and :ddl (line 1, column 34)"),
    (":dml.get_value('NEW','\"A\"') = 2", "AnyData value from get_value cannot be compared directly (line 1, column 1)"),
    (":dml.get_value('NEW','\"A\"').AccessNumber() = 'abc'", "cannot compare NUMBER with the string 'abc' (line 1"),
    (":dml.get_object_name() = 2", "cannot compare VARCHAR2 with NUMBER (line 1"),
    (":dml.get_tag() = HEXTORAW('0G')", "HEXTORAW('0G') is not hexadecimal (line 1, column 18)"),
    ("", "the text is empty (line 1, column 1)"),
    ("  -- nothing\n", "the text is empty"),
    (":lcr.get_tag() = HEXTORAW('02')", "bind variable :lcr is not allowed (line 1, column 1); accepted: :ddl, :dml"),
    (":x.get_object_name() = 'A'", "bind variable :x is not allowed (line 1, column 1)"),
    ("'abc'", "a VARCHAR2 value is not a condition (line 1, column 1)"),
    (":dml.get_object_name()", "a VARCHAR2 value is not a condition (line 1, column 1)"),
    ("x = 1", "column reference X is not allowed (line 1, column 1)"),
    (":dml.get_value('NEW','\"A\"').AccessBlob() IS NULL", "member AccessBlob on the AnyData"),
    (":dml.get_value('NEW','\"A B\"').AccessNumber() = 1", "column name '\"A B\"' in get_value is not allowed"),
    (":dml.get_object_name() || 'X' = 'AX'", "operator || is not allowed (line 1, column 1)"),
    (":dml.get_object_name() = = 'X'", "syntax error near '=' (line 1, column 26)"),
    ("TO_DATE('2024-01-01') < DATE '2024-01-02'", "function TO_DATE is not allowed (line 1, column 1)"),
    (":dml.get_object_name() LIKE 'a!b' ESCAPE '!'", "escape character '!' must precede %, _ or itself"),
]


@pytest.mark.parametrize("text, fragment", REFUSED)
def test_refused_constructs_name_what_and_where(text, fragment):
    with pytest.raises(RuleError, match="line") as err:
        parse_condition(text)
    assert str(err.value).startswith("rule condition: ")
    assert fragment in str(err.value)


def test_lcr_is_accepted_where_the_caller_allows_it():
    assert parse_condition(":lcr.get_tag() = HEXTORAW('02')", variables=frozenset({"lcr"})).variable == "lcr"
    with pytest.raises(RuleError, match="bind variable :ddl is not allowed .*accepted: :dml"):
        parse_condition(":ddl.get_object_name() = 'A'", variables=frozenset({"dml"}))


# ---- :lcr rewriting, values, subset conditions.


def test_rewrite_lcr_replaces_the_bind_variable_only():
    and_condition = ":lcr.get_tag() = HEXTORAW('02')"  # line 886, quotes undoubled
    assert rewrite_lcr(and_condition, "dml") == ":dml.get_tag() = HEXTORAW('02')"
    system = ("(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'DEPARTMENTS')) and "
              ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )")
    assert f"(({system}) and ({rewrite_lcr(and_condition, 'dml')}))" == TABLE_DML_AND
    text = ":LCR.get_object_name() = ':lcr' /* :lcr */ AND :lcr.is_null_tag() = 'Y'"
    assert rewrite_lcr(text, "ddl") == ":ddl.get_object_name() = ':lcr' /* :lcr */ AND :ddl.is_null_tag() = 'Y'"
    with pytest.raises(RuleError, match="accepted: 'dml', 'ddl'"):
        rewrite_lcr(text, "lcr")


def test_parse_value_compiles_typed_values(spark):
    values = {
        "db": parse_value(":lcr.get_source_database_name()"),
        "salary": parse_value(":dml.get_value('NEW','\"SALARY\"').AccessNumber()"),
        "tag": parse_value("HEXTORAW('0a')"),
        "hired": parse_value(":dml.get_value('OLD','\"HIRED\"').AccessDate()"),
    }
    assert {k: v.type for k, v in values.items()} == {"db": "VARCHAR2", "salary": "NUMBER", "tag": "RAW", "hired": "DATE"}
    got = evaluate(spark, {k: v.column() for k, v in values.items()},
                   [rec(1, "UPDATE", old={"HIRED": "2024-01-05 00:00:00"}, new={"SALARY": 2400.5})])[1]
    assert got["db"] == "DBS1.EXAMPLE.COM" and got["salary"] == Decimal("2400.5")
    assert got["tag"] == bytearray(b"\x0a") and got["hired"].isoformat() == "2024-01-05T00:00:00"


@pytest.mark.parametrize("text, fragment", [
    (":dml.get_object_name() = 'X'", "a condition is not a value (line 1, column 1)"),
    (":dml.get_value('NEW','\"A\"')", "get_value(...) alone is an AnyData"),
    (":ddl.get_object_name()", "bind variable :ddl is not allowed (line 1, column 1)"),
    ("SYSDATE", "function SYSDATE is not allowed (line 1, column 1)"),
])
def test_parse_value_refuses(text, fragment):
    with pytest.raises(RuleError, match="value expression: ") as err:
        parse_value(text)
    assert fragment in str(err.value)


def test_subset_condition_renders_as_the_reference_prints_it():
    s = parse_subset_condition("region_id=2")
    assert s.columns == ("REGION_ID",) and s.access == {"REGION_ID": "AccessNumber"}
    assert s.render("NEW") == ":dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2"
    assert f"({s.render('NEW')})" in INSERT_RULE and f"({s.render('OLD')})" in DELETE_RULE


def test_subset_condition_with_several_columns_keeps_the_text_verbatim():
    s = parse_subset_condition("department_id IN (10, 20) AND \"Last_Name\" LIKE 'A%'  or hired < DATE '2020-01-01'")
    assert s.columns == ("DEPARTMENT_ID", "Last_Name", "HIRED")
    assert s.access == {"DEPARTMENT_ID": "AccessNumber", "Last_Name": "AccessVarchar2", "HIRED": "AccessDate"}
    rendered = s.render("OLD")
    assert rendered == (
        ":dml.get_value('OLD','\"DEPARTMENT_ID\"').AccessNumber() IN (10, 20) AND "
        ":dml.get_value('OLD','\"Last_Name\"').AccessVarchar2() LIKE 'A%'  or "
        ":dml.get_value('OLD','\"HIRED\"').AccessDate() < DATE '2020-01-01'"
    )
    assert parse_condition(rendered).value_columns == {("OLD", "DEPARTMENT_ID"), ("OLD", "Last_Name"), ("OLD", "HIRED")}


def test_subset_condition_takes_types_from_the_table():
    types = {"SALARY": "NUMBER(8,2)", "GRADE": "CHAR(1)", "SEEN": "TIMESTAMP(6)"}.get
    s = parse_subset_condition("salary > bonus_floor AND grade = 'A' AND seen IS NOT NULL AND salary > 0",
                               column_type=lambda c: types(c) or ("NUMBER" if c == "BONUS_FLOOR" else None))
    assert s.access == {"SALARY": "AccessNumber", "BONUS_FLOOR": "AccessNumber", "GRADE": "AccessChar",
                        "SEEN": "AccessTimestamp"}
    with pytest.raises(RuleError, match="cannot compare NUMBER with the string 'abc'"):
        parse_subset_condition("salary = 'abc'", column_type=types)
    with pytest.raises(RuleError, match="column SALARY has type BLOB"):
        parse_subset_condition("salary IS NULL", column_type=lambda c: "BLOB")


@pytest.mark.parametrize("text, fragment", [
    ("region_id = other_id", "cannot tell the type of column REGION_ID (line 1, column 1); accepted: declare the table"),
    ("region_id IS NULL", "cannot tell the type of column REGION_ID"),
    ("x = 1 AND x = 'a'", "column X is compared with literals of different types"),
    (":dml.get_value('NEW','\"A\"').AccessNumber() = 1", "bind variable :dml is not allowed (line 1, column 1)"),
    ("r.region_id = 2", "qualified column r.region_id is not allowed (line 1, column 1)"),
    ("region_id = 2 AND UPPER(name) = 'A'", "function UPPER is not allowed (line 1, column 19)"),
])
def test_subset_condition_refuses(text, fragment):
    with pytest.raises(RuleError, match="subset condition: ") as err:
        parse_subset_condition(text)
    assert fragment in str(err.value)


def test_docstring_examples():
    result = doctest.testmod(silver.condition)
    assert result.attempted > 0 and result.failed == 0

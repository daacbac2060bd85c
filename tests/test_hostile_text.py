"""A hostile corpus for user text: rule conditions, DDL text, DDLSUBST strings, GoldenGate
parameters, and the names a channel file gives. Each entry is refused with a message
saying what was wrong, or (values that are legal where they stand) kept as data: a string
literal stays a literal, a comment stays a comment. One pipeline run then proves that no
table but the intended one is read or changed.

The corpus is organised by attack, one parametrised table each; an entry is the place the
text enters (``PLACES``), the text, and a fragment of the refusal. Pure Python: only the
last test needs Spark.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest
from chispa import assert_df_equality
from conftest import make_channel, table_versions, write_lines
from records import REGIONS_DDL, SRC, Txn

from gold.plan import GOLD_META_TABLES
from lakestreams.config import channel_from_dict
from lakestreams.delta_io import table_names
from lakestreams.errors import DdlError, ReplicationError
from lakestreams.pipeline import run_pipeline
from lakestreams.spark import ensure_schemas
from silver.adaptddl import AdaptDdl
from silver.condition import (
    Compare,
    Like,
    Lit,
    Member,
    parse_condition,
    parse_subset_condition,
    parse_value,
)
from silver.ddl import AddColumn, ColumnSpec, parse_ddl
from silver.ddl_processing import process_ddl
from silver.evolution import read_ddl
from silver.gg_params import config_from_yaml, parse_params
from silver.goldengate import MapRule
from silver.rules import build_clients

BASE_DIR = Path("/nonexistent/hostile")  # channel paths are resolved, never opened here
ADD_X = "ALTER TABLE hr.regions ADD (x NUMBER)"
LONG = "A" * 129  # Oracle's identifiers stop at 128 characters
OK_CONDITION = ":dml.get_object_name() = 'REGIONS'"
_CREATED = read_ddl({}, REGIONS_DDL, 100, "HR", (AdaptDdl(),))
HISTORY = {key: [rev] for key, rev in _CREATED.revisions}  # HR.REGIONS, as a CREATE TABLE record made it


def _channel(**extra):
    return channel_from_dict({"name": "hostile", "landing": [{"name": "src", "path": "landing"}], **extra}, BASE_DIR)


def _apply(rule: dict | None = None, **extra):
    return _channel(apply={"rules": [rule or {"table": "hr.regions"}], **extra})


def _transform(kind: str, args: dict):
    return _apply(transformations=[{"rule": "REGIONS1", kind: {"table": "hr.regions", **args}}])


def _ddl_record(text: str, owner: str = "HR"):
    """A DDL record read against the dictionary (HR.REGIONS known): an ERROR reading is a refusal."""
    reading = read_ddl(HISTORY, text, 200, owner, (AdaptDdl(),))
    if reading.decision == "ERROR":
        raise DdlError(reading.reason)
    return reading


def _ddlsubst(pair: tuple[str, str]):
    """ADD_X through DDLSUBST search WITH replace (YAML form: any character may stand in
    them), then DDLERROR DEFAULT DISCARD: a discarded record is a refusal."""
    search, replace = pair
    config = config_from_yaml({"ddlsubst": [{"search": search, "replace": replace}],
                               "ddlerror": [{"error": "DEFAULT", "action": "DISCARD"}]})
    done = process_ddl(_ddl_record(ADD_X), ADD_X, None, "HR", config)
    if done.outcome == "DISCARDED":
        raise DdlError(done.discard)
    return done


#: Where user text enters, as a function of the text that raises a ReplicationError when refused.
PLACES = {
    "condition": parse_condition,
    "subset": parse_subset_condition,
    "value": parse_value,
    "and_condition": lambda t: _apply({"table": "hr.regions", "and_condition": t}),
    "ddl": parse_ddl,
    "ddl record": _ddl_record,
    "record owner": lambda t: _ddl_record("ALTER TABLE regions ADD (x NUMBER)", owner=t),
    "ddlsubst": _ddlsubst,
    "params": parse_params,
    "map target": lambda t: MapRule("hr.*", t),
    "channel.name": lambda t: _channel(name=t),
    "storage.schema": lambda t: _channel(storage={"schema": t}),
    "storage.catalog": lambda t: _channel(storage={"catalog": t}),
    "landing.name": lambda t: channel_from_dict({"name": "h", "landing": [{"name": t, "path": "x"}]}, BASE_DIR),
    "rule.table": lambda t: _apply({"table": t}),
    "rule.schema": lambda t: _apply({"schema": t}),
    "rule.name": lambda t: _apply({"condition": OK_CONDITION, "name": t}),
    "rule set": lambda t: _apply(positive_rule_set=t),
    "rename_table.to": lambda t: _apply(transformations=[
        {"rule": "REGIONS1", "rename_table": {"from": "hr.regions", "to": t}}]),
    "rename_column.to": lambda t: _transform("rename_column", {"from": "note", "to": t}),
    "add_column.column": lambda t: _transform("add_column", {"column": t, "type": "NUMBER", "value": 1}),
    "add_column.expression": lambda t: _transform("add_column", {"column": "c", "type": "NUMBER", "expression": t}),
    "keys.columns": lambda t: _channel(keys=[{"table": "hr.regions", "columns": [t]}]),
    "handler.set": lambda t: _channel(dml_handlers=[
        {"table": "hr.regions", "operation": "INSERT", "sql": {"set": {t: "'x'"}}}]),
    "handler.consume_when": lambda t: _channel(dml_handlers=[
        {"table": "hr.regions", "operation": "INSERT", "sql": {"consume_when": t}}]),
    "adapt_ddl.integrate_schema": lambda t: _channel(adapt_ddl=[{"integrate_schema": t}]),
    "instantiation.table": lambda t: _channel(instantiation=[{"table": t, "source_database": SRC, "scn": 1}]),
    "transformation_modules": lambda t: _channel(transformation_modules=[t]),
    "tables.ddl": lambda t: _channel(tables=[{"source_database": SRC, "ddl": t}]),
}


def cases(*entries: tuple) -> list:
    """Parametrize rows (place, text, fragment), each with a short readable id."""
    return [pytest.param(place, text, fragment, id=f"{n}-{place}") for n, (place, text, fragment) in enumerate(entries)]


def refusal(place: str, text) -> str:
    try:
        PLACES[place](text)
    except ReplicationError as e:
        return str(e)
    pytest.fail(f"{place} accepted {text!r}")


def check_refused(place: str, text, fragment: str) -> None:
    message = refusal(place, text)
    assert fragment in message, f"{place}: {text!r}\n  refused with: {message}\n  expected: {fragment}"


# ---------------------------------------------------------------------------------- stacking

STACKING = cases(
    ("condition", ":dml.get_object_name() = 'REGIONS'; DROP TABLE secrets", "';' is not allowed (line 1, column 35)"),
    ("condition", ":dml.get_object_name() = 'REGIONS';", "';' is not allowed"),
    ("condition", ":dml.is_null_tag() = 'Y'\n;\nTRUNCATE TABLE secrets", "';' is not allowed (line 2, column 1)"),
    ("condition", OK_CONDITION + " secrets", "'secrets' after the condition is not allowed (line 1, column 36)"),
    ("subset", "region_id = 2; DELETE FROM hr.secrets", "subset condition: ';' is not allowed"),
    ("value", ":dml.get_object_name(); DROP TABLE secrets", "value expression: ';' is not allowed"),
    ("and_condition", ":lcr.is_null_tag() = 'Y'; DROP TABLE secrets",
     "and_condition must be one condition on its own: rule condition: ';' is not allowed"),
    ("handler.consume_when", "1 = 1; DELETE FROM hr.secrets", "';' is not allowed"),
    ("ddl", "DROP TABLE hr.regions; DROP TABLE hr.secrets", "holds one statement; this one holds 2"),
    ("ddl", "TRUNCATE TABLE hr.regions; TRUNCATE TABLE hr.secrets", "holds one statement; this one holds 2"),
    ("ddl", "DROP TABLE hr.regions, hr.secrets", "DROP TABLE names one table in Oracle; this one names 2"),
    ("ddl", "TRUNCATE TABLE hr.regions, hr.secrets", "TRUNCATE TABLE names one table in Oracle; this one names 2"),
    ("ddlsubst", ("ADD (x NUMBER)", "ADD (x NUMBER); DROP TABLE hr.secrets"),
     "PARSE on HR.REGIONS: a DDL record holds one statement; this one holds 2"),
    ("ddlsubst", ("hr.regions", "hr.regions, hr.secrets"), "PARSE on HR.REGIONS: statement not understood"),
    ("params", "DDLSUBST 'a' WITH 'b'; DROP TABLE hr.secrets", "line 1: unknown keyword 'DROP'"),
    ("params", "MAP hr.*, TARGET hr_copy.*; DROP TABLE hr.secrets;", "line 1: unknown keyword 'DROP'"),
    ("params", "DDLERROR DEFAULT DISCARD; DELETE FROM hr.secrets", "unknown keyword 'DELETE'"),
    ("storage.schema", "lake; DROP TABLE secrets", "storage.schema: 'lake; DROP TABLE secrets' is not a valid identifier"),
    ("rule.table", "hr.regions;DROP TABLE secrets", "is not a valid identifier"),
    ("rename_table.to", "hr.staff; DROP TABLE hr.secrets", "rename_table.to: 'hr.staff; DROP TABLE hr.secrets'"),
    ("add_column.column", "c NUMBER); DROP TABLE hr.secrets; --", "add_column.column: 'c NUMBER); DROP TABLE"),
)


@pytest.mark.parametrize("place, text, fragment", STACKING)
def test_statement_stacking_is_refused(place, text, fragment):
    check_refused(place, text, fragment)


# ---------------------------------------------------------------------------------- comments

COMMENTS = cases(
    ("condition", ":dml.get_object_name() = 'REGIONS' /* never closed", "rule condition: cannot read the text"),
    ("condition", "/* OR 1 = 1 */", "the text is empty (only comments)"),
    ("condition", "-- ; DROP TABLE secrets", "the text is empty (only comments)"),
    ("subset", "region_id = 2 /*", "subset condition: cannot read the text"),
    ("value", "'x' /* ", "value expression: cannot read the text"),
    # A trailing line comment would swallow the closing brackets of the generated rule.
    ("and_condition", ":lcr.is_null_tag() = 'Y' -- )) OR ((1 = 1", "Expecting )"),
    ("and_condition", "1 = 1 /* x", "and_condition: cannot read the text"),
    ("ddl", "ALTER TABLE hr.regions ADD (x NUMBER) /* unterminated", "DDL does not tokenize"),
    ("ddl", "-- DROP TABLE hr.secrets", "holds one statement; this one holds 0"),
    ("ddl", "/* DROP TABLE hr.secrets */", "holds one statement; this one holds 0"),
    ("ddlsubst", ("NUMBER)", "NUMBER) /*"), "PARSE on HR.REGIONS: DDL does not tokenize"),
    ("ddlsubst", ("(x NUMBER)", "-- (x NUMBER)"), "PARSE on HR.REGIONS"),
    ("params", "DDL INCLUDE ALL /* EXCLUDE ALL */", "unknown keyword '/*' in DDL"),
    ("params", "DDLSUBST 'a' WITH 'b' /* INCLUDE ALL */", "unknown keyword '/*' in DDLSUBST"),
    ("channel.name", "c--", "channel.name: 'c--' is not a valid identifier"),
    ("storage.schema", "lake/**/", "is not a valid identifier"),
    ("keys.columns", "ID--", "keys[0].columns: 'ID--' is not a valid identifier"),
)


@pytest.mark.parametrize("place, text, fragment", COMMENTS)
def test_comments_that_would_change_meaning_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


REGIONS_IS = parse_condition(OK_CONDITION).node


@pytest.mark.parametrize("text", [
    OK_CONDITION + " -- OR 1 = 1",
    OK_CONDITION + " /* ; DROP TABLE secrets */",
    "/* EXISTS (SELECT 1 FROM secrets) */ " + OK_CONDITION,
    OK_CONDITION + " -- \n",
])
def test_a_comment_in_a_condition_is_only_a_comment(text):
    assert parse_condition(text).node == REGIONS_IS


def test_a_comment_inside_an_and_condition_cannot_widen_the_rule():
    """The and_condition's closing brackets hidden in a block comment stay in it: the rule is
    the table's rule AND 1 = 1, not OR."""
    plain = _apply({"table": "hr.regions", "and_condition": "1 = 1"}).clients[0]
    commented = _apply({"table": "hr.regions", "and_condition": "1 = 1 /* )) OR ((1 = 1 */"}).clients[0]
    rule, hostile = build_clients([plain])[0].positive.rules[0], build_clients([commented])[0].positive.rules[0]
    assert hostile.parsed.node == rule.parsed.node


@pytest.mark.parametrize("text", [
    "ALTER TABLE hr.regions ADD (x NUMBER) -- ; DROP TABLE hr.secrets",
    "ALTER TABLE hr.regions /* ; DROP TABLE hr.secrets */ ADD (x NUMBER)",
    "ALTER TABLE hr.regions ADD (x NUMBER) /* TRUNCATE TABLE hr.secrets */",
])
def test_a_comment_in_ddl_acts_on_nothing(text):
    stmt = parse_ddl(text)
    assert (stmt.kind, stmt.owner, stmt.name) == ("ALTER TABLE", "HR", "REGIONS")
    assert [a.column.name for a in stmt.actions] == ["X"]


# ------------------------------------------------------------------------- subqueries on other tables

SUBQUERIES = cases(
    ("condition", ":dml.get_object_name() = (SELECT name FROM secrets)", "subquery is not allowed (line 1, column 27)"),
    ("condition", "EXISTS (SELECT 1 FROM secrets WHERE 1 = 1)", "table secrets is not allowed (line 1, column 23)"),
    ("condition", "EXISTS (SELECT 1 FROM DUAL, secrets WHERE 1 = 1)", "JOINS in an EXISTS subquery is not allowed"),
    ("condition", "EXISTS (SELECT 1 FROM DUAL JOIN secrets s ON 1 = 1 WHERE 1 = 1)", "JOINS in an EXISTS subquery"),
    ("condition", "EXISTS (SELECT 1 FROM DUAL WHERE EXISTS (SELECT 1 FROM secrets WHERE 1 = 1))",
     "table secrets is not allowed (line 1, column 56)"),
    ("condition", "EXISTS (WITH s AS (SELECT 1 FROM secrets) SELECT 1 FROM DUAL WHERE 1 = 1)",
     "WITH in an EXISTS subquery is not allowed"),
    ("condition", OK_CONDITION + " UNION SELECT name FROM secrets", "UNION is not allowed (line 1, column 36)"),
    ("condition", OK_CONDITION + " MINUS SELECT name FROM secrets", "MINUS is not allowed (line 1, column 36)"),
    ("condition", "EXISTS (SELECT 1 FROM DUAL WHERE 1 = 1 UNION SELECT 1 FROM secrets)",
     "EXISTS over anything but a SELECT is not allowed"),
    # Quoted, "dual" is another table than DUAL (Oracle folds only unquoted names).
    ("condition", 'EXISTS (SELECT 1 FROM "dual" WHERE 1 = 1)', 'table "dual" is not allowed'),
    ("condition", 'EXISTS (SELECT 1 FROM "sys".DUAL WHERE 1 = 1)', 'table "sys".DUAL is not allowed'),
    ("condition", "EXISTS (SELECT 1 FROM secrets.DUAL WHERE 1 = 1)", "table secrets.DUAL is not allowed"),
    ("condition", "EXISTS (SELECT 1 FROM DUAL@secrets_link WHERE 1 = 1)", "table DUAL@secrets_link is not allowed"),
    ("condition", "EXISTS (SELECT 1 FROM DUAL d WHERE 1 = 1)", "table DUAL d is not allowed"),
    ("condition", ":dml.get_object_name() IN (SELECT name FROM hr.secrets)", "subquery is not allowed"),
    ("subset", "region_id IN (SELECT region_id FROM hr.secrets)", "subset condition: subquery is not allowed"),
    ("value", "(SELECT MAX(salary) FROM hr.secrets)", "value expression: subquery is not allowed"),
    ("and_condition", "EXISTS (SELECT 1 FROM hr.secrets WHERE 1 = 1)", "table hr.secrets is not allowed"),
    ("add_column.expression", "(SELECT note FROM hr.secrets)", "subquery is not allowed"),
    ("handler.consume_when", "EXISTS (SELECT 1 FROM hr.secrets WHERE 1 = 1)", "table hr.secrets is not allowed"),
    ("ddl", "ALTER TABLE hr.regions ADD (x NUMBER DEFAULT (SELECT MAX(a) FROM hr.secrets))",
     "a subquery is not allowed in a table's DDL (ORA-02251): (SELECT MAX(a) FROM hr.secrets)"),
    ("ddl", "ALTER TABLE hr.regions MODIFY (note DEFAULT (SELECT note FROM hr.secrets))", "ORA-02251"),
    ("ddl", "CREATE TABLE hr.t (a NUMBER CHECK (a IN (SELECT a FROM hr.secrets)))", "ORA-02251"),
    ("ddl", "ALTER TABLE hr.regions ADD (v NUMBER AS ((SELECT COUNT(*) FROM hr.secrets)))", "ORA-02251"),
    ("tables.ddl", "CREATE TABLE hr.t (a NUMBER DEFAULT (SELECT 1 FROM hr.secrets))", "tables[0].ddl: a subquery"),
    ("ddl record", "CREATE TABLE hr.copy AS SELECT * FROM hr.secrets", "AS SELECT does not state its columns"),
    ("ddlsubst", ("NUMBER)", "NUMBER DEFAULT (SELECT MAX(a) FROM hr.secrets))"), "PARSE on HR.REGIONS: a subquery"),
)


@pytest.mark.parametrize("place, text, fragment", SUBQUERIES)
def test_subqueries_on_other_tables_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


# --------------------------------------------------------------------------------------- backticks

BACKTICKS = cases(
    ("condition", "`secrets`.x = 1", "syntax error near '`'"),
    ("condition", ":dml.get_value('NEW','\"A`B\"').AccessNumber() = 1", "column name '\"A`B\"' in get_value is not allowed"),
    ("condition", ":dml.get_value('NEW','a`; DROP TABLE secrets; --').AccessNumber() = 1",
     "in get_value is not allowed (line 1, column 22)"),
    ("subset", "`region_id` = 2", "subset condition: syntax error near '`'"),
    ("ddl", "ALTER TABLE hr.`regions` ADD (x NUMBER)", "statement not understood by the DDL parser"),
    ("ddl", "ALTER TABLE hr.regions ADD (`x` NUMBER)", "DDL does not parse"),
    ("ddl", 'ALTER TABLE hr.regions RENAME COLUMN note TO "n`; DROP TABLE hr.secrets; --"',
     "name 'n`; DROP TABLE hr.secrets; --' is refused"),
    ("ddl", 'CREATE TABLE hr."t`" (a NUMBER)', "name 't`' is refused"),
    ("ddl", 'ALTER TABLE hr.regions ADD CONSTRAINT "c`" UNIQUE (note)', "name 'c`' is refused"),
    ("ddlsubst", ("hr.regions", "hr.`regions`"), "PARSE on HR.REGIONS: statement not understood"),
    ("map target", 'hr."x`y"', "'\"x`y\"' is not a plain name"),
    ("params", "MAP hr.*, TARGET hr.`x`;", "'hr.`x`' is not an owner.name pattern"),
    ("params", "DDL INCLUDE OBJNAME `hr`.*", "is not an owner.name pattern"),
    ("channel.name", "t`x", "channel.name: 't`x' is not a valid identifier"),
    ("storage.catalog", "main`; DROP SCHEMA x", "storage.catalog: 'main`; DROP SCHEMA x' is not a valid identifier"),
    ("rule.table", "hr.`regions`", "is not a valid identifier"),
    ("keys.columns", "ID`", "is not a valid identifier"),
    ("handler.set", "NOTE` = 'x', `X", "is not a valid identifier"),
)


@pytest.mark.parametrize("place, text, fragment", BACKTICKS)
def test_backticks_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


# -------------------------------------------------------------------------------- path traversal

TRAVERSAL = cases(
    ("ddl", 'ALTER TABLE "../secrets".regions ADD (x NUMBER)', "name '../secrets' is refused"),
    ("ddl", 'RENAME regions TO "../../warehouse/secrets"', "name '../../warehouse/secrets' is refused"),
    ("ddl", 'CREATE TABLE hr."/etc/passwd" (a NUMBER)', "name '/etc/passwd' is refused"),
    ("ddl", 'ALTER TABLE hr.regions RENAME TO "..\\secrets"', "is refused"),
    ("ddl", 'ALTER TABLE hr.regions ADD ("../x" NUMBER)', "name '../x' is refused"),
    ("condition", ":dml.get_value('NEW','\"../../secrets\"').AccessNumber() = 1", "in get_value is not allowed"),
    ("subset", '"../x" = 1', "column name '../x' is not allowed"),
    ("ddlsubst", ("hr.regions", 'hr."../secrets"'), "PARSE on HR.REGIONS: name '../secrets' is refused"),
    ("record owner", "../secrets", "../secrets.REGIONS is not in the source dictionary"),
    ("map target", '"../secrets".*', "'\"../secrets\"' is not a plain name"),
    ("map target", 'hr."/etc/passwd"', "is not a plain name"),
    ("params", "MAP hr.*, TARGET ../x.*;", "is not an owner.name pattern"),
    ("channel.name", "/etc", "channel.name: '/etc' is not a valid identifier"),
    ("storage.schema", "../secrets", "storage.schema: '../secrets' is not a valid identifier"),
    ("landing.name", "../x", "landing[0].name: '../x' is not a valid identifier"),
    ("rule.schema", "..", "is not a valid identifier"),
    ("instantiation.table", "../secrets", "is not an owner.table name"),
    ("transformation_modules", "../evil", "expected a list of Python module names"),
    ("adapt_ddl.integrate_schema", "../x", "adapt_ddl[0].integrate_schema: '../x' is not a valid identifier"),
)


@pytest.mark.parametrize("place, text, fragment", TRAVERSAL)
def test_path_traversal_in_names_is_refused(place, text, fragment):
    check_refused(place, text, fragment)


# ------------------------------------------------------------------------------- very long identifiers

LONG_NAMES = cases(
    ("ddl", f"ALTER TABLE hr.regions ADD ({LONG} NUMBER)", f"name '{LONG}' is refused"),
    ("ddl", f'ALTER TABLE hr."{LONG}" ADD (x NUMBER)', "(at most 128)"),
    ("ddl", f"CREATE TABLE {LONG}.t (a NUMBER)", "(at most 128)"),
    ("ddl", f"ALTER TABLE hr.regions RENAME COLUMN note TO {LONG * 8}", "(at most 128)"),
    ("condition", f":dml.get_value('NEW','\"{LONG}\"').AccessNumber() = 1", "at most 128 letters, digits"),
    ("condition", f":dml.get_value('OLD','{LONG}') IS NULL", "in get_value is not allowed"),
    ("subset", f"{LONG} = 1", f"column name '{LONG}' is not allowed"),
    ("ddlsubst", ("regions", LONG), "PARSE on HR.REGIONS: name"),
    ("map target", f"hr.{LONG}", "is not a plain name"),
    ("map target", f'"{LONG}".*', "at most 128 characters"),
    ("channel.name", LONG, "at most 128 characters"),
    ("storage.schema", LONG, "is not a valid identifier"),
    ("rule.table", f"hr.{LONG}", "is not a valid identifier"),
    ("rule.name", LONG, "is not a valid identifier"),
    ("keys.columns", LONG, "is not a valid identifier"),
    ("rename_column.to", LONG, "is not a valid identifier"),
    ("handler.set", LONG, "is not a valid identifier"),
    ("add_column.column", LONG, "add_column.column: 'AAAA"),
)


@pytest.mark.parametrize("place, text, fragment", LONG_NAMES)
def test_identifiers_longer_than_128_characters_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


def test_an_identifier_of_128_characters_is_accepted():
    name = "A" * 128
    assert parse_ddl(f"ALTER TABLE hr.regions ADD ({name} NUMBER)").actions[0].column.name == name
    assert parse_condition(f":dml.get_value('NEW','\"{name}\"') IS NULL").value_columns == {("NEW", name)}
    assert MapRule("hr.*", f"hr.{name}").target == f"HR.{name}"
    assert _channel(name=name).name == name


# ----------------------------------------------------------------------------- NUL and newline in names

CONTROL = cases(
    ("ddl", 'ALTER TABLE hr.regions ADD ("A\x00B" NUMBER)', "name 'A\\x00B' is refused"),
    ("ddl", 'ALTER TABLE hr.regions ADD ("A\nB" NUMBER)', "name 'A\\nB' is refused"),
    ("ddl", 'ALTER TABLE hr."REGIONS\x00" ADD (x NUMBER)', "is refused"),
    ("ddl", 'RENAME regions TO "STAFF\r\n"', "is refused"),
    ("ddl", "ALTER TABLE hr.regions ADD (x NUMBER) \x00", "statement not understood"),
    ("condition", ":dml.get_value('NEW','\"A\x00B\"').AccessNumber() = 1", "in get_value is not allowed"),
    ("condition", ":dml.get_value('NEW','\"A\nB\"').AccessNumber() = 1", "in get_value is not allowed"),
    ("condition", ":dml.get_object_name() = 'REGIONS'\x00", "'\\x00' after the condition is not allowed (line 1, column 35)"),
    ("subset", '"REGION\tID" = 2', "column name 'REGION\\tID' is not allowed"),
    ("ddlsubst", ("regions", "re\x00gions"), "PARSE on HR.REGIONS"),
    ("map target", 'hr."a\x00b"', "is not a plain name"),
    ("params", "DDLSUBST 'a' WITH 'b\nDROP TABLE hr.secrets'", "a quoted string is not closed on its line"),
    ("channel.name", "t\x00", "is not a valid identifier"),
    ("storage.schema", "lake\n", "storage.schema: 'lake\\n' is not a valid identifier"),
    ("landing.name", "src\n", "is not a valid identifier"),
    ("rule.table", "hr.regions\n", "is not a valid identifier"),
    ("keys.columns", "ID\x00", "is not a valid identifier"),
    ("rename_column.to", "NOTE\r", "is not a valid identifier"),
)


@pytest.mark.parametrize("place, text, fragment", CONTROL)
def test_nul_and_newline_in_names_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


# ------------------------------------------------------------------------------------------- quotes

QUOTES = cases(
    ("condition", ":dml.get_object_name() = 'REGIONS", "cannot read the text"),
    ("condition", ':dml.get_object_name() = "REGIONS"', "column reference REGIONS is not allowed"),
    ("condition", ":dml.get_object_name() = q'[x' OR '1'='1]'", "RAWSTRING expression is not allowed"),
    ("condition", ":dml.get_value('NEW','\"A\"\"B\"').AccessNumber() = 1", "in get_value is not allowed"),
    ("condition", ":dml.get_value('NEW','\"A'' OR ''1''=''1\"').AccessNumber() = 1", "in get_value is not allowed"),
    # A name that would close the JSON path $["..."] the column is read with.
    ("condition", ":dml.get_value('NEW','\"A\"\"]\"').AccessNumber() = 1", "in get_value is not allowed"),
    ("subset", "region_name = 'x", "subset condition: cannot read the text"),
    ("subset", "\"REGION'ID\" = 2", "column name \"REGION'ID\" is not allowed"),
    ("ddl", "ALTER TABLE hr.regions RENAME COLUMN note TO \"n'; DROP TABLE hr.secrets; --\"", "is refused"),
    ("ddl", 'ALTER TABLE hr.regions DROP COLUMN "a""b"', "name 'a\"b' is refused"),
    ("ddl", "ALTER TABLE hr.regions ADD (x VARCHAR2(5) DEFAULT 'x)", "DDL does not tokenize"),
    ("ddl", 'ALTER TABLE "hr.regions ADD (x NUMBER)', "DDL does not tokenize"),
    ("ddlsubst", ("regions", "regions'"), "PARSE on HR.REGIONS"),
    ("map target", 'hr."x""y"', "is not an owner.name pattern"),
    ("params", "DDLSUBST 'users WITH 'hr_data'; DROP TABLE x --'", "unknown keyword 'hr_data' in DDLSUBST"),
    ("channel.name", "o'hara", "is not a valid identifier"),
    ("rule.table", 'hr."regions"', "is not a valid identifier"),
    ("rule set", "RS' OR '1'='1", "is not a valid identifier"),
)


@pytest.mark.parametrize("place, text, fragment", QUOTES)
def test_quotes_that_break_out_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


# -------------------------------------------------------------------------------- unicode lookalikes
# Unquoted names fold to upper case: 'ſ' (long s) folds to S, 'ı' (dotless i) to I, 'ﬁ' to FI.
# Checked after folding, 'hr.ſecrets' would pass as HR.SECRETS; names are checked as written.

LOOKALIKES = cases(
    ("ddl", "ALTER TABLE hr.ſecrets ADD (x NUMBER)", "name 'ſecrets' is refused"),
    ("ddl", "DROP TABLE hr.regıons", "name 'regıons' is refused"),
    ("ddl", "ALTER TABLE hr.regions ADD (ﬁle NUMBER)", "name 'ﬁle' is refused"),
    ("ddl", "ALTER TABLE hr.rеgions ADD (x NUMBER)", "name 'rеgions' is refused"),  # Cyrillic е
    ("ddl", 'ALTER TABLE hr.regions RENAME COLUMN note TO "ＮＯＴＥ"', "is refused"),  # fullwidth
    ("ddl", "ALTER TABLE hr.regions ADD (no\u200bte NUMBER)", "is refused"),  # zero-width space
    ("ddl record", "TRUNCATE TABLE hr.regıons", "name 'regıons' is refused"),
    ("condition", ":dml.get_value('NEW','regıon_id').AccessNumber() = 1", "column name 'regıon_id' in get_value"),
    ("condition", ":dml.get_value('NEW','\"RЕGION_ID\"').AccessNumber() = 1", "in get_value is not allowed"),
    ("condition", ":dml.get_object_name() ＝ 'REGIONS'", "syntax error"),
    ("subset", "ſalary > 1", "column name 'ſalary' is not allowed"),
    ("ddlsubst", ("hr.regions", "hr.ſecrets"), "PARSE on HR.REGIONS: name 'ſecrets' is refused"),
    ("map target", 'hr."Ｒegions"', "is not a plain name"),
    ("params", "MAP hr.*, TARGET hr.rеgions;", "is not an owner.name pattern"),
    ("channel.name", "cһannel", "is not a valid identifier"),  # Cyrillic һ
    ("rule.table", "hr.regıons", "is not a valid identifier"),
    ("storage.schema", "ſchema", "is not a valid identifier"),
    ("keys.columns", "ıd", "is not a valid identifier"),
)


@pytest.mark.parametrize("place, text, fragment", LOOKALIKES)
def test_unicode_lookalikes_are_refused(place, text, fragment):
    check_refused(place, text, fragment)


# ----------------------------------------------------------------- legal values, kept as data

NAME_IS = Member("get_object_name", "VARCHAR2")
NOTE = "'; DROP TABLE secrets --"


@pytest.mark.parametrize("place, text, proof", [
    pytest.param("condition", f":dml.get_object_name() = '{NOTE.replace(chr(39), chr(39) * 2)}'",
                 lambda c: c.node == Compare("=", NAME_IS, Lit(NOTE, "VARCHAR2")), id="literal with SQL"),
    pytest.param("condition", ":dml.get_object_name() = 'x'' OR ''1''=''1'",
                 lambda c: c.node == Compare("=", NAME_IS, Lit("x' OR '1'='1", "VARCHAR2")), id="doubled quotes"),
    pytest.param("condition", ":dml.get_object_name() = '/* x */ -- y'",
                 lambda c: c.node.right == Lit("/* x */ -- y", "VARCHAR2"), id="comment marks in a literal"),
    pytest.param("condition", ":dml.get_object_name() LIKE '%''; --%' ESCAPE '\\'",
                 lambda c: c.node == Like(NAME_IS, "%'; --%", "\\"), id="LIKE pattern"),
    pytest.param("condition", ":dml.get_object_name() = 'ſECRETS'",
                 lambda c: c.node.right == Lit("ſECRETS", "VARCHAR2"), id="lookalike literal is not folded"),
    pytest.param("condition", ":dml.get_object_name() = 'A\x00B'",
                 lambda c: c.node.right == Lit("A\x00B", "VARCHAR2"), id="NUL in a literal"),
    pytest.param("value", "'x''; DROP TABLE secrets; --'",
                 lambda v: v.node == Lit("x'; DROP TABLE secrets; --", "VARCHAR2"), id="value literal"),
    pytest.param("ddl", "ALTER TABLE hr.regions ADD (x VARCHAR2(40) DEFAULT '''; DROP TABLE hr.secrets --')",
                 lambda s: (s.name, s.actions) == ("REGIONS", (AddColumn(ColumnSpec(
                     "X", s.actions[0].column.type, None, "'''; DROP TABLE hr.secrets --'")),)),
                 id="DEFAULT string kept as text"),
    pytest.param("params", "DDL INCLUDE INSTR '; DROP TABLE hr.secrets'",
                 lambda c: c.filters[0].instr == "; DROP TABLE hr.secrets", id="INSTR text"),
    pytest.param("params", "DDLSUBST 'it''s' WITH 'x''; DROP TABLE y; --'",
                 lambda c: (c.substs[0].search, c.substs[0].replace) == ("it's", "x'; DROP TABLE y; --"),
                 id="DDLSUBST strings"),
])
def test_legal_hostile_looking_values_are_kept_as_data(place, text, proof):
    assert proof(PLACES[place](text))


def test_an_and_condition_cannot_close_its_brackets_and_widen_the_rule():
    """Pasted into the generated condition, "x) OR (1 = 1" would read as (table rule AND x)
    OR 1 = 1: a rule for every table. It is read alone first."""
    for text in (":lcr.is_null_tag() = 'Y') OR (1 = 1", "1 = 1)) OR ((1 = 1"):
        message = refusal("and_condition", text)
        assert "and_condition must be one condition on its own" in message and "syntax error near ')'" in message


def test_ddlsubst_that_points_the_statement_at_another_table_is_refused():
    assert "DDLSUBST made the statement act on HR.SECRETS, not on its target HR.REGIONS" in refusal(
        "ddlsubst", ("regions", "secrets"))
    mapped = parse_params("MAP hr.*, TARGET hr_copy.*;\nDDLSUBST 'hr_copy.regions' WITH 'hr_copy.secrets'\n"
                          "DDLERROR DEFAULT DISCARD")
    done = process_ddl(_ddl_record(ADD_X), ADD_X, None, "HR", mapped)
    assert done.outcome == "DISCARDED" and "act on HR_COPY.SECRETS, not on its target HR_COPY.REGIONS" in done.discard
    # A substitution that keeps the table is applied.
    same = parse_params("DDLSUBST 'regions' WITH 'REGIONS'")
    assert process_ddl(_ddl_record(ADD_X), ADD_X, None, "HR", same).outcome == "APPLIED"


# --------------------------------------------------------------------------- end to end

BYSTANDERS = ("gold", "hr__secrets"), ("silver", "chg__dbs1_example_com__hr__secrets")
AND_CONDITION = (  # legal: a string literal with SQL in it, and a comment
    ":lcr.get_value('NEW','\"NOTE\"').AccessVarchar2() != '''; DROP TABLE secrets--' "
    "/* ) OR (1 = 1; DROP TABLE hr.secrets */"
)
PARAMS = (
    "DDLSUBST 'hr.regions ' WITH 'hr.secrets ' INCLUDE INSTR 'TABLESPACE users'\n"
    "DDLSUBST 'hr_data' WITH 'hr_data; DROP TABLE hr.secrets'\n"
    "DDLERROR DEFAULT DISCARD\n"
)
HOSTILE_DDL = {  # transaction → (DDL text, a fragment of why it is refused)
    "d2": ("ALTER TABLE hr.regions ADD (y NUMBER); DROP TABLE hr.secrets", "this one holds 2"),
    "d3": ("DROP TABLE hr.regions, hr.secrets", "DROP TABLE names one table in Oracle"),
    "d4": ("ALTER TABLE hr.regions ADD (y NUMBER DEFAULT (SELECT MAX(a) FROM hr.secrets))", "ORA-02251"),
    "d5": ('ALTER TABLE hr.regions RENAME TO "../secrets"', "name '../secrets' is refused"),
    "d6": ("ALTER TABLE hr.ſecrets ADD (y NUMBER)", "name 'ſecrets' is refused"),
    "d8": ("ALTER TABLE hr.regions MOVE TABLESPACE users", "act on HR.SECRETS, not on its target HR.REGIONS"),
    "d9": ("ALTER TABLE hr.regions MOVE TABLESPACE hr_data", "this one holds 2"),
}
ACCEPTED_DDL = "ALTER TABLE hr.regions ADD (note2 VARCHAR2(40) DEFAULT '''; DROP TABLE hr.secrets --') -- ; DROP"


def _version(spark, table: str) -> int:
    return spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["version"]


def _data_files(spark, table: str) -> list[Path]:
    location = Path(urlparse(spark.sql(f"DESCRIBE DETAIL {table}").first()["location"]).path)
    return [p for p in location.rglob("*.parquet") if "_delta_log" not in p.parts]


def test_no_table_but_the_intended_one_is_read_or_changed(spark, tmp_path):
    """Bystander tables stand where a redirected HR.SECRETS would land (its gold table and
    its change table), their data files moved away so that any read fails the run. Running
    as root, a chmod would not stop a read: moving the files does."""
    # The table's DDL LCRs are the apply's too (a rule of their own: the and_condition reads row values).
    ch = make_channel(tmp_path, apply={"rules": [{"table": "hr.regions", "and_condition": AND_CONDITION},
                                                 {"table": "hr.regions", "include_dml": False, "include_ddl": True}]},
                      ddl_processing={"params": PARAMS})
    ensure_schemas(spark, ch.storage)
    names = [ch.storage.table(layer, name) for layer, name in BYSTANDERS]
    secret = spark.createDataFrame([(1, "the secret")], "ID INT, SECRET STRING")
    for name in names:
        secret.write.format("delta").saveAsTable(name.replace("`", ""))
    before = table_versions(spark, ch)  # the channel's tables so far: the bystanders alone
    assert before == {name.replace("`", ""): _version(spark, name) for name in names}

    def ddl(txid: str, scn: int, text: str) -> list[dict]:
        return Txn(txid, scn).ddl(text, name="REGIONS").commit()

    def ins(txid: str, scn: int, new: dict, table: str = "REGIONS") -> list[dict]:
        return Txn(txid, scn).row("INSERT", table, new=new).commit()

    write_lines(ch, "src", "hostile.jsonl", [
        *ddl("d1", 100, REGIONS_DDL),
        *ins("t1", 110, {"REGION_ID": 1, "REGION_NAME": "Europe", "NOTE": "n"}),
        *ins("t2", 120, {"REGION_ID": 2, "REGION_NAME": "'; DROP TABLE secrets--", "NOTE": "/* x */"}),
        *ins("t3", 130, {"REGION_ID": 3, "REGION_NAME": "Asia", "NOTE": "'; DROP TABLE secrets--"}),  # the and_condition
        *ins("t4", 140, {"ID": 2, "SECRET": "forged"}, table="SECRETS"),  # no rule for HR.SECRETS
        *ins("t5", 150, {"REGION_ID": 5}, table="REGIONS`; DROP TABLE hr__secrets; --"),
        *ins("t6", 160, {"REGION_ID": 6, "NOTE": "n", "X`; DROP TABLE hr__secrets; --": 1}),
        *[r for n, (txid, (text, _)) in enumerate(HOSTILE_DDL.items()) for r in ddl(txid, 200 + 10 * n, text)],
        *ddl("d7", 300, ACCEPTED_DDL),
        *ins("t7", 310, {"REGION_ID": 4, "REGION_NAME": "Oceania", "NOTE": "o", "NOTE2": "--"}),
    ])
    stash = tmp_path / "stash"
    moved: list[tuple[Path, Path]] = []
    try:
        for name in names:
            for f in _data_files(spark, name):
                to = stash / str(len(moved)) / f.name
                to.parent.mkdir(parents=True)
                moved.append((f, Path(shutil.move(f, to))))
        with pytest.raises(Exception, match="(?i)file.*(not exist|not found)|FileNotFound"):
            spark.table(names[0].replace("`", "")).collect()  # the trap is armed (count() reads only stats)

        run_pipeline(spark, ch)
    finally:
        for original, stashed in moved:
            shutil.move(stashed, original)

    assert {name.replace("`", ""): _version(spark, name) for name in names} == before
    for name in names:
        assert_df_equality(spark.table(name.replace("`", "")), secret)
    gold_schema = ch.storage.schema_name("gold")
    gold_tables = table_names(spark, ch.storage, "gold", views=False)
    assert gold_tables - set(GOLD_META_TABLES) == {"hr__regions", "hr__secrets"}
    change_tables = {t for t in table_names(spark, ch.storage, "silver") if t.startswith("chg__")}
    assert change_tables == {"chg__dbs1_example_com__hr__regions", "chg__dbs1_example_com__hr__secrets"}

    gold = spark.table(f"{gold_schema}.hr__regions").select("REGION_ID", "REGION_NAME", "NOTE", "NOTE2")
    expected = spark.createDataFrame(
        [(1, "Europe", "n", None), (2, "'; DROP TABLE secrets--", "/* x */", None), (4, "Oceania", "o", "--")],
        "REGION_ID INT, REGION_NAME STRING, NOTE STRING, NOTE2 STRING")
    assert_df_equality(gold, expected, ignore_row_order=True, ignore_nullable=True)

    queue = {r["transaction_id"]: r["error"] for r in spark.table(f"{gold_schema}.error_queue").collect()}
    assert set(queue) == {"t6", *HOSTILE_DDL}
    assert "column(s) not in the source dictionary of HR.REGIONS: X`; DROP TABLE hr__secrets; --" in queue["t6"]
    for txid, (_, why) in HOSTILE_DDL.items():
        assert "DDL discarded" in queue[txid] and why in queue[txid], (txid, queue[txid])

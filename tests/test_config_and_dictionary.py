"""Channel files are validated on load; CREATE TABLE becomes the source dictionary."""

from __future__ import annotations

import pytest

from lakestreams.config import channel_from_dict, load_channel
from lakestreams.errors import ConfigError, DdlError
from silver.dictionary import parse_create_table

BASE = {"name": "c", "landing": [{"name": "a", "path": "x"}]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"landing": [{"name": "a", "path": "x", "transactions": "sometimes"}]}, "landing[0].transactions: 'sometimes' is not one of"),
        ({"colour": "red"}, "channel: unknown key 'colour'; accepted keys:"),
        ({"name": "bad name; drop table x"}, "channel.name: 'bad name; drop table x' is not a valid identifier"),
        ({"apply": {"rules": [{"table": "hr.regions; --"}]}}, "apply.rules[0].table"),
        ({"apply": {"rules": [{"schema": "hr", "table": "hr.x"}]}}, "give exactly one of"),
        ({"apply": {"rules": [{"global": True, "source_database": "x' or '1'='1"}]}}, "is not a global database name"),
        ({"instantiation": [{"table": "hr.x", "source_database": "D", "scn": -1}]}, "is not a non-negative integer SCN"),
        ({"landing": []}, "landing: expected a non-empty list"),
        (
            {"instantiation": [{"table": "hr.x", "source_database": "d", "scn": 1}, {"table": "HR.X", "source_database": "D", "scn": 2}]},
            "instantiation[1]: HR.X from D is given an instantiation SCN twice",
        ),
    ],
)
def test_bad_channel_is_refused_with_the_key(tmp_path, change, message):
    with pytest.raises(ConfigError) as e:
        channel_from_dict({**BASE, **change}, tmp_path)
    assert message in str(e.value)


@pytest.mark.parametrize(
    "text, message",
    [
        # An unknown key is found on its own line, not its mapping's.
        ("name: c\nlanding: [{name: a, path: x}]\nstorage:\n  schema: s\n  wharehouse: w\n",
         "c.yml, line 5: storage: unknown key 'wharehouse'"),
        ("# a channel\nname: c\ncolour: red\nlanding: [{name: a, path: x}]\n", "c.yml, line 3: channel: unknown key 'colour'"),
        ("name: c\nlanding:\n  - name: a\n    path: x\n  - name: b\n    path: y\n    transactions: sometimes\n",
         "c.yml, line 7: landing[1].transactions: 'sometimes' is not one of"),
        # A rule's condition is checked when the rules are built: the rule's line.
        ("name: c\nlanding: [{name: a, path: x}]\napply:\n  rules:\n    - table: hr.regions\n    - table: hr.jobs\n"
         "      and_condition: \"x = 1 ; drop\"\n", "c.yml, line 6: apply.rules[1]: and_condition must be one condition"),
        # A missing key: the mapping it is missing from.
        ("\nlanding: [{name: a, path: x}]\n", "c.yml, line 2: channel: missing required key 'name'"),
        # YAML keeps the last of two equal keys without a word: refused, both lines named.
        ("name: c\nlanding: [{name: a, path: x}]\nstorage:\n  schema: s\n  schema: t\n",
         "c.yml, line 5: key 'schema' is given twice in one mapping (first at line 4)"),
        # An alias is not walked again (a recursive one would never end); the error is placed.
        ("name: c\nx: &a [1, *a]\nlanding: [{name: a, path: x}]\n", "c.yml, line 2: channel: unknown key 'x'"),
        # An error naming no key of the file gets no line rather than a wrong one.
        ("name: c\nlanding: [{name: a, path: x}]\ncapture: {name: same}\napply: {name: same}\n",
         "c.yml: capture and apply clients share the name"),
    ],
)
def test_load_channel_names_the_file_line_and_key(tmp_path, text, message):
    p = tmp_path / "c.yml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_channel(p)
    assert f"{tmp_path}/{message}" in str(e.value)


def test_create_table_keys_and_types():
    t = parse_create_table(
        'CREATE TABLE hr.job_history (employee_id NUMBER(6) NOT NULL, start_date DATE NOT NULL, '
        'end_date DATE, salary NUMBER(8,2), "MixedCase" VARCHAR2(5), CONSTRAINT jh_pk PRIMARY KEY (employee_id, start_date))'
    )
    assert (t.owner, t.name, t.key_columns, t.key_kind) == ("HR", "JOB_HISTORY", ("EMPLOYEE_ID", "START_DATE"), "PRIMARY KEY")
    assert [c.type.spark for c in t.columns] == ["INT", "TIMESTAMP_NTZ", "TIMESTAMP_NTZ", "DECIMAL(8,2)", "STRING"]
    assert t.columns[4].name == "MixedCase" and t.columns[4].type.max_length == 5
    uk = parse_create_table("CREATE TABLE s.t (a NUMBER, b NUMBER NOT NULL, c CLOB, CONSTRAINT u UNIQUE (b))")
    assert (uk.key_columns, uk.key_kind) == (("B",), "UNIQUE")
    nokey = parse_create_table("CREATE TABLE s.t (a NUMBER, c CLOB)")
    assert (nokey.key_columns, nokey.key_kind) == (("A",), "ALL COLUMNS")


@pytest.mark.parametrize("ddl", [
    'CREATE TABLE s."x`; DROP TABLE y; --" (a NUMBER)',
    'CREATE TABLE s.t ("a\'b" NUMBER)',
    'CREATE TABLE "../../etc".t (a NUMBER)',
    "CREATE TABLE t (a NUMBER)", "CREATE VIEW s.v AS SELECT 1 FROM dual", "CREATE TABLE s.t (a NUMBER, a DATE)", "CREATE TABLE s.t ((("])
def test_create_table_refusals(ddl):
    with pytest.raises(DdlError):
        parse_create_table(ddl)


def test_column_defaults_an_insert_takes(spark):
    """A DEFAULT as the dictionary keeps it (sqlglot's Oracle SQL) → the value an INSERT that
    does not carry the column gets: constants in the column's type, a clock as the change's
    commit time, nothing for what the apply cannot know."""
    from datetime import datetime
    from decimal import Decimal

    from pyspark.sql import functions as F

    from silver.changes import default_value

    t = parse_create_table(
        "CREATE TABLE s.t (id NUMBER(4) PRIMARY KEY, n NUMBER(5) DEFAULT 5, neg NUMBER(6,2) DEFAULT (-3.5), "
        "s VARCHAR2(9) DEFAULT 'new', e VARCHAR2(9) DEFAULT '', d DATE DEFAULT DATE '2020-01-02', "
        "ts TIMESTAMP DEFAULT TIMESTAMP '2020-01-02 03:04:05', born DATE DEFAULT SYSDATE, "
        "at TIMESTAMP WITH TIME ZONE DEFAULT SYSTIMESTAMP, g RAW(16) DEFAULT SYS_GUID(), "
        "u VARCHAR2(30) DEFAULT USER, z NUMBER DEFAULT NULL, bad NUMBER(3) DEFAULT 'x', "
        "fmt DATE DEFAULT TO_DATE('02/01/2020', 'DD/MM/YYYY'), sum_ NUMBER DEFAULT 1 + 2, plain NUMBER, "
        "nv NVARCHAR2(5) DEFAULT N'nv', ex NUMBER(5) DEFAULT 1e2, half NUMBER(3) DEFAULT 2.5, "
        "cents NUMBER(5,1) DEFAULT 1.25, en NUMBER(3) DEFAULT '', ed DATE DEFAULT '', "
        "nls DATE DEFAULT '01-JAN-2000', long_ VARCHAR2(3) DEFAULT 'abcd', big NUMBER(3) DEFAULT 1000, "
        "up NUMBER(3) DEFAULT 999.5, wide NUMBER(5,1) DEFAULT 10000, edge NUMBER(5,1) DEFAULT 9999.94, "
        "small NUMBER(5,1) DEFAULT -9999.96, huge NUMBER(3) DEFAULT 1e100, shown VARCHAR2(2) DEFAULT 0.5, "
        "tiny NUMBER(2,5) DEFAULT 0.000123, over NUMBER(2,5) DEFAULT 0.5, "
        "odd NUMBER(4) DEFAULT '1_000', anyn NUMBER DEFAULT 1e20, hund NUMBER(5,-2) DEFAULT 1250, "
        "hover NUMBER(2,-2) DEFAULT 10000, shown2 VARCHAR2(4) DEFAULT 1.50, shown3 VARCHAR2(3) DEFAULT 1e2, "
        "shown4 CHAR(3) DEFAULT (-0.5), shown5 VARCHAR2(2) DEFAULT 123, sci VARCHAR2(99) DEFAULT 1e70, "
        "quoted VARCHAR2(3) DEFAULT '0.5', padded CHAR(4 CHAR) DEFAULT 'é', padb CHAR(4) DEFAULT 'é', "
        "one CHAR DEFAULT 'ab')")
    values = {c.name: default_value(c) for c in t.columns}
    assert {n for n, v in values.items() if v is None} == {"ID", "E", "G", "U", "Z", "FMT", "SUM_", "PLAIN", "EN", "ED"}
    row = spark.range(1).select(
        F.lit(datetime(2024, 1, 1, 0, 3, 40)).cast("timestamp").alias("_commit_time")
    ).select(*[v.value.alias(n) for n, v in values.items() if v is not None]).first().asDict()
    assert row == {"N": 5, "NEG": Decimal("-3.50"), "S": "new", "D": datetime(2020, 1, 2),
                   "TS": datetime(2020, 1, 2, 3, 4, 5), "BORN": datetime(2024, 1, 1, 0, 3, 40),
                   "AT": datetime(2024, 1, 1, 0, 3, 40), "BAD": None, "NV": "nv", "EX": 100, "HALF": 3,
                   "CENTS": Decimal("1.3"), "NLS": None, "LONG_": None, "BIG": None, "UP": None, "WIDE": None,
                   "EDGE": Decimal("9999.9"), "SMALL": None, "HUGE": None, "SHOWN": ".5",
                   "TINY": Decimal("0.00012"), "OVER": None, "ODD": None,
                   "ANYN": Decimal("100000000000000000000"), "HUND": 1300, "HOVER": None,
                   "SHOWN2": "1.5", "SHOWN3": "100", "SHOWN4": "-.5", "SHOWN5": None, "SCI": None, "QUOTED": "0.5",
                   "PADDED": "é   ", "PADB": "é  ", "ONE": None}
    # A default that does not fit its column (ORA-12899, ORA-01438) says so, as one that
    # does not convert does; rounding to the scale comes first (999.5 is 1000 in NUMBER(3)).
    # A number is held to the precision and scale Oracle states (a scale above the precision
    # leaves room after the point only); a number in a character column is stored and
    # measured as Oracle writes it as text (TM9: 1.50 is '1.5', 0.5 is '.5'). CHAR(n) pads
    # with blanks to n (bytes: 'é' takes two), and CHAR alone is CHAR(1).
    assert {n: values[n].fault for n in ("BAD", "LONG_", "BIG", "UP", "WIDE", "SMALL", "HUGE", "OVER", "ODD",
                                        "HOVER", "SHOWN5", "ONE")} == {
        "BAD": "does not convert to NUMBER(3)", "LONG_": "is longer than 3 bytes (VARCHAR2(3))",
        "BIG": "has more digits than NUMBER(3) holds", "UP": "has more digits than NUMBER(3) holds",
        "WIDE": "has more digits than NUMBER(5, 1) holds", "SMALL": "has more digits than NUMBER(5, 1) holds",
        "HUGE": "has more digits than NUMBER(3) holds", "OVER": "has more digits than NUMBER(2, 5) holds",
        "ODD": "does not convert to NUMBER(4)", "HOVER": "has more digits than NUMBER(2, -2) holds",
        "SHOWN5": "is longer than 2 bytes (VARCHAR2(2))", "ONE": "is longer than 1 bytes (CHAR)"}
    assert "scientific notation" in values["SCI"].fault


def test_inserts_take_the_defaults_of_the_revision_in_force(spark):
    """``fill_defaults``: only an INSERT, only for a column it does not carry, with the
    default of the revision its SCN reads; the filled column counts as carried. A default
    that does not convert to the column's type fails the INSERT that takes it."""
    from pyspark.sql import functions as F

    from silver.changes import Default, default_value, fill_defaults

    rows = spark.createDataFrame(
        [(10, "INSERT", None, ["ID"]), (30, "INSERT", None, ["ID"]), (31, "INSERT", 7, ["ID", "NOTE"]),
         (32, "UPDATE", None, ["ID"]), (33, "DELETE", None, []), (40, "INSERT", None, ["ID"]),
         (41, "INSERT", 7, ["ID", "NOTE"])],
        "_scn BIGINT, _command_type STRING, note INT, _new_present ARRAY<STRING>",
    ).select("_scn", F.col("_scn").alias("_commit_scn"), "_command_type",
             F.struct(F.col("_scn").cast("int").alias("ID"), F.col("note").alias("NOTE")).alias("_new"),
             "_new_present", F.lit(None).cast("string").alias("_error"))
    # Revision 1 (SCN < 20): NOTE defaults to 1; revision 2 (20-39): to 2; revision 3
    # (from 40): NUMBER(3) DEFAULT 'x', which no INSERT can take.
    bad = default_value(parse_create_table("CREATE TABLE s.t (id NUMBER PRIMARY KEY, note NUMBER(3) DEFAULT 'x')")
                        .column("NOTE"))
    defaults = [(F.col("_scn") < 20, {"NOTE": Default(F.lit(1), "")}),
                (F.col("_scn").between(20, 39), {"NOTE": Default(F.lit(2), "")}),
                (F.col("_scn") >= 40, {"NOTE": bad})]
    got = {r["_scn"]: (r["_new"]["NOTE"], r["_new_present"], r["_error"])
           for r in fill_defaults(rows, defaults).collect()}
    assert got == {10: (1, ["ID", "NOTE"], None), 30: (2, ["ID", "NOTE"], None), 31: (7, ["ID", "NOTE"], None),
                   32: (None, ["ID"], None), 33: (None, [], None),
                   40: (None, ["ID", "NOTE"],
                        "the INSERT does not carry NOTE, and the DEFAULT of NOTE does not convert to NUMBER(3)"),
                   41: (7, ["ID", "NOTE"], None)}


def test_defaults_per_revision_as_the_registry_keeps_them(spark):
    """``revision_default_rows`` elements, stored in ``silver.targets`` and read back, give
    the apply plan (an error handler's INSERT) what silver gives: per SCN range (a change's
    SCN, else its commit SCN), and only for the change table's source database."""
    from pyspark.sql import functions as F

    from lakestreams.delta_io import local_rows
    from silver.changes import REVISION_DEFAULTS_DDL, defaults_from_rows, fill_defaults

    def element(lo, hi, sql):
        return {"from_scn": lo, "to_scn": hi, "name": "NOTE", "oracle_type": "VARCHAR2(5)", "spark_type": "STRING",
                "max_length": 5, "empty_is_null": True, "hex_binary": False, "default_sql": sql}

    kept = local_rows(spark, [{"d": [element(None, 20, "'one'"), element(20, None, "'two'")]}],
                      f"d {REVISION_DEFAULTS_DDL}").first()["d"]
    rows = spark.createDataFrame(
        [("db1", 10, 10), ("db1", None, 20), ("db1", 25, 30), ("db2", 25, 30)],
        "_source_database STRING, _scn BIGINT, _commit_scn BIGINT",
    ).select("*", F.lit("INSERT").alias("_command_type"), F.struct(F.lit(None).cast("string").alias("NOTE")).alias("_new"),
             F.array().cast("array<string>").alias("_new_present"), F.lit(None).cast("string").alias("_error"))
    got = sorted((r["_source_database"], r["_commit_scn"], r["_new"]["NOTE"])
                 for r in fill_defaults(rows, defaults_from_rows(kept, "db1")).collect())
    assert got == [("db1", 10, "one"), ("db1", 20, "two"), ("db1", 30, "two"), ("db2", 30, None)]

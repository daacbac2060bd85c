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


def test_load_channel_names_the_file(tmp_path):
    p = tmp_path / "c.yml"
    p.write_text("name: c\nlanding: [{name: a, path: x}]\nstorage: {wharehouse: w}\n")
    with pytest.raises(ConfigError, match=r"c.yml: storage: unknown key 'wharehouse'"):
        load_channel(p)


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

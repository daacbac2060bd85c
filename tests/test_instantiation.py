"""Instantiation SCNs at table, schema and global level (the most specific wins), and the
ignore SCN as a floor that no instantiation SCN may be set below."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import make_channel, write_lines
from records import Txn

from lakestreams.api import Streams
from lakestreams.audit import run_audit
from lakestreams.config import channel_from_dict
from lakestreams.errors import ConfigError
from lakestreams.pipeline import run_pipeline

SRC, SRC2 = "DBS1.EXAMPLE.COM", "DBS2.EXAMPLE.COM"
TABLES = [(SRC, "HR", "REGIONS"), (SRC, "HR", "JOBS"), (SRC, "SALES", "ORDERS"), (SRC2, "SALES", "ITEMS")]
SETTINGS = [
    {"schema": "hr", "source_database": SRC, "scn": 150},
    {"table": "hr.regions", "source_database": SRC, "scn": 250},  # more specific than the schema
    {"global": True, "source_database": SRC, "scn": 120},
    # Nothing set for DBS2: its CREATE TABLE record (SCN 104) would do, but the ignore SCN is higher.
    {"table": "sales.items", "source_database": SRC2, "ignore_scn": 180},
]
COMMITS = [130, 160, 200, 260, 300]


def records() -> list[dict]:
    out: list[dict] = []
    for n, (src, owner, name) in enumerate(TABLES, start=1):
        out += Txn(f"D.{name}", 100 + n, source=src).ddl(
            f"CREATE TABLE {owner}.{name} (id NUMBER(4) NOT NULL, v VARCHAR2(10), CONSTRAINT {name}_pk PRIMARY KEY (id))",
            owner=owner, name=name,
        ).commit()
    for i, scn in enumerate(COMMITS, start=1):
        txn = Txn(f"T.{scn}", scn)
        for _, owner, name in TABLES[:3]:  # one transaction, three tables: each judged by its own SCN
            txn.row("INSERT", name, new={"ID": i, "V": str(scn)}, owner=owner)
        out += txn.commit()
        out += Txn(f"T2.{scn}", scn, source=SRC2).row("INSERT", "ITEMS", new={"ID": i, "V": str(scn)}, owner="SALES") \
            .commit()
    return out


def test_the_most_specific_instantiation_scn_applies_per_table(spark, tmp_path):
    ch = make_channel(tmp_path, instantiation=SETTINGS)
    write_lines(ch, "src", "f.jsonl", records())
    run_pipeline(spark, ch)
    gold = ch.storage.schema_name("gold")
    ids = {
        f"{o}.{n}": sorted(r["ID"] for r in spark.table(f"{gold}.{o.lower()}__{n.lower()}").collect())
        for _, o, n in TABLES
    }
    assert ids == {
        "HR.REGIONS": [4, 5],  # table: 250
        "HR.JOBS": [2, 3, 4, 5],  # schema: 150
        "SALES.ORDERS": [1, 2, 3, 4, 5],  # global: 120
        "SALES.ITEMS": [3, 4, 5],  # above the ignore SCN 180
    }
    view = {
        f"{r['source_object_owner']}.{r['source_object_name']}": (r["instantiation_scn"], r["ignore_scn"], r["set_by"])
        for r in spark.table(f"{gold}.apply_instantiated_objects").collect()
    }
    assert view == {
        "HR.REGIONS": (250, None, "set_table_instantiation_scn"),
        "HR.JOBS": (150, None, "set_schema_instantiation_scn"),
        "SALES.ORDERS": (120, None, "set_global_instantiation_scn"),
        "SALES.ITEMS": (180, 180, "ignore SCN"),
    }
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["below_instantiation"] == 3 + 1 + 0 + 2
    assert audit.buckets["applied"] == 2 + 4 + 5 + 3


def channel(tmp_path: Path, instantiation: list[dict]):
    return channel_from_dict({"name": "c", "landing": [{"name": "s", "path": "l"}], "instantiation": instantiation},
                             tmp_path)


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        # the schema's SCN is the most specific for HR.REGIONS, and below its ignore SCN
        ([{"table": "hr.regions", "source_database": SRC, "ignore_scn": 180},
          {"schema": "hr", "source_database": SRC, "scn": 150}],
         "the instantiation SCN 150 of schema HR from DBS1.EXAMPLE.COM is below the ignore SCN 180 of HR.REGIONS"),
        ([{"table": "hr.regions", "source_database": SRC, "scn": 100, "ignore_scn": 180}],
         "the instantiation SCN 100 of HR.REGIONS from DBS1.EXAMPLE.COM is below the ignore SCN 180"),
        ([{"table": "hr.regions", "source_database": SRC, "ignore_scn": 180},
          {"global": True, "source_database": SRC, "scn": 179}],
         "the instantiation SCN 179 of every table from DBS1.EXAMPLE.COM is below the ignore SCN 180"),
        ([{"schema": "hr", "source_database": SRC, "scn": 1}, {"schema": "HR", "source_database": SRC, "scn": 2}],
         "instantiation[1]: schema HR from DBS1.EXAMPLE.COM is given an instantiation SCN twice"),
        ([{"schema": "hr", "source_database": SRC, "scn": 1, "ignore_scn": 0}],
         "an ignore SCN belongs to a table, not a schema"),
        ([{"schema": "hr", "table": "hr.x", "source_database": SRC, "scn": 1}], "give exactly one of table, schema"),
        ([{"global": "yes", "source_database": SRC, "scn": 1}], "global: expected true"),
        ([{"table": "hr.x", "source_database": SRC}], "give scn"),
        ([{"schema": "hr", "source_database": SRC, "scn": -1}], "is not a non-negative integer SCN"),
    ],
)
def test_instantiation_settings_that_cannot_hold_are_refused(tmp_path, settings, error):
    with pytest.raises(ConfigError, match=re.escape(error)):
        channel(tmp_path, settings)


def test_a_table_scn_at_or_above_the_ignore_scn_overrides_a_lower_schema_scn(tmp_path):
    ch = channel(tmp_path, [{"table": "hr.regions", "source_database": SRC, "ignore_scn": 180, "scn": 180},
                            {"schema": "hr", "source_database": SRC, "scn": 150}])
    assert len(ch.instantiation) == 2


def test_the_api_sets_what_the_channel_file_does(tmp_path):
    s = Streams.new("c", landing=[{"name": "s", "path": "l"}], base_dir=tmp_path)
    s.set_schema_instantiation_scn("hr", "dbs1.example.com", 150)
    s.set_table_instantiation_scn("hr.regions", "dbs1.example.com", 250)
    s.set_global_instantiation_scn("dbs1.example.com", 120)
    s.set_ignore_scn("sales.items", "dbs2.example.com", 180)
    assert set(s.channel.instantiation) == set(channel(tmp_path, SETTINGS).instantiation)
    with pytest.raises(ConfigError, match="below the ignore SCN 180 of SALES.ITEMS"):
        s.set_table_instantiation_scn("sales.items", "dbs2.example.com", 170)
    s.set_table_instantiation_scn("sales.items", "dbs2.example.com", 190)  # keeps the ignore SCN
    items = [i for i in s.channel.instantiation if i.table == "ITEMS"]
    assert [(i.scn, i.ignore_scn) for i in items] == [(190, 180)]
    # The global SCN 120 is the most specific one for SALES.ORDERS: an ignore SCN above it is refused.
    with pytest.raises(ConfigError, match="the instantiation SCN 120 of every table from DBS1.EXAMPLE.COM is below"):
        s.set_ignore_scn("sales.orders", "dbs1.example.com", 180)

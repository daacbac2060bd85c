"""Debezium and GoldenGate JSON landing folders: mapped onto the native change record,
judged by the same checks, applied by the same pipeline."""

from __future__ import annotations

import base64
import json

import pytest
from chispa import assert_df_equality
from conftest import make_channel, write_lines
from pyspark.sql import functions as F
from records import REGIONS_DDL

from bronze.records import parse_lines, to_bronze, to_quarantine
from lakestreams.audit import run_audit
from lakestreams.config import ConfigError, Landing
from lakestreams.delta_io import local_rows
from lakestreams.pipeline import run_pipeline
from silver.changes import type_changes
from silver.dictionary import parse_create_table

SRC, SRC2 = "DBS1.EXAMPLE.COM", "DBS2.EXAMPLE.COM"
TS = 1704067200000  # 2024-01-01T00:00:00Z
UNAVAILABLE = "__debezium_unavailable_value"
COUNTRIES_DDL = (
    "CREATE TABLE hr.countries (country_id CHAR(2) NOT NULL, country_name VARCHAR2(40), region_id NUMBER(4), "
    "CONSTRAINT c_pk PRIMARY KEY (country_id))"
)


def source(scn: int, commit_scn: int | None = None, txid: str | None = None, snapshot: str = "false",
           table: str = "REGIONS") -> dict:
    """A Debezium Oracle connector ``source`` block (SCNs as strings, as the connector writes them)."""
    return {"version": "2.7.0.Final", "connector": "oracle", "name": "server1", "ts_ms": TS + scn * 1000,
            "snapshot": snapshot, "db": "ORCLPDB1", "schema": "HR", "table": table, "txId": txid,
            "scn": str(scn), "commit_scn": None if commit_scn is None else str(commit_scn), "rs_id": None,
            "ssn": 0, "redo_thread": 1, "user_name": "HR"}


def change(op: str, txid: str, order: int, scn: int, commit_scn: int, before=None, after=None, wrap=False) -> dict:
    event = {"before": before, "after": after, "source": source(scn, commit_scn, txid), "op": op, "ts_ms": TS,
             "transaction": {"id": txid, "total_order": order, "data_collection_order": order}}
    if wrap:  # the JSON converter with schemas enabled
        return {"schema": {"type": "struct", "name": "server1.HR.REGIONS.Envelope", "fields": []}, "payload": event}
    return event


def read(scn: int, row: dict, snapshot: str = "true") -> dict:
    return {"before": None, "after": row, "source": source(scn, snapshot=snapshot), "op": "r", "ts_ms": TS,
            "transaction": None}


def begin(txid: str) -> dict:
    return {"status": "BEGIN", "id": txid, "ts_ms": TS, "event_count": None, "data_collections": None}


def end(txid: str, count: int) -> dict:
    return {"status": "END", "id": txid, "ts_ms": TS + 999_000, "event_count": count,
            "data_collections": [{"data_collection": "ORCLPDB1.HR.REGIONS", "event_count": count}]}


def schema_change(scn: int, ddl: str) -> dict:
    return {"source": source(scn), "ts_ms": TS, "databaseName": "ORCLPDB1", "schemaName": "HR", "ddl": ddl,
            "tableChanges": [{"type": "CREATE", "id": '"ORCLPDB1"."HR"."REGIONS"', "table": {"columns": []}}]}


def gg(op: str, csn: int, pos: int, before=None, after=None, table="ORCLPDB2.HR.COUNTRIES", xid="0.1.2") -> dict:
    rec = {"table": table, "op_type": op, "op_ts": "2024-01-02 10:00:00.000000",
           "current_ts": "2024-01-02T10:00:05.123000", "pos": f"{pos:020d}", "csn": str(csn), "xid": xid,
           "primary_keys": ["COUNTRY_ID"]}
    if before is not None:
        rec["before"] = before
    if after is not None:
        rec["after"] = after
    return rec


def parsed_lines(spark, fmt: str, lines: list):
    """Lines of one landing folder parsed, and persisted as the ingest does."""
    landing = Landing("l", None, fmt, "whole_file" if fmt == "goldengate" else "commit_records",
                      source_database=SRC)
    raw = [r if isinstance(r, str) else json.dumps(r) for r in lines]
    df = local_rows(spark, [(r, "f", "l", landing.transactions, 0) for r in raw],
                    "raw STRING, _source_file STRING, _landing STRING, _txn_mode STRING, _ingest_batch BIGINT")
    return parse_lines(df.withColumn("_ingested_at", F.current_timestamp()), landing).cache()


def parsed(spark, fmt: str, lines: list) -> tuple[list, list]:
    """Lines of one landing folder → (bronze rows as dicts, quarantine reasons)."""
    p = parsed_lines(spark, fmt, lines)
    cols = ["command_type", "object_owner", "object_name", "ddl_text", "transaction_id", "scn", "commit_scn",
            "position", "event_count", "_txn_mode"]
    good = [
        {**{c: r[c] for c in cols}, "old": r["old"] and json.loads(r["old"]), "new": r["new"] and json.loads(r["new"]),
         "time": r["time"]}
        for r in to_bronze(p).selectExpr(*cols, "to_json(old_values) AS old", "to_json(new_values) AS new",
                                         "date_format(commit_time, 'yyyy-MM-dd HH:mm:ss') AS time").collect()
    ]
    bad = [(r["raw"], r["reason"]) for r in to_quarantine(p).collect()]
    p.unpersist()
    return good, bad


def test_debezium_events_map_onto_native_records(spark):
    row = {"REGION_ID": 1, "REGION_NAME": "A", "NOTE": UNAVAILABLE}
    good, bad = parsed(spark, "debezium", [
        change("c", "0a.1", 1, 150, 160, after=row, wrap=True),
        change("u", "0a.1", 2, 151, 160, before={"REGION_ID": 1, "REGION_NAME": "A"}, after={"REGION_ID": 1,
                                                                                            "REGION_NAME": "B"}),
        change("d", "0a.1", 3, 152, 160, before={"REGION_ID": 1}),
        change("t", "0a.1", 4, 153, 160),
        begin("0a.1"), end("0a.1", 4),
        read(140, {"REGION_ID": 9}, snapshot="first"), read(140, {"REGION_ID": 8}, snapshot="last"),
        schema_change(100, REGIONS_DDL),
        # Not change records: each lands in quarantine with its reason.
        "null",
        {"foo": 1},
        change("x", "0a.2", 1, 150, 160),
        {**change("c", "0a.2", 1, 150, 160, after=row), "transaction": None},
        {**change("c", "0a.2", 1, 150, 160, after=row), "source": {**source(150, 160, "0a.2"), "scn": "12ab"}},
        {**change("c", "0a.2", 1, 150, 160, after=row), "source": {**source(150, None, "0a.2")}},
        {**change("u", "0a.2", 1, 150, 160, after=row), "before": [1]},
        {**end("0a.2", 1), "event_count": None},
        {**begin("0a.2"), "status": "MIDDLE"},
    ])
    assert [(g["command_type"], g["transaction_id"], g["position"], g["scn"], g["commit_scn"], g["_txn_mode"])
            for g in good] == [
        ("INSERT", "0a.1", 1, 150, 160, "commit_records"),
        ("UPDATE", "0a.1", 2, 151, 160, "commit_records"),
        ("DELETE", "0a.1", 3, 152, 160, "commit_records"),
        ("TRUNCATE", "0a.1", 4, 153, 160, "commit_records"),
        ("BEGIN", "0a.1", None, None, None, "commit_records"),
        ("COMMIT", "0a.1", None, None, None, "commit_records"),
        ("INSERT", "SNAPSHOT:140", good[6]["position"], 140, 140, "snapshot"),
        ("INSERT", "SNAPSHOT:140", good[7]["position"], 140, 140, "snapshot_end"),
        ("CREATE TABLE", "DDL:100", 1, 100, 100, "whole_file"),
    ]
    assert good[5]["event_count"] == 4 and good[5]["time"] == "2024-01-01 00:16:39"
    assert good[0]["time"] == "2024-01-01 00:02:30"  # source.ts_ms
    # The unavailable placeholder is an absent column, not a value.
    assert good[0]["new"] == {"REGION_ID": 1, "REGION_NAME": "A"} and good[0]["old"] is None
    assert good[1]["old"] == {"REGION_ID": 1, "REGION_NAME": "A"} and good[1]["new"] == {"REGION_ID": 1,
                                                                                          "REGION_NAME": "B"}
    assert good[2]["new"] is None and good[3]["old"] is None and good[3]["new"] is None
    assert good[6]["position"] != good[7]["position"]
    assert good[8]["ddl_text"] == REGIONS_DDL and (good[8]["object_owner"], good[8]["object_name"]) == ("HR", "REGIONS")
    assert [reason for _, reason in bad] == [
        "a Kafka tombstone (JSON null), not a change event: set tombstones.on.delete=false",
        "not a Debezium event: no op, ddl or status field",
        "Debezium op 'x' is not one of c, u, d, r, t",
        "Debezium change event without transaction.total_order: enable provide.transaction.metadata on the "
        "connector (it orders the changes of a transaction and completes it)",
        "Debezium source.scn is missing or not a number",
        "Debezium change event without source.commit_scn (the Oracle connector sets it)",
        "Debezium before is not a JSON object",
        "Debezium END event without a numeric event_count",
        "Debezium transaction event with status 'MIDDLE' (BEGIN or END expected)",
    ]


def connect_bytes(n: int) -> str:
    """An integer as Kafka Connect writes a decimal's unscaled value: base64 of its
    big-endian two's complement bytes."""
    return base64.b64encode(n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)).decode()


def field(name: str, kind: str, logical: str | None = None, **parameters) -> dict:
    """A column of a Debezium envelope's schema block."""
    f = {"type": kind, "optional": True, "field": name}
    if logical:
        f["name"] = logical
    if parameters:
        f["parameters"] = {k: str(v) for k, v in parameters.items()}
    return f


VALUES_DDL = (
    "CREATE TABLE hr.amounts (id NUMBER(10) NOT NULL, amount NUMBER(10,2), rate NUMBER, big NUMBER(38), "
    "lot NUMBER(10), hired DATE, before_epoch DATE, born DATE, at TIMESTAMP(6), nano TIMESTAMP(9), "
    "zoned TIMESTAMP WITH TIME ZONE, code RAW(4), note VARCHAR2(10), bad NUMBER(10,2), "
    "CONSTRAINT a_pk PRIMARY KEY (id))"
)
BIG = 12345678901234567890123456789012345678  # 38 digits, 16 bytes


def test_debezium_value_encodings_are_decoded(spark):
    """The connector's default encodings (``decimal.handling.mode=precise``,
    ``time.precision.mode=adaptive``, binary as base64) reach silver as the values they
    encode, exactly: the envelope's schema names each column's logical type."""
    columns = [
        field("ID", "bytes", "org.apache.kafka.connect.data.Decimal", scale=0),
        field("AMOUNT", "bytes", "org.apache.kafka.connect.data.Decimal", scale=2),
        field("RATE", "struct", "io.debezium.data.VariableScaleDecimal"),
        field("BIG", "struct", "io.debezium.data.VariableScaleDecimal"),
        field("LOT", "struct", "io.debezium.data.VariableScaleDecimal"),
        field("HIRED", "int64", "io.debezium.time.Timestamp"),
        field("BEFORE_EPOCH", "int64", "io.debezium.time.Timestamp"),
        field("BORN", "int32", "io.debezium.time.Date"),
        field("AT", "int64", "io.debezium.time.MicroTimestamp"),
        field("NANO", "int64", "io.debezium.time.NanoTimestamp"),
        field("ZONED", "string", "io.debezium.time.ZonedTimestamp"),
        field("CODE", "bytes"),
        field("NOTE", "string"),
        field("BAD", "bytes", "org.apache.kafka.connect.data.Decimal", scale=2),
    ]
    after = {
        "ID": connect_bytes(1), "AMOUNT": connect_bytes(-12345),
        "RATE": {"scale": 3, "value": connect_bytes(5)}, "BIG": {"scale": 0, "value": connect_bytes(BIG)},
        "LOT": {"scale": -3, "value": connect_bytes(7)},
        "HIRED": TS + 150_123, "BEFORE_EPOCH": -1, "BORN": 19723, "AT": TS * 1000 + 1,
        "NANO": TS * 1_000_000 + 123_456_789, "ZONED": "2024-01-01T00:00:00Z",
        "CODE": base64.b64encode(bytes.fromhex("DEADBEEF")).decode(), "NOTE": "AQ==", "BAD": "not base64!",
    }
    event = change("c", "0a.1", 1, 150, 160, after=after, wrap=True)
    event["schema"]["fields"] = [{"type": "struct", "fields": columns, "optional": True, "field": "before"},
                                 {"type": "struct", "fields": columns, "optional": True, "field": "after"}]
    # Without the wrapper, only a variable-scale decimal is known (by its two fields).
    bare = change("u", "0a.1", 2, 151, 160, before={"ID": {"scale": 0, "value": connect_bytes(1)}},
                  after={"ID": {"scale": 0, "value": connect_bytes(1)}, "LOT": 5,
                         "NOTE": {"scale": 1, "value": "AQ==", "x": 1}})
    # Edge values: one negative byte, a value needing a leading zero byte, small negative,
    # zero at each kind of scale, the most negative 38-digit number; a Decimal written as
    # a JSON number (decimal.format=NUMERIC) stays that number; a time before 1970 in
    # nanoseconds; an unchanged BLOB's placeholder (base64) is absent.
    edges = {"A": (-1, 0), "B": (200, 0), "C": (-5, 3), "D": (0, 2), "E": (0, -3), "F": (-(10**38 - 1), 0)}
    edge_cols = [field(c, "struct", "io.debezium.data.VariableScaleDecimal") for c in edges]
    edge_cols += [field("N", "bytes", "org.apache.kafka.connect.data.Decimal", scale=2),
                  field("T", "int64", "io.debezium.time.NanoTimestamp"), field("LOB", "bytes")]
    edge = change("c", "0a.1", 3, 152, 160, after={
        **{c: {"scale": sc, "value": connect_bytes(u)} for c, (u, sc) in edges.items()},
        "N": 1234, "T": -1, "LOB": base64.b64encode(UNAVAILABLE.encode()).decode()}, wrap=True)
    edge["schema"]["fields"] = [{"type": "struct", "fields": edge_cols, "optional": True, "field": "after"}]
    good, bad = parsed(spark, "debezium", [event, bare, edge])
    assert bad == []
    assert good[2]["new"] == {"A": -1, "B": 200, "C": -0.005, "D": 0, "E": 0, "F": -(10**38 - 1), "N": 1234,
                              "T": "1969-12-31T23:59:59.999999"}
    assert good[0]["new"] == {
        "ID": 1, "AMOUNT": -123.45, "RATE": 0.005, "BIG": BIG, "LOT": 7000,
        "HIRED": "2024-01-01T00:02:30.123", "BEFORE_EPOCH": "1969-12-31T23:59:59.999", "BORN": "2024-01-01T00:00:00",
        "AT": "2024-01-01T00:00:00.000001", "NANO": "2024-01-01T00:00:00.123456", "ZONED": "2024-01-01T00:00:00Z",
        "CODE": "DEADBEEF", "NOTE": "AQ==", "BAD": "not base64!",
    }
    assert good[1]["old"] == {"ID": 1}
    assert good[1]["new"] == {"ID": 1, "LOT": 5, "NOTE": {"scale": 1, "value": "AQ==", "x": 1}}

    # Silver types them to the table's columns; the one value that was not readable is an
    # error there, named, never a silent NULL.
    p = parsed_lines(spark, "debezium", [event])
    typed = type_changes(to_bronze(p).withColumn("_migrated_from", F.lit(None).cast("string")),
                         parse_create_table(VALUES_DDL), 1).select("_new.*", "_error").first()
    p.unpersist()
    assert (typed["ID"], str(typed["AMOUNT"]), str(typed["RATE"]), str(typed["BIG"]), typed["LOT"]) == (
        1, "-123.45", "0.0050000000", str(BIG), 7000)
    assert (str(typed["HIRED"]), str(typed["BEFORE_EPOCH"]), str(typed["BORN"]), str(typed["AT"]), str(typed["NANO"])) == (
        "2024-01-01 00:02:30.123000", "1969-12-31 23:59:59.999000", "2024-01-01 00:00:00",
        "2024-01-01 00:00:00.000001", "2024-01-01 00:00:00.123456")
    assert typed["CODE"] == bytes.fromhex("DEADBEEF") and typed["NOTE"] == "AQ=="
    assert typed["BAD"] is None and typed["_error"] == "new value of BAD does not convert to NUMBER(10, 2) (DECIMAL(10,2))"


def test_goldengate_operations_map_onto_native_records(spark):
    good, bad = parsed(spark, "goldengate", [
        gg("I", 5000, 1000, after={"COUNTRY_ID": "FR", "COUNTRY_NAME": "France", "REGION_ID": 1,
                                   "COUNTRY_ID_isMissing": False, "COUNTRY_NAME_isMissing": False,
                                   "REGION_ID_isMissing": False}),
        # A compressed update: REGION_ID is missing from both images, so it is absent, not NULL.
        gg("U", 5100, 2000, before={"COUNTRY_ID": "FR", "COUNTRY_NAME": "France", "REGION_ID": None,
                                    "REGION_ID_isMissing": True},
           after={"COUNTRY_ID": "FR", "COUNTRY_NAME": None, "REGION_ID": None, "REGION_ID_isMissing": True}),
        gg("D", 5200, 3000, before={"COUNTRY_ID": "FR"}, table="HR.COUNTRIES", xid=None),
        gg("T", 5300, 4000),
        {**gg("I", 5000, 1000, after={}), "op_type": "M"},
        {k: v for k, v in gg("I", 5000, 1000, after={}).items() if k != "csn"},
        {**gg("I", 5000, 1000, after={}), "table": "COUNTRIES"},
        {**gg("I", 5000, 1000, after={}), "pos": "999999999999999999999"},
        {"op": "c"},
    ])
    assert [(g["command_type"], g["object_owner"], g["object_name"], g["transaction_id"], g["scn"],
             g["commit_scn"], g["position"], g["time"]) for g in good] == [
        ("INSERT", "HR", "COUNTRIES", "0.1.2", 5000, 5000, 1000, "2024-01-02 10:00:00"),
        ("UPDATE", "HR", "COUNTRIES", "0.1.2", 5100, 5100, 2000, "2024-01-02 10:00:00"),
        ("DELETE", "HR", "COUNTRIES", "CSN:5200", 5200, 5200, 3000, "2024-01-02 10:00:00"),
        ("TRUNCATE", "HR", "COUNTRIES", "0.1.2", 5300, 5300, 4000, "2024-01-02 10:00:00"),
    ]
    assert good[0]["new"] == {"COUNTRY_ID": "FR", "COUNTRY_NAME": "France", "REGION_ID": 1}
    assert good[1]["old"] == {"COUNTRY_ID": "FR", "COUNTRY_NAME": "France"}
    assert good[1]["new"] == {"COUNTRY_ID": "FR", "COUNTRY_NAME": None}  # a real NULL stays NULL
    assert good[2]["old"] == {"COUNTRY_ID": "FR"} and good[2]["new"] is None
    assert [reason for _, reason in bad] == [
        "GoldenGate op_type 'M' is not one of I, U, D, T",
        "GoldenGate operation without csn: add ${csn} (and ${xid}) to the JSON formatter's metaColumnsTemplate",
        "GoldenGate table 'COUNTRIES' is not SCHEMA.TABLE",
        "GoldenGate pos is not a number that fits 64 bits",
        "not a GoldenGate JSON operation: no table or op_type field",
    ]


def test_landing_format_options_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"landing\[0\].source_database: a debezium landing folder needs"):
        make_channel(tmp_path, {"d": {"format": "debezium"}})
    with pytest.raises(ConfigError, match=r"a goldengate landing folder is whole_file"):
        make_channel(tmp_path, {"g": {"format": "goldengate", "source_database": SRC, "transactions": "commit_records"}})
    with pytest.raises(ConfigError, match=r"native records name their source database"):
        make_channel(tmp_path, {"n": {"source_database": SRC}})
    with pytest.raises(ConfigError, match=r"is not a global database name"):
        make_channel(tmp_path, {"d": {"format": "debezium", "source_database": "a;b"}})
    ch = make_channel(tmp_path, {"g": {"format": "goldengate", "source_database": "dbs2.example.com"}})
    assert (ch.landing[0].transactions, ch.landing[0].source_database) == ("whole_file", SRC2)


@pytest.mark.extended  # covered in the core: the two mapping tests turn each format into the native records, in Spark, that the core pipeline tests apply
def test_debezium_and_goldengate_folders_replicate_to_gold(spark, tmp_path):
    ch = make_channel(
        tmp_path,
        {"dbz": {"format": "debezium", "source_database": SRC}, "gg": {"format": "goldengate", "source_database": SRC2}},
        tables=[{"source_database": SRC2, "ddl": COUNTRIES_DDL}],
        instantiation=[{"table": "hr.countries", "source_database": SRC2, "scn": 1}],
    )
    # Debezium: the table's DDL, a snapshot at SCN 200 (instantiating it there), then a
    # transaction whose END lands before its changes, and two of three changes.
    write_lines(ch, "dbz", "schema.jsonl", [schema_change(100, REGIONS_DDL)])
    write_lines(ch, "dbz", "snapshot.jsonl", [
        read(200, {"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "x"}, "first"),
        read(200, {"REGION_ID": 2, "REGION_NAME": "B", "NOTE": "y"}),
        read(200, {"REGION_ID": 3, "REGION_NAME": "C", "NOTE": None}, "last"),
    ])
    write_lines(ch, "dbz", "tx-1.jsonl", [begin("0a.1"), end("0a.1", 3)])
    write_lines(ch, "dbz", "changes-1.jsonl", [
        change("c", "0a.1", 1, 301, 310, after={"REGION_ID": 4, "REGION_NAME": "D", "NOTE": "w"}, wrap=True),
        change("u", "0a.1", 2, 302, 310, before={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "x"},
               after={"REGION_ID": 1, "REGION_NAME": "AA", "NOTE": UNAVAILABLE}, wrap=True),
        "null",
    ])
    # GoldenGate: two whole transactions; the update's REGION_ID is missing, not NULL.
    write_lines(ch, "gg", "g1.json", [
        gg("I", 5000, 1000, after={"COUNTRY_ID": "FR", "COUNTRY_NAME": "France", "REGION_ID": 1}),
        gg("I", 5000, 1100, after={"COUNTRY_ID": "DE", "COUNTRY_NAME": "Germany", "REGION_ID": 1}),
    ])
    write_lines(ch, "gg", "g2.json", [
        gg("U", 5100, 2000, xid="0.1.3", before={"COUNTRY_ID": "FR", "REGION_ID": None, "REGION_ID_isMissing": True},
           after={"COUNTRY_ID": "FR", "COUNTRY_NAME": "France!", "REGION_ID": None, "REGION_ID_isMissing": True}),
        gg("D", 5200, 3000, xid="0.1.4", before={"COUNTRY_ID": "DE"}),
    ])
    run_pipeline(spark, ch)
    gold = ch.storage.schema_name("gold")
    regions = spark.sql(f"SELECT REGION_ID, REGION_NAME, NOTE FROM {gold}.hr__regions")
    schema = "REGION_ID INT, REGION_NAME STRING, NOTE STRING"
    assert_df_equality(regions, spark.createDataFrame([(1, "A", "x"), (2, "B", "y"), (3, "C", None)], schema),
                       ignore_row_order=True, ignore_nullable=True)
    countries = spark.sql(f"SELECT COUNTRY_ID, COUNTRY_NAME, CAST(REGION_ID AS INT) AS REGION_ID FROM {gold}.hr__countries")
    assert_df_equality(countries, spark.createDataFrame([("FR", "France!", 1)], "COUNTRY_ID STRING, COUNTRY_NAME STRING, "
                                                        "REGION_ID INT"), ignore_nullable=True)
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.quarantined == 1 and audit.buckets["pending"] == 4  # 0a.1: BEGIN, END, two of three changes

    # The third change lands: the transaction is complete and applies whole.
    write_lines(ch, "dbz", "changes-2.jsonl", [
        change("d", "0a.1", 3, 303, 310, before={"REGION_ID": 2, "REGION_NAME": "B", "NOTE": "y"})])
    run_pipeline(spark, ch)
    assert_df_equality(regions, spark.createDataFrame([(1, "AA", "x"), (3, "C", None), (4, "D", "w")], schema),
                       ignore_row_order=True, ignore_nullable=True)
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["pending"] == 0 and audit.buckets["control"] == 2
    assert audit.buckets["applied"] == 3 + 3 + 4  # snapshot rows, 0a.1's changes, GoldenGate operations

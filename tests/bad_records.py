"""A corpus of bad change records: each kind, where it must end and the reason a DBA
reads there.

``LINES``: landing lines that are not change records, each with the start of its
quarantine reason (bronze). ``TRANSACTIONS``: well-formed records that cannot be applied,
each a transaction of its own with a fragment of the error its transaction waits with in
the error queue (silver and gold). ``tests/test_bronze.py`` and
``tests/test_bad_records.py`` run them.
"""

from __future__ import annotations

import json

from records import Txn

SRC = "DBS1.EXAMPLE.COM"
CORPUS_DDL = (
    "CREATE TABLE hr.corpus (id NUMBER(6) NOT NULL, name VARCHAR2(25), born DATE, amount NUMBER(10,2), "
    "CONSTRAINT corpus_pk PRIMARY KEY (id))"
)

GOOD = {
    "source_database": SRC, "command_type": "INSERT", "object_owner": "HR", "object_name": "CORPUS",
    "new_values": {"ID": 1, "NAME": "0012"}, "transaction_id": "q.1", "scn": 10, "commit_scn": 11,
    "position": 1, "commit_time": "2024-01-01T00:00:00Z", "tag": None,
}


def line(**changes) -> str:
    """GOOD with fields replaced (``...``: removed)."""
    r = dict(GOOD)
    for k, v in changes.items():
        if v is ...:
            r.pop(k)
        else:
            r[k] = v
    return json.dumps(r)


def invalid_utf8(text: str) -> str:
    """``text`` with the bytes FF FE in it (written with ``errors='surrogateescape'``)."""
    return text.replace("@", b"\xff\xfe".decode("utf-8", "surrogateescape"))


def tampered(records: list[dict], position: int, **fields) -> list[dict]:
    """The records with ``fields`` replaced in the one at ``position``."""
    return [{**r, **fields} if r["position"] == position else r for r in records]


def landed_as(text: str) -> str:
    """A line as Spark reads it back: bytes that are not UTF-8 become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


#: (kind, line, start of the quarantine reason)
LINES: list[tuple[str, str, str]] = [
    ("truncated JSON", '{"source_database": "X", ', "not valid JSON"),
    ("JSON array", "[1, 2]", "not a JSON object"),
    ("JSON scalar", "42", "not a JSON object"),
    ("blank line", "   ", "empty line"),
    ("invalid UTF-8", invalid_utf8(line(object_name="CORP@")), "line is not valid UTF-8"),
    ("trailing garbage", line() + " }", "not valid JSON"),
    ("two records on one line", line() + line(), "not valid JSON"),
    ("two values with a comma", line() + ", 7", "more than one JSON value on the line"),
    ("duplicate JSON key", '{"command_type": "INSERT", "command_type": "DELETE"}', "not valid JSON"),
    ("missing commit SCN", line(commit_scn=...), "missing commit_scn"),
    ("null commit SCN", line(commit_scn=None), "missing commit_scn"),
    ("missing SCN", line(scn=...), "missing scn"),
    ("missing position", line(position=...), "missing position"),
    ("missing command", line(command_type=...), "missing command_type"),
    ("missing transaction", line(transaction_id=...), "missing transaction_id"),
    ("missing source database", line(source_database=...), "missing source_database"),
    ("missing commit time", line(commit_time=...), "missing commit_time"),
    ("SCN as a string", line(commit_scn="11"), "field commit_scn is not an integer"),
    ("fractional SCN", line(scn=1.5), "field scn is not an integer"),
    ("boolean position", line(position=True), "field position is not an integer"),
    ("negative position", line(position=-1), "field position is negative"),
    ("SCN beyond 64 bits", line(commit_scn=99999999999999999999), "field commit_scn does not fit a 64-bit integer"),
    ("numeric transaction id", line(transaction_id=7), "field transaction_id is not a string"),
    ("object as table name", line(object_name={"x": 1}), "field object_name is not a string"),
    ("unknown op code", line(command_type="MERGE"), "command_type MERGE is not a row command"),
    ("lower-case op code", line(command_type="insert"), "command_type insert is not a row command"),
    ("images as an array", line(new_values=[1]), "field new_values is not a JSON object"),
    ("old image as a string", line(command_type="DELETE", old_values="ID=1"), "field old_values is not a JSON object"),
    ("INSERT without new values", line(new_values=...), "INSERT without new_values"),
    ("UPDATE without new values", line(command_type="UPDATE", old_values={"ID": 1}, new_values=...),
     "UPDATE without new_values"),
    ("DELETE without old values", line(command_type="DELETE", new_values=...), "UPDATE/DELETE without old_values"),
    ("UPDATE without old values", line(command_type="UPDATE"), "UPDATE/DELETE without old_values"),
    ("SCN above commit SCN", line(scn=12), "scn is above commit_scn"),
    ("commit time not a time", line(commit_time="yesterday"), "field commit_time is not an ISO-8601 timestamp"),
    ("tag not hex", line(tag="zz"), "field tag is not a hex string"),
    ("row without a table", line(object_name=...), "row record without object_owner/object_name"),
    ("source name with SQL", line(source_database="A`B; DROP"), "field source_database is not a global database name"),
    ("event count on a row", line(event_count=3), "event_count belongs on a COMMIT record only"),
]

#: (kind, transaction id, records, fragment of the error queue's message)
TRANSACTIONS: list[tuple[str, str, list[dict], str]] = [
    ("NULL primary key", "e.null_key", Txn("e.null_key", 300).row(
        "INSERT", "CORPUS", new={"ID": None, "NAME": "n"}).commit(), "INSERT has no value for key column ID"),
    ("key column absent", "e.no_key", Txn("e.no_key", 301).row(
        "INSERT", "CORPUS", new={"NAME": "n"}).commit(), "INSERT has no value for key column ID"),
    ("DELETE without the key", "e.delete_no_key", Txn("e.delete_no_key", 302).row(
        "DELETE", "CORPUS", old={"NAME": "a"}).commit(), "old image has no value for key column ID"),
    ("text in a NUMBER", "e.not_number", Txn("e.not_number", 303).row(
        "INSERT", "CORPUS", new={"ID": "abc"}).commit(), "new value of ID does not convert to NUMBER(6)"),
    ("NUMBER out of precision", "e.overflow", Txn("e.overflow", 304).row(
        "INSERT", "CORPUS", new={"ID": 1234567}).commit(), "new value of ID has more than 6 digits (NUMBER(6))"),
    ("NUMBER beyond its Spark type", "e.too_big", Txn("e.too_big", 315).row(
        "INSERT", "CORPUS", new={"ID": 1, "AMOUNT": 10**12}).commit(),
     "new value of AMOUNT does not convert to NUMBER(10, 2)"),
    ("impossible date", "e.bad_date", Txn("e.bad_date", 305).row(
        "INSERT", "CORPUS", new={"ID": 5, "BORN": "2024-13-45"}).commit(), "new value of BORN does not convert to DATE"),
    ("enormous value", "e.enormous", Txn("e.enormous", 306).row(
        "INSERT", "CORPUS", new={"ID": 6, "NAME": "x" * 200_000}).commit(),
     "new value of NAME is longer than 25 bytes (VARCHAR2(25))"),
    # 13 characters, 26 bytes of UTF-8: VARCHAR2(25) counts bytes (Oracle's default semantics).
    ("multi-byte value", "e.multibyte", Txn("e.multibyte", 316).row(
        "INSERT", "CORPUS", new={"ID": 8, "NAME": "é" * 13}).commit(),
     "new value of NAME is longer than 25 bytes (VARCHAR2(25))"),
    ("object in a NUMBER", "e.object_value", Txn("e.object_value", 307).row(
        "INSERT", "CORPUS", new={"ID": 7, "AMOUNT": {"v": 1}}).commit(), "new value of AMOUNT does not convert"),
    ("column the table lacks", "e.unknown_column", Txn("e.unknown_column", 308).row(
        "INSERT", "CORPUS", new={"ID": 8, "NOPE": 1}).commit(), "not in the source dictionary of HR.CORPUS: NOPE"),
    ("table never defined", "e.ghost", Txn("e.ghost", 309).row(
        "INSERT", "GHOST", new={"ID": 1}).commit(), "GHOST is not in the source dictionary"),
    ("commit SCN disagrees in a transaction", "e.commit_scn", tampered(
        Txn("e.commit_scn", 310).row("INSERT", "CORPUS", new={"ID": 10}).row("INSERT", "CORPUS", new={"ID": 11})
        .commit(), 2, commit_scn=309), "carries commit SCN 309 but its transaction committed at SCN 310"),
    ("SCN goes backwards in a transaction", "e.scn_back", tampered(
        Txn("e.scn_back", 311).row("INSERT", "CORPUS", new={"ID": 12}).row("INSERT", "CORPUS", new={"ID": 13})
        .commit(), 2, scn=250), "SCN goes backwards inside the transaction: position 2 has SCN 250"),
    ("UPDATE of a row that is not there", "e.no_row", Txn("e.no_row", 312).row(
        "UPDATE", "CORPUS", old={"ID": 99, "NAME": "a"}, new={"NAME": "b"}).commit(), "ORA-01403"),
    ("INSERT of a key that is taken", "e.taken", Txn("e.taken", 313).row(
        "INSERT", "CORPUS", new={"ID": 1, "NAME": "again"}).commit(), "ORA-00001"),
    ("old value that does not match", "e.mismatch", Txn("e.mismatch", 314).row(
        "UPDATE", "CORPUS", old={"ID": 2, "NAME": "not what gold holds"}, new={"NAME": "c"}).commit(), "ORA-26786"),
]

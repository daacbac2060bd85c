"""The sample generators write valid, deterministic change histories.

Pure Python (no Spark): every file is parsed, the history is replayed with a small
independent model, and the replay is compared with the generator's expected state.
"""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lakestreams.sample import (
    BENCH_COLUMNS,
    DBS1_SOURCE,
    DBS2_SOURCE,
    DBS2_TABLES,
    HR_DDL,
    HR_KEYS,
    HR_TABLES,
    SampleSpec,
    bench_ddl,
    generate_bench,
    generate_hr_sample,
)

DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
UTC_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
TXID_RE = re.compile(r"^\d+\.\d+\.\d+$")
ROW_COMMANDS = {"INSERT", "UPDATE", "DELETE"}
END_COMMANDS = {"COMMIT", "ROLLBACK"}
ENVELOPE = {"source_database", "command_type", "transaction_id", "scn", "position", "tag"}
COMMITTED = {"commit_scn", "commit_time"}
ROW_FIELDS = ENVELOPE | {"object_owner", "object_name"}
DDL_FIELDS = (
    ENVELOPE
    | COMMITTED
    | {
        "object_owner",
        "object_name",
        "object_type",
        "ddl_text",
        "current_schema",
        "logon_user",
    }
)
SOURCES = {"dbs1": DBS1_SOURCE, "dbs2": DBS2_SOURCE}

Schema = dict[str, tuple[list[tuple[str, str, bool]], tuple[str, ...]]]
HR_SCHEMA: Schema = {t: (cols, HR_KEYS[t]) for t, cols in HR_TABLES.items()}


# --------------------------------------------------------------------------------------
# Reading and replaying
# --------------------------------------------------------------------------------------


@dataclass
class Txn:
    txid: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    ddl: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    end_file: int | None = None
    files: list[int] = field(default_factory=list)

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.ddl + self.rows + ([self.end] if self.end else [])

    @property
    def tags(self) -> set[Any]:
        return {r["tag"] for r in self.records}

    def outcome(self, commit_records: bool) -> str:
        if not commit_records:
            return "commit"
        if self.end is None:
            return "pending"
        return "commit" if self.end["command_type"] == "COMMIT" else "rollback"


def read_source(directory: Path) -> tuple[list[dict[str, Any]], list[Txn]]:
    """All records of one source (in file order) and its transactions (by first record)."""
    records: list[dict[str, Any]] = []
    txns: dict[str, Txn] = {}
    for n, path in enumerate(sorted(directory.glob("changes_*.jsonl"))):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                records.append(rec)
                txn = txns.setdefault(rec["transaction_id"], Txn(rec["transaction_id"]))
                if not txn.files or txn.files[-1] != n:
                    txn.files.append(n)
                cmd = rec["command_type"]
                if cmd in END_COMMANDS:
                    assert txn.end is None, rec
                    txn.end, txn.end_file = rec, n
                elif cmd == "CREATE TABLE":
                    txn.ddl.append(rec)
                else:
                    txn.rows.append(rec)
    return records, list(txns.values())


def key_of(keys: tuple[str, ...], values: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(values[k] for k in keys)


def apply(schema: Schema, state: dict[str, dict[tuple, dict]], rec: dict[str, Any]) -> None:
    """Apply one row record, asserting that it is consistent with ``state``."""
    table = rec["object_name"]
    cols, keys = schema[table]
    names = [c for c, _, _ in cols]
    rows = state[table]
    cmd = rec["command_type"]
    if cmd == "INSERT":
        new = rec["new_values"]
        assert list(new) == names, rec
        key = key_of(keys, new)
        assert key not in rows, f"insert of existing key: {rec}"
        rows[key] = dict(new)
    elif cmd == "DELETE":
        old = rec["old_values"]
        key = key_of(keys, old)
        assert rows.get(key) == old, f"delete does not match the row: {rec} vs {rows.get(key)}"
        del rows[key]
    else:
        old, new = rec["old_values"], rec["new_values"]
        key = key_of(keys, old)
        assert key in rows, f"update of a missing row: {rec}"
        row = rows[key]
        assert new, rec
        assert set(new) <= set(names)
        # Only changed columns: new_values holds every column only if every one changed
        # (checked value by value below), and never more than 3 non-key columns.
        nonkey_changed = [c for c in new if c not in keys]
        assert len(nonkey_changed) <= 3, rec
        assert set(old) == set(keys) | set(nonkey_changed), rec
        for col, value in old.items():
            assert row[col] == value, f"stale old value {col}: {rec} vs {row}"
        for col, value in new.items():
            assert row[col] != value, f"unchanged column {col} in new_values: {rec}"
        new_row = {**row, **new}
        new_key = key_of(keys, new_row)
        if new_key != key:
            assert new_key not in rows, f"key update onto existing key: {rec}"
            del rows[key]
        rows[new_key] = new_row


def check_value(oracle_type: str, not_null: bool, value: Any, where: str) -> None:
    if value is None:
        assert not not_null, f"NULL in NOT NULL column {where}"
        return
    if oracle_type == "DATE":
        assert isinstance(value, str) and DATE_RE.match(value), where
    elif oracle_type.startswith(("VARCHAR2", "CHAR")):
        assert isinstance(value, str), where
        size = int(oracle_type[oracle_type.index("(") + 1 : -1])
        assert len(value) <= size, where
        if oracle_type.startswith("CHAR"):
            assert len(value) == size, where
    elif "," in oracle_type:  # NUMBER(p,s)
        assert isinstance(value, float), where
        assert round(value, 2) == value, where
    else:  # NUMBER / NUMBER(p)
        assert isinstance(value, int) and not isinstance(value, bool), where


def replay(
    schema: Schema,
    txns: list[Txn],
    commit_records: bool,
    skip: set[str] | None = None,
) -> dict[str, dict[tuple, dict]]:
    """Replay committed transactions in order; also check the others on a scratch copy."""
    state: dict[str, dict[tuple, dict]] = {}
    for txn in txns:
        if skip and txn.txid in skip:
            continue
        for rec in txn.ddl:
            state[rec["object_name"]] = {}
        outcome = txn.outcome(commit_records)
        target = state if outcome == "commit" else copy.deepcopy(state)
        for rec in sorted(txn.rows, key=lambda r: r["position"]):
            apply(schema, target, rec)
    return state


def sorted_rows(rows: dict[tuple, dict]) -> list[dict]:
    return [rows[k] for k in sorted(rows)]


# --------------------------------------------------------------------------------------
# HR sample
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    out = tmp_path_factory.mktemp("hr")
    return out, generate_hr_sample(out)


@pytest.fixture(scope="module")
def sources(hr: tuple[Path, dict[str, int]]) -> dict[str, tuple[list[dict], list[Txn]]]:
    out, _ = hr
    return {d: read_source(out / d) for d in SOURCES}


def all_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    spec = SampleSpec(seed=3, transactions=60, files=3)
    first = generate_hr_sample(tmp_path / "a", spec)
    second = generate_hr_sample(tmp_path / "b", spec)
    assert first == second
    assert all_bytes(tmp_path / "a") == all_bytes(tmp_path / "b")
    generate_hr_sample(tmp_path / "c", SampleSpec(seed=4, transactions=60, files=3))
    assert all_bytes(tmp_path / "a") != all_bytes(tmp_path / "c")


def test_rerun_into_same_directory_replaces_files(tmp_path: Path) -> None:
    generate_hr_sample(tmp_path, SampleSpec(transactions=60, files=5))
    generate_hr_sample(tmp_path, SampleSpec(transactions=60, files=3))
    assert len(list((tmp_path / "dbs1").glob("changes_*.jsonl"))) == 3
    assert len(list((tmp_path / "dbs2").glob("changes_*.jsonl"))) == 3


def test_layout_and_counts(hr: tuple[Path, dict[str, int]], sources: dict) -> None:
    out, counts = hr
    names = [p.name for p in sorted((out / "dbs1").iterdir())]
    assert names == [f"changes_{n:04d}.jsonl" for n in range(1, 5)]
    assert [p.name for p in sorted((out / "dbs2").iterdir())] == names
    dbs1, dbs2 = sources["dbs1"][0], sources["dbs2"][0]
    everything = dbs1 + dbs2
    assert counts["dbs1_records"] == len(dbs1)
    assert counts["dbs2_records"] == len(dbs2)
    assert counts["records"] == len(everything)
    assert counts["transactions"] == len(sources["dbs1"][1]) + len(sources["dbs2"][1])
    by_cmd = defaultdict(int)
    for rec in everything:
        by_cmd[rec["command_type"]] += 1
    assert counts["commits"] == by_cmd["COMMIT"]
    assert counts["rollbacks"] == by_cmd["ROLLBACK"] >= 1
    assert counts["ddl"] == by_cmd["CREATE TABLE"] == len(HR_TABLES) + len(DBS2_TABLES)
    assert counts["pending_transactions"] == 1
    assert counts["tagged_records"] == sum(1 for r in everything if r["tag"] is not None)
    # 6 DDL + 120 row transactions per source
    assert len(sources["dbs1"][1]) == len(HR_TABLES) + 120
    assert len(sources["dbs2"][1]) == len(DBS2_TABLES) + 120


def test_every_record_is_well_formed(sources: dict) -> None:
    for dirname, (records, txns) in sources.items():
        commit_records = dirname == "dbs1"
        outcomes = {t.txid: t.outcome(commit_records) for t in txns}
        for rec in records:
            cmd = rec["command_type"]
            assert rec["source_database"] == SOURCES[dirname]
            assert TXID_RE.match(rec["transaction_id"]), rec
            assert isinstance(rec["scn"], int) and isinstance(rec["position"], int)
            assert rec["tag"] in (None, "11")
            assert outcomes[rec["transaction_id"]] in ("commit", "rollback", "pending")
            # Every record knows where its transaction ends (commit, rollback or the pending end).
            expected = set(ENVELOPE) | COMMITTED
            if cmd == "CREATE TABLE":
                assert set(rec) == DDL_FIELDS, rec
                assert rec["object_type"] == "TABLE" and rec["object_owner"] == "HR"
                assert rec["ddl_text"] == HR_DDL[rec["object_name"]]
                assert rec["current_schema"] == rec["logon_user"] == "HR"
            elif cmd in END_COMMANDS:
                assert commit_records, "COMMIT/ROLLBACK records only in commit-records mode"
                assert set(rec) == expected, rec
                if cmd == "COMMIT":
                    assert rec["scn"] == rec["commit_scn"]
            else:
                assert cmd in ROW_COMMANDS, rec
                values = {"INSERT": {"new_values"}, "UPDATE": {"old_values", "new_values"}}
                extra = values.get(cmd, {"old_values"})
                assert set(rec) == expected | ROW_FIELDS | extra, rec
                assert rec["object_owner"] == "HR" and rec["object_name"].isupper()
                cols = {c: (t, nn) for c, t, nn in HR_TABLES[rec["object_name"]]}
                for part in ("old_values", "new_values"):
                    for col, value in rec.get(part, {}).items():
                        assert col.isupper()
                        check_value(*cols[col], value, f"{rec['object_name']}.{col}: {rec}")
            assert UTC_RE.match(rec["commit_time"]), rec


def test_values_keep_their_types(sources: dict) -> None:
    records = sources["dbs1"][0]
    inserts = [r["new_values"] for r in records if r["command_type"] == "INSERT"]
    postal = [v["POSTAL_CODE"] for v in inserts if "POSTAL_CODE" in v]
    assert any(isinstance(p, str) and p.startswith("0") for p in postal)
    salaries = [v["SALARY"] for v in inserts if v.get("SALARY") is not None]
    assert salaries and all(isinstance(s, float) for s in salaries)
    assert any(s != int(s) for s in salaries)
    assert any(None in v.values() for v in inserts), "INSERTs carry NULL columns as null"
    updates = [r for r in records if r["command_type"] == "UPDATE"]
    assert any(None in r["new_values"].values() for r in updates), "an UPDATE sets NULL"
    assert any(None in r["old_values"].values() for r in updates), "an UPDATE of a NULL"


def test_scn_order(sources: dict) -> None:
    starts = {"dbs1": 1000, "dbs2": 5000}
    for dirname, (records, txns) in sources.items():
        commit_records = dirname == "dbs1"
        assert records[0]["scn"] == starts[dirname]
        last_commit, last_time = 0, ""
        for txn in txns:
            txn.outcome(commit_records)
            positions = [r["position"] for r in txn.records]
            assert sorted(positions) == list(range(1, len(positions) + 1)), txn.txid
            scns = [r["scn"] for r in txn.ddl + txn.rows]
            assert scns == sorted(scns) and len(set(scns)) == len(scns)
            commit_scns = {r["commit_scn"] for r in txn.records}
            times = {r["commit_time"] for r in txn.records}
            assert len(commit_scns) == 1 and len(times) == 1, txn.txid
            (commit_scn,), (commit_time,) = commit_scns, times
            assert commit_scn > max(scns), txn.txid
            assert commit_scn > last_commit and commit_time > last_time, txn.txid
            last_commit, last_time = commit_scn, commit_time


def test_ddl_comes_first(sources: dict) -> None:
    for dirname, (_, txns) in sources.items():
        tables = list(HR_TABLES) if dirname == "dbs1" else list(DBS2_TABLES)
        ddl_txns = txns[: len(tables)]
        assert [t.ddl[0]["object_name"] for t in ddl_txns] == tables
        for txn in ddl_txns:
            assert len(txn.ddl) == 1 and not txn.rows and txn.files == [0]
            if dirname == "dbs1":
                assert txn.end is not None and txn.end["command_type"] == "COMMIT"
                assert txn.end["position"] == 2
        assert all(not t.ddl for t in txns[len(tables) :])


def test_commit_records_mode(sources: dict) -> None:
    _, txns = sources["dbs1"]
    last_file = max(t.files[-1] for t in txns)
    pending = [t for t in txns if t.end is None]
    assert len(pending) == 1
    assert pending[0].rows and set(pending[0].files) == {last_file}
    rollbacks = [t for t in txns if t.end and t.end["command_type"] == "ROLLBACK"]
    assert rollbacks and all(t.rows for t in rollbacks)
    split = [t for t in txns if len(t.files) > 1]
    assert len(split) >= 2
    for txn in split:
        assert len(txn.files) == 2 and txn.files[1] == txn.files[0] + 1
        assert txn.end is not None and txn.end["command_type"] == "COMMIT"
        assert txn.end_file == txn.files[1]  # the COMMIT lands in the next file
    assert any(len(t.rows) > 1 and t.rows[-1]["position"] > 1 for t in split)
    for txn in txns:
        if txn.end is not None:
            assert txn.end["position"] == len(txn.ddl) + len(txn.rows) + 1


def test_whole_file_mode(sources: dict) -> None:
    records, txns = sources["dbs2"]
    assert not any(r["command_type"] in END_COMMANDS for r in records)
    assert all(len(t.files) == 1 for t in txns)
    assert {r["object_name"] for r in records if "object_name" in r} == set(DBS2_TABLES)
    dbs1_records = sources["dbs1"][0]

    def keys(recs: list[dict], col: str) -> set[Any]:
        found = set()
        for rec in recs:
            for part in ("old_values", "new_values"):
                value = rec.get(part, {}).get(col)
                if value is not None and rec["object_name"] in HR_KEYS:
                    if HR_KEYS[rec["object_name"]][0] == col:
                        found.add(value)
        return found

    for col in ("REGION_ID", "COUNTRY_ID", "DEPARTMENT_ID", "EMPLOYEE_ID"):
        own, other = keys(records, col), keys(dbs1_records, col)
        assert own and other and not own & other, col
    assert min(keys(records, "EMPLOYEE_ID")) >= 5000
    assert min(keys(records, "DEPARTMENT_ID")) >= 5000
    assert min(keys(records, "REGION_ID")) >= 50


def test_replay_matches_expected(hr: tuple[Path, dict[str, int]], sources: dict) -> None:
    out, _ = hr
    for dirname, (_, txns) in sources.items():
        state = replay(HR_SCHEMA, txns, dirname == "dbs1")
        expected_dir = out / "expected" / SOURCES[dirname]
        assert sorted(p.stem for p in expected_dir.glob("*.jsonl")) == sorted(state)
        for table, rows in state.items():
            lines = (expected_dir / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()
            assert [json.loads(line) for line in lines] == sorted_rows(rows), table
            assert rows, f"{table} ends up empty"


def test_rolled_back_and_pending_rows_are_not_expected(
    hr: tuple[Path, dict[str, int]], sources: dict
) -> None:
    out, _ = hr
    _, txns = sources["dbs1"]
    expected = (out / "expected" / DBS1_SOURCE / "EMPLOYEES.jsonl").read_text(encoding="utf-8")
    ids = {json.loads(line)["EMPLOYEE_ID"] for line in expected.splitlines()}
    for txn in txns:
        if txn.outcome(True) in ("rollback", "pending"):
            for rec in txn.rows:
                if rec["command_type"] == "INSERT" and rec["object_name"] == "EMPLOYEES":
                    assert rec["new_values"]["EMPLOYEE_ID"] not in ids


def test_key_update_chains(sources: dict) -> None:
    def moves(txn: Txn) -> list[tuple[str, Any, Any]]:
        result = []
        for rec in txn.rows:
            if rec["command_type"] != "UPDATE":
                continue
            keys = HR_KEYS[rec["object_name"]]
            old, new = key_of(keys, rec["old_values"]), rec["new_values"]
            if any(k in new for k in keys):
                result.append((rec["object_name"], old[0], new[keys[0]]))
        return result

    for dirname, (_, txns) in sources.items():
        committed = [t for t in txns if t.outcome(dirname == "dbs1") == "commit"]
        in_one = [
            (a, b)
            for t in committed
            for a in moves(t)
            for b in moves(t)
            if a[0] == b[0] == "EMPLOYEES" and a[2] == b[1]
        ]
        assert in_one, f"{dirname}: no k1->k2->k3 chain inside one transaction"
        consecutive = [
            (a, b)
            for t1, t2 in zip(committed, committed[1:], strict=False)
            for a in moves(t1)
            for b in moves(t2)
            if a[0] == b[0] == "REGIONS" and a[2] == b[1] and t1.files == t2.files
        ]
        assert consecutive, f"{dirname}: no chain over consecutive transactions"


def test_tagged_transactions(hr: tuple[Path, dict[str, int]], sources: dict) -> None:
    out, counts = hr
    listed = json.loads((out / "expected" / "tagged_transactions.json").read_text("utf-8"))
    found = []
    row_records = tagged_rows = 0
    for dirname, (_, txns) in sources.items():
        commit_records = dirname == "dbs1"
        for txn in txns:
            assert len(txn.tags) == 1, f"transaction {txn.txid} is partly tagged"
            row_records += len(txn.rows)
            if txn.tags != {None}:
                assert txn.outcome(commit_records) == "commit" and txn.rows
                found.append([SOURCES[dirname], txn.txid])
                tagged_rows += len(txn.rows)
        # Tagged transactions only touch their own rows: dropping them still replays.
        replay(HR_SCHEMA, txns, commit_records, {t for s, t in found if s == SOURCES[dirname]})
    assert listed == found and counts["tagged_transactions"] == len(found)
    assert 0.02 <= tagged_rows / row_records <= 0.1


@pytest.mark.parametrize(
    "spec",
    [SampleSpec(transactions=10), SampleSpec(files=0), SampleSpec(transactions=30, files=6)],
)
def test_too_small_specs_are_rejected(tmp_path: Path, spec: SampleSpec) -> None:
    with pytest.raises(ValueError):
        generate_hr_sample(tmp_path, spec)


@pytest.mark.parametrize("spec", [SampleSpec(seed=s, transactions=40, files=2) for s in range(4)])
def test_other_shapes_replay(tmp_path: Path, spec: SampleSpec) -> None:
    counts = generate_hr_sample(tmp_path, spec)
    assert counts["pending_transactions"] == 1 and counts["split_transactions"] >= 1
    for dirname in SOURCES:
        _, txns = read_source(tmp_path / dirname)
        state = replay(HR_SCHEMA, txns, dirname == "dbs1")
        for table, rows in state.items():
            path = tmp_path / "expected" / SOURCES[dirname] / f"{table}.jsonl"
            lines = path.read_text(encoding="utf-8").splitlines()
            assert [json.loads(line) for line in lines] == sorted_rows(rows)


# --------------------------------------------------------------------------------------
# Bench
# --------------------------------------------------------------------------------------


def test_bench_is_valid_and_deterministic(tmp_path: Path) -> None:
    counts = generate_bench(tmp_path / "a", records=20_000, tables=3, files=4, seed=5)
    again = generate_bench(tmp_path / "b", records=20_000, tables=3, files=4, seed=5)
    assert counts == again
    assert all_bytes(tmp_path / "a") == all_bytes(tmp_path / "b")

    directory = tmp_path / "a" / "bench"
    assert [p.name for p in sorted(directory.iterdir())] == [
        f"changes_{n:04d}.jsonl" for n in range(1, 5)
    ]
    records, txns = read_source(directory)
    assert counts["records"] == len(records) == 20_000 + 3
    assert counts["ddl"] == 3 and counts["transactions"] == len(txns)
    assert not any(r["command_type"] in END_COMMANDS for r in records)
    assert all(len(t.files) == 1 for t in txns)
    assert all(1 <= len(t.rows) <= 10 for t in txns if not t.ddl)
    assert [r["ddl_text"] for r in records[:3]] == [bench_ddl(f"T0{i}") for i in (1, 2, 3)]
    sizes = [len(p.read_bytes()) for p in sorted(directory.iterdir())]
    assert min(sizes) > 0.6 * max(sizes), "files are spread evenly"

    by_cmd = defaultdict(int)
    for rec in records:
        by_cmd[rec["command_type"]] += 1
    assert 0.55 < by_cmd["INSERT"] / 20_000 < 0.68
    assert 0.25 < by_cmd["UPDATE"] / 20_000 < 0.35
    assert 0.07 < by_cmd["DELETE"] / 20_000 < 0.13

    cols = BENCH_COLUMNS
    schema: Schema = {f"T0{i}": (cols, ("ID",)) for i in (1, 2, 3)}
    last_commit = 0
    for txn in txns:
        commit_scn = txn.records[0]["commit_scn"]
        assert commit_scn > last_commit
        assert all(r["commit_scn"] == commit_scn > r["scn"] for r in txn.records)
        last_commit = commit_scn
    for rec in records:
        if rec["command_type"] in ROW_COMMANDS:
            types = {c: (t, nn) for c, t, nn in cols}
            for part in ("old_values", "new_values"):
                for col, value in rec.get(part, {}).items():
                    check_value(*types[col], value, f"{col}: {rec}")
    state = replay(schema, txns, commit_records=False)
    assert counts["final_rows"] == {t: len(rows) for t, rows in state.items()}


def test_bench_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate_bench(tmp_path, records=10, tables=0)
    with pytest.raises(ValueError):
        generate_bench(tmp_path, records=3, files=4)

"""Deterministic sample change streams (Oracle-style LCRs written as JSON lines).

Two generators live here:

* :func:`generate_hr_sample` writes a small but nasty HR change history from two source
  databases (``DBS1.EXAMPLE.COM`` in "commit records" mode, ``DBS2.EXAMPLE.COM`` in
  "whole file" mode) together with the expected final state of every table, so that a
  replica can be compared row by row.
* :func:`generate_bench` writes a large, generic stream (``BENCH.T01`` ...) for throughput
  measurements.

Both are driven by a seeded :class:`random.Random`, so the same arguments always produce
byte-identical files. Both keep an in-memory model of every table, so each record's old
values are exactly what the earlier records left behind: the stream is a valid history.

Record layout (one JSON object per line; keys that do not apply are omitted):

``source_database``, ``command_type`` (``INSERT``/``UPDATE``/``DELETE``/``CREATE TABLE``/
``COMMIT``/``ROLLBACK``), ``object_owner``, ``object_name``, ``object_type`` (DDL),
``ddl_text``, ``current_schema``, ``logon_user`` (DDL), ``old_values``, ``new_values``
(row records), ``transaction_id``, ``scn``, ``commit_scn``, ``position``, ``commit_time``,
``tag``.

Every record carries ``commit_scn`` and ``commit_time``, as a capture that writes a
transaction's records knows where it ends: for a rolled-back transaction they are the
SCN and time of its ROLLBACK, for the pending one those its COMMIT would have had.
"""

from __future__ import annotations

import json
import random
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH_COLUMNS",
    "BENCH_KEYS",
    "BENCH_OWNER",
    "BENCH_SOURCE",
    "DBS1_SOURCE",
    "DBS2_SOURCE",
    "DBS2_TABLES",
    "HR_CONSTRAINTS",
    "HR_DDL",
    "HR_KEYS",
    "HR_OWNER",
    "HR_TABLES",
    "SampleSpec",
    "bench_ddl",
    "create_table_ddl",
    "generate_bench",
    "generate_hr_sample",
]

# --------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------

HR_OWNER = "HR"
DBS1_SOURCE = "DBS1.EXAMPLE.COM"
DBS2_SOURCE = "DBS2.EXAMPLE.COM"
BENCH_SOURCE = "BENCH.EXAMPLE.COM"
BENCH_OWNER = "BENCH"

#: table -> [(column, oracle_type, not_null)], in column order.
HR_TABLES: dict[str, list[tuple[str, str, bool]]] = {
    "REGIONS": [
        ("REGION_ID", "NUMBER", True),
        ("REGION_NAME", "VARCHAR2(25)", False),
    ],
    "COUNTRIES": [
        ("COUNTRY_ID", "CHAR(2)", True),
        ("COUNTRY_NAME", "VARCHAR2(40)", False),
        ("REGION_ID", "NUMBER", False),
    ],
    "LOCATIONS": [
        ("LOCATION_ID", "NUMBER(4)", True),
        ("STREET_ADDRESS", "VARCHAR2(40)", False),
        ("POSTAL_CODE", "VARCHAR2(12)", False),
        ("CITY", "VARCHAR2(30)", True),
        ("STATE_PROVINCE", "VARCHAR2(25)", False),
        ("COUNTRY_ID", "CHAR(2)", False),
    ],
    "DEPARTMENTS": [
        ("DEPARTMENT_ID", "NUMBER(4)", True),
        ("DEPARTMENT_NAME", "VARCHAR2(30)", True),
        ("MANAGER_ID", "NUMBER(6)", False),
        ("LOCATION_ID", "NUMBER(4)", False),
    ],
    "EMPLOYEES": [
        ("EMPLOYEE_ID", "NUMBER(6)", True),
        ("FIRST_NAME", "VARCHAR2(20)", False),
        ("LAST_NAME", "VARCHAR2(25)", True),
        ("EMAIL", "VARCHAR2(25)", True),
        ("PHONE_NUMBER", "VARCHAR2(20)", False),
        ("HIRE_DATE", "DATE", True),
        ("JOB_ID", "VARCHAR2(10)", True),
        ("SALARY", "NUMBER(8,2)", False),
        ("COMMISSION_PCT", "NUMBER(2,2)", False),
        ("MANAGER_ID", "NUMBER(6)", False),
        ("DEPARTMENT_ID", "NUMBER(4)", False),
    ],
    "JOB_HISTORY": [
        ("EMPLOYEE_ID", "NUMBER(6)", True),
        ("START_DATE", "DATE", True),
        ("END_DATE", "DATE", True),
        ("JOB_ID", "VARCHAR2(10)", True),
        ("DEPARTMENT_ID", "NUMBER(4)", False),
    ],
}

#: table -> primary-key columns.
HR_KEYS: dict[str, tuple[str, ...]] = {
    "REGIONS": ("REGION_ID",),
    "COUNTRIES": ("COUNTRY_ID",),
    "LOCATIONS": ("LOCATION_ID",),
    "DEPARTMENTS": ("DEPARTMENT_ID",),
    "EMPLOYEES": ("EMPLOYEE_ID",),
    "JOB_HISTORY": ("EMPLOYEE_ID", "START_DATE"),
}

#: table -> name of its primary-key constraint (as in Oracle's HR sample schema).
HR_CONSTRAINTS: dict[str, str] = {
    "REGIONS": "reg_id_pk",
    "COUNTRIES": "country_c_id_pk",
    "LOCATIONS": "loc_id_pk",
    "DEPARTMENTS": "dept_id_pk",
    "EMPLOYEES": "emp_emp_id_pk",
    "JOB_HISTORY": "jhist_emp_id_st_date_pk",
}

#: The tables DBS2 replicates.
DBS2_TABLES: tuple[str, ...] = ("REGIONS", "COUNTRIES", "DEPARTMENTS", "EMPLOYEES")

#: Columns of every generic bench table.
BENCH_COLUMNS: list[tuple[str, str, bool]] = [
    ("ID", "NUMBER", True),
    ("NAME", "VARCHAR2(40)", False),
    ("AMOUNT", "NUMBER(12,2)", False),
    ("QTY", "NUMBER(9)", False),
    ("UPDATED", "DATE", False),
    ("NOTE", "VARCHAR2(200)", False),
]
BENCH_KEYS: tuple[str, ...] = ("ID",)


def create_table_ddl(
    owner: str,
    table: str,
    columns: list[tuple[str, str, bool]],
    keys: tuple[str, ...],
    constraint: str,
) -> str:
    """Render a plain Oracle ``CREATE TABLE`` statement.

    Args:
        owner: Schema owner, e.g. ``HR``.
        table: Table name, e.g. ``REGIONS``.
        columns: ``(column, oracle_type, not_null)`` triples in column order.
        keys: Primary-key columns.
        constraint: Name of the primary-key constraint.

    Returns:
        The statement, e.g. ``CREATE TABLE hr.regions (region_id NUMBER NOT NULL,
        region_name VARCHAR2(25), CONSTRAINT reg_id_pk PRIMARY KEY (region_id))``.
    """
    cols = ", ".join(
        f"{name.lower()} {typ}{' NOT NULL' if not_null else ''}" for name, typ, not_null in columns
    )
    key_list = ", ".join(k.lower() for k in keys)
    return (
        f"CREATE TABLE {owner.lower()}.{table.lower()} ({cols}, "
        f"CONSTRAINT {constraint} PRIMARY KEY ({key_list}))"
    )


#: table -> CREATE TABLE statement of the HR schema.
HR_DDL: dict[str, str] = {
    t: create_table_ddl(HR_OWNER, t, cols, HR_KEYS[t], HR_CONSTRAINTS[t])
    for t, cols in HR_TABLES.items()
}


def bench_ddl(table: str) -> str:
    """Return the ``CREATE TABLE`` statement of one generic bench table.

    Args:
        table: Table name, e.g. ``T01``.

    Returns:
        The Oracle DDL text for ``BENCH.<table>``.
    """
    return create_table_ddl(BENCH_OWNER, table, BENCH_COLUMNS, BENCH_KEYS, f"{table.lower()}_pk")


# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------

# fmt: off
_REGION_NAMES = [
    "Europe", "Americas", "Asia", "Middle East and Africa", "Oceania", "Nordics",
    "Caribbean", "Central Asia", "Pacific Islands", "Baltics", "Andean States", "Maghreb",
]
_COUNTRY_NAMES = [
    "Argentina", "Australia", "Belgium", "Brazil", "Canada", "Switzerland", "China",
    "Germany", "Denmark", "Egypt", "France", "Israel", "India", "Italy", "Japan", "Kuwait",
    "Malaysia", "Mexico", "Nigeria", "Netherlands", "Singapore", "United Kingdom",
    "United States of America", "Zambia", "Zimbabwe", "Côte d'Ivoire", "Curaçao",
    "São Tomé and Príncipe", "Norway", "Portugal",
]
_CITIES = [
    ("Roma", None), ("Venice", None), ("Tokyo", "Tokyo Prefecture"), ("Hiroshima", None),
    ("Southlake", "Texas"), ("South San Francisco", "California"),
    ("South Brunswick", "New Jersey"), ("Seattle", "Washington"), ("Toronto", "Ontario"),
    ("Whitehorse", "Yukon"), ("Beijing", None), ("Bombay", "Maharashtra"),
    ("Sydney", "New South Wales"), ("Singapore", None), ("London", None),
    ("Oxford", "Oxford"), ("Stretford", "Manchester"), ("München", "Bavaria"),
    ("Sao Paulo", "Sao Paulo"), ("Geneva", "Geneve"), ("Bern", "BE"),
    ("Utrecht", "Utrecht"), ("Mexico City", "Distrito Federal,"), ("Zürich", "ZH"),
]
_STREETS = [
    "Via Cola di Rie", "Calle della Testa", "Shinjuku-ku", "Kamiya-cho", "Jabberwocky Rd",
    "Interiors Blvd", "Zagora St", "Charade Rd", "Spadina Ave", "Boxwood St",
    "Laogianggen", "Vileparle (E)", "Clementi North", "Arthur St", "Magdalen Centre",
    "Schwanthalerstr.", "Rua Frei Caneca", "Rue des Corps-Saints", "Murtenstrasse",
    "Pieter Breughelstraat", "Mariano Escobedo", "O'Connell St",
]
_DEPARTMENT_NAMES = [
    "Administration", "Marketing", "Purchasing", "Human Resources", "Shipping", "IT",
    "Public Relations", "Sales", "Executive", "Finance", "Accounting", "Treasury",
    "Corporate Tax", "Control And Credit", "Shareholder Services", "Benefits",
    "Manufacturing", "Construction", "Contracting", "Operations", "IT Support", "NOC",
    "IT Helpdesk", "Government Sales", "Retail Sales", "Recruiting", "Payroll",
]
_FIRST_NAMES = [
    "Steven", "Neena", "Lex", "Alexander", "Bruce", "David", "Valli", "Diana", "Nancy",
    "Daniel", "John", "Ismael", "Jose Manuel", "Luis", "Den", "Shelli", "Sigal", "Guy",
    "Karen", "Matthew", "Adam", "Payam", "Shanta", "Kevin", "Julia", "Irene", "James",
    "Jason", "Michael", "Ki", "Hazel", "Renske", "Stephen", "John", "Joshua", "Trenna",
    "Curtis", "Randall", "Peter", "Zoë", "Renée", "Jürgen", "Ana", "Björn",
]
_LAST_NAMES = [
    "King", "Kochhar", "De Haan", "Hunold", "Ernst", "Austin", "Pataballa", "Lorentz",
    "Greenberg", "Faviet", "Chen", "Sciarra", "Urman", "Popp", "Raphaely", "Khoo",
    "Baida", "Tobias", "Himuro", "Colmenares", "Weiss", "Fripp", "Kaufling", "Vollman",
    "Mourgos", "Nayer", "Mikkilineni", "Landry", "Markle", "Bissot", "Atkinson",
    "O'Connell", "Grant", "Whalen", "Hartstein", "Fay", "Mavris", "Baer", "Higgins",
    "Gietz", "Müller", "Ångström", "Núñez",
]
_JOB_IDS = [
    "AD_PRES", "AD_VP", "AD_ASST", "FI_MGR", "FI_ACCOUNT", "AC_MGR", "AC_ACCOUNT",
    "SA_MAN", "SA_REP", "PU_MAN", "PU_CLERK", "ST_MAN", "ST_CLERK", "SH_CLERK", "IT_PROG",
    "MK_MAN", "MK_REP", "HR_REP", "PR_REP",
]
_COMMISSIONS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]
_FALLBACK_LOCATIONS = [1400, 1500, 1700, 1800, 2400, 2500, 2700]
# fmt: on

#: Probability that a nullable column is NULL in an INSERT (default 0.1).
_NULL_ON_INSERT: dict[tuple[str, str], float] = {
    ("REGIONS", "REGION_NAME"): 0.03,
    ("COUNTRIES", "COUNTRY_NAME"): 0.03,
    ("COUNTRIES", "REGION_ID"): 0.08,
    ("LOCATIONS", "STREET_ADDRESS"): 0.1,
    ("LOCATIONS", "POSTAL_CODE"): 0.15,
    ("LOCATIONS", "STATE_PROVINCE"): 0.3,
    ("LOCATIONS", "COUNTRY_ID"): 0.05,
    ("DEPARTMENTS", "MANAGER_ID"): 0.3,
    ("DEPARTMENTS", "LOCATION_ID"): 0.1,
    ("EMPLOYEES", "FIRST_NAME"): 0.05,
    ("EMPLOYEES", "PHONE_NUMBER"): 0.1,
    ("EMPLOYEES", "SALARY"): 0.03,
    ("EMPLOYEES", "COMMISSION_PCT"): 0.65,
    ("EMPLOYEES", "MANAGER_ID"): 0.1,
    ("EMPLOYEES", "DEPARTMENT_ID"): 0.08,
    ("JOB_HISTORY", "DEPARTMENT_ID"): 0.1,
}
_NULL_ON_UPDATE = 0.15
_TAG = "11"
_KEY_UPDATE_TABLES = ("REGIONS", "DEPARTMENTS", "EMPLOYEES")
#: Relative weight of each table when a random operation picks one.
_TABLE_WEIGHTS = {
    "REGIONS": 5,
    "COUNTRIES": 8,
    "LOCATIONS": 10,
    "DEPARTMENTS": 12,
    "EMPLOYEES": 40,
    "JOB_HISTORY": 25,
}
_MIN_TRANSACTIONS = 24
#: Keys per table kept back for the scripted cases.
_RESERVED = {"REGIONS": 8, "COUNTRIES": 8, "LOCATIONS": 8, "DEPARTMENTS": 8, "EMPLOYEES": 16}
_TAGGED_SHARE = 0.04  # of the row transactions; gives ~5% of the row records
_EARLY_SHARE = 0.3

_JSON_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


_ASCII_FOLD = str.maketrans("ÄÅÖÜËÏÉÈÑÚÓÁÍØ", "AAOUEIEENUOAIO")


def _ascii_upper(text: str) -> str:
    """Upper-case ASCII letters of ``text`` (used to derive e-mail names)."""
    return "".join(ch for ch in text.upper().translate(_ASCII_FOLD) if "A" <= ch <= "Z")


def _date(dt: datetime) -> str:
    """Format a DATE value as ``YYYY-MM-DDTHH:MM:SS``."""
    return dt.strftime("%Y-%m-%dT%H:%M:%S")


def _utc(dt: datetime) -> str:
    """Format a commit time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _clean_dir(directory: Path, pattern: str) -> None:
    """Remove stale generated files (matching ``pattern``) left by an earlier run."""
    if directory.is_dir():
        for stale in sorted(directory.glob(pattern)):
            if stale.is_file():
                stale.unlink()


# --------------------------------------------------------------------------------------
# HR sample
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleSpec:
    """Shape of the HR sample.

    Attributes:
        seed: Seed of the random generator; the same spec always gives the same bytes.
        transactions: Row transactions per source database, after the CREATE TABLEs
            (for DBS1 this includes the rolled-back and the pending transaction).
        files: Files per source database.
    """

    seed: int = 7
    transactions: int = 120
    files: int = 4


@dataclass(frozen=True)
class _SourceConfig:
    """Per-source settings: name, mode, tables and disjoint key ranges."""

    name: str
    dirname: str
    tables: tuple[str, ...]
    commit_records: bool
    scn_start: int
    start_time: datetime
    seq_base: int
    region_ids: tuple[int, int]
    department_ids: tuple[int, int]
    location_ids: tuple[int, int]
    employee_ids: tuple[int, int]
    country_codes: tuple[str, ...]
    seed_regions: tuple[tuple[int, str], ...]


def _country_codes(first_letters: str, second_chars: str) -> tuple[str, ...]:
    """All two-character codes from the given first letters and second characters."""
    return tuple(a + b for a in first_letters for b in second_chars)


_DBS1 = _SourceConfig(
    name=DBS1_SOURCE,
    dirname="dbs1",
    tables=tuple(HR_TABLES),
    commit_records=True,
    scn_start=1000,
    start_time=datetime(2024, 3, 1, 10, 0, 0, tzinfo=timezone.utc),
    seq_base=1001,
    region_ids=(5, 50),
    department_ids=(10, 5000),
    location_ids=(1000, 10000),
    employee_ids=(100, 5000),
    country_codes=_country_codes("ABCDEFGHIJKLMNOPQRSTUVWX", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    seed_regions=((1, "Europe"), (2, "Americas"), (3, "Asia"), (4, "Middle East and Africa")),
)
_DBS2 = _SourceConfig(
    name=DBS2_SOURCE,
    dirname="dbs2",
    tables=DBS2_TABLES,
    commit_records=False,
    scn_start=5000,
    start_time=datetime(2024, 3, 1, 11, 0, 0, tzinfo=timezone.utc),
    seq_base=7001,
    region_ids=(54, 1000),
    department_ids=(5000, 10000),
    location_ids=(0, 0),
    employee_ids=(5000, 1000000),
    country_codes=_country_codes("ZY", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    seed_regions=((50, "Oceania"), (51, "Nordics"), (52, "Caribbean"), (53, "Baltics")),
)

_Key = tuple[Any, ...]
_Row = dict[str, Any]


@dataclass
class _Txn:
    """One generated transaction: its records and how it ended."""

    txid: str
    tag: str | None
    outcome: str  # "commit", "rollback" or "pending"
    records: list[dict[str, Any]]
    end: dict[str, Any] | None  # COMMIT / ROLLBACK record (commit-records mode only)
    kind: str


class _HrSource:
    """Generates the history of one source database, keeping a model of its tables."""

    def __init__(self, cfg: _SourceConfig, rng: random.Random) -> None:
        self.cfg = cfg
        self.rng = rng
        self.rows: dict[str, dict[_Key, _Row]] = {t: {} for t in cfg.tables}
        # Which rows belong to tagged transactions: untagged transactions never touch
        # them, so a replica that drops tagged transactions still sees a valid history.
        self.tagged: dict[str, dict[_Key, bool]] = {t: {} for t in cfg.tables}
        codes = list(cfg.country_codes)
        rng.shuffle(codes)
        # Keys a source may use, per table; the last _RESERVED[table] of each are kept
        # for the scripted cases, so that they work even when random inserts used up
        # the rest of the range.
        self.key_space: dict[str, range | list[str]] = {
            "REGIONS": range(*cfg.region_ids),
            "COUNTRIES": codes,
            "LOCATIONS": range(*cfg.location_ids, 10),
            "DEPARTMENTS": range(*cfg.department_ids, 10),
            "EMPLOYEES": range(*cfg.employee_ids),
        }
        self.next_free = dict.fromkeys(self.key_space, 0)
        self.next_reserved = {
            t: max(0, len(space) - _RESERVED[t]) for t, space in self.key_space.items()
        }
        self.scn: int | None = None
        self.clock = cfg.start_time
        self.txn_count = 0
        self.postal_count = 0
        # Current transaction.
        self.ops: list[tuple[str, str, _Row | None, _Row | None, int]] = []
        self.undo: list[tuple[str, _Key, _Row | None, bool | None]] = []
        self.cur_tag: str | None = None
        self.cur_txid = ""
        self.txns: list[_Txn] = []

    # -- clocks --------------------------------------------------------------------

    def tick(self, hi: int = 3) -> int:
        """Advance and return the SCN (the very first SCN is ``scn_start``)."""
        if self.scn is None:
            self.scn = self.cfg.scn_start
        else:
            self.scn += self.rng.randint(1, hi)
        return self.scn

    def next_txid(self) -> str:
        """Return a new transaction id ``usn.slot.sequence``."""
        seq = self.cfg.seq_base + self.txn_count
        self.txn_count += 1
        return f"{self.rng.randint(1, 9)}.{self.rng.randint(0, 31)}.{seq}"

    # -- transactions ----------------------------------------------------------------

    def begin(self, tag: str | None = None) -> None:
        """Start a row transaction."""
        self.ops = []
        self.undo = []
        self.cur_tag = tag
        self.cur_txid = self.next_txid()

    def _row_record(
        self,
        op: tuple[str, str, _Row | None, _Row | None, int],
        position: int,
        commit: tuple[int, str] | None,
    ) -> dict[str, Any]:
        cmd, table, old, new, scn = op
        rec: dict[str, Any] = {
            "source_database": self.cfg.name,
            "command_type": cmd,
            "object_owner": HR_OWNER,
            "object_name": table,
        }
        if old is not None:
            rec["old_values"] = old
        if new is not None:
            rec["new_values"] = new
        rec["transaction_id"] = self.cur_txid
        rec["scn"] = scn
        if commit is not None:
            rec["commit_scn"] = commit[0]
        rec["position"] = position
        if commit is not None:
            rec["commit_time"] = commit[1]
        rec["tag"] = self.cur_tag
        return rec

    def _finish(self, outcome: str, kind: str) -> _Txn:
        end: dict[str, Any] | None = None
        if outcome == "commit":
            commit_scn = self.tick(4)
            self.clock += timedelta(seconds=self.rng.randint(1, 45))
            commit_time = _utc(self.clock)
            records = [
                self._row_record(op, i + 1, (commit_scn, commit_time))
                for i, op in enumerate(self.ops)
            ]
            if self.cfg.commit_records:
                end = {
                    "source_database": self.cfg.name,
                    "command_type": "COMMIT",
                    "transaction_id": self.cur_txid,
                    "scn": commit_scn,
                    "commit_scn": commit_scn,
                    "position": len(records) + 1,
                    "commit_time": commit_time,
                    "tag": self.cur_tag,
                }
        else:
            end_scn = self.tick(4)
            self.clock += timedelta(seconds=self.rng.randint(1, 45))
            end_time = _utc(self.clock)
            records = [
                self._row_record(op, i + 1, (end_scn, end_time)) for i, op in enumerate(self.ops)
            ]
            self._revert()
            if outcome == "rollback":
                end = {
                    "source_database": self.cfg.name,
                    "command_type": "ROLLBACK",
                    "transaction_id": self.cur_txid,
                    "scn": end_scn,
                    "commit_scn": end_scn,
                    "position": len(records) + 1,
                    "commit_time": end_time,
                    "tag": self.cur_tag,
                }
        txn = _Txn(self.cur_txid, self.cur_tag, outcome, records, end, kind)
        self.txns.append(txn)
        self.ops = []
        self.undo = []
        return txn

    def commit(self, kind: str = "random") -> _Txn:
        """Commit the current transaction (its changes stay in the model)."""
        return self._finish("commit", kind)

    def rollback(self, kind: str = "rollback") -> _Txn:
        """Roll the current transaction back (its changes leave the model)."""
        return self._finish("rollback", kind)

    def leave_pending(self, kind: str = "pending") -> _Txn:
        """End the stream of the current transaction without COMMIT or ROLLBACK."""
        return self._finish("pending", kind)

    def _revert(self) -> None:
        for table, key, row, tagged in reversed(self.undo):
            if row is None:
                del self.rows[table][key]
                del self.tagged[table][key]
            else:
                self.rows[table][key] = row
                assert tagged is not None
                self.tagged[table][key] = tagged

    def ddl(self, table: str) -> _Txn:
        """Emit the CREATE TABLE record of ``table`` as its own committed transaction."""
        txid = self.next_txid()
        scn = self.tick()
        commit_scn = self.tick(4)
        self.clock += timedelta(seconds=self.rng.randint(1, 5))
        commit_time = _utc(self.clock)
        rec: dict[str, Any] = {
            "source_database": self.cfg.name,
            "command_type": "CREATE TABLE",
            "object_owner": HR_OWNER,
            "object_name": table,
            "object_type": "TABLE",
            "ddl_text": HR_DDL[table],
            "current_schema": HR_OWNER,
            "logon_user": HR_OWNER,
            "transaction_id": txid,
            "scn": scn,
            "commit_scn": commit_scn,
            "position": 1,
            "commit_time": commit_time,
            "tag": None,
        }
        end = None
        if self.cfg.commit_records:
            end = {
                "source_database": self.cfg.name,
                "command_type": "COMMIT",
                "transaction_id": txid,
                "scn": commit_scn,
                "commit_scn": commit_scn,
                "position": 2,
                "commit_time": commit_time,
                "tag": None,
            }
        txn = _Txn(txid, None, "commit", [rec], end, "ddl")
        self.txns.append(txn)
        return txn

    # -- row operations (validated against the model) ----------------------------------

    def key_of(self, table: str, row: _Row) -> _Key:
        """Primary key of ``row``."""
        return tuple(row[k] for k in HR_KEYS[table])

    def insert(self, table: str, row: _Row) -> _Key:
        """Insert a full row; the key must not exist."""
        key = self.key_of(table, row)
        if key in self.rows[table]:
            raise AssertionError(f"insert of existing key {table}{key}")
        full = {col: row.get(col) for col, _, _ in HR_TABLES[table]}
        self.rows[table][key] = full
        self.tagged[table][key] = self.cur_tag is not None
        self.undo.append((table, key, None, None))
        self.ops.append(("INSERT", table, None, dict(full), self.tick()))
        return key

    def update(self, table: str, key: _Key, changes: _Row) -> _Key:
        """Update ``changes`` (column -> new value, key columns allowed) of row ``key``."""
        row = self.rows[table][key]
        keys = HR_KEYS[table]
        if not changes:
            raise AssertionError("empty update")
        for col, value in changes.items():
            if row[col] == value:
                raise AssertionError(f"unchanged column {table}.{col}")
        order = [c for c, _, _ in HR_TABLES[table]]
        old = {k: row[k] for k in keys}
        for col in order:
            if col in changes and col not in keys:
                old[col] = row[col]
        new = {col: changes[col] for col in order if col in changes}
        new_row = {**row, **changes}
        new_key = self.key_of(table, new_row)
        tagged = self.tagged[table][key]
        if new_key != key:
            if new_key in self.rows[table]:
                raise AssertionError(f"key update onto existing key {table}{new_key}")
            del self.rows[table][key]
            del self.tagged[table][key]
            self.undo.append((table, key, row, tagged))
            self.undo.append((table, new_key, None, None))
        else:
            self.undo.append((table, key, row, tagged))
        self.rows[table][new_key] = new_row
        self.tagged[table][new_key] = tagged
        self.ops.append(("UPDATE", table, old, new, self.tick()))
        return new_key

    def delete(self, table: str, key: _Key) -> None:
        """Delete row ``key`` (which must exist)."""
        row = self.rows[table].pop(key)
        tagged = self.tagged[table].pop(key)
        self.undo.append((table, key, row, tagged))
        self.ops.append(("DELETE", table, dict(row), None, self.tick()))

    # -- value generation ----------------------------------------------------------

    def pick(self, table: str, tagged: bool | None = None) -> _Key | None:
        """A random existing key of ``table`` (of the tagged or untagged pool)."""
        if table not in self.rows:
            return None
        if tagged is None:
            candidates = list(self.rows[table])
        else:
            candidates = [k for k, t in self.tagged[table].items() if t is tagged]
        return self.rng.choice(candidates) if candidates else None

    def ref(self, table: str) -> Any:
        """A value for a column that refers to ``table`` (any existing key or None)."""
        if table not in self.rows:
            if table == "LOCATIONS":
                return self.rng.choice(_FALLBACK_LOCATIONS)
            return None
        key = self.pick(table)
        return None if key is None else key[0]

    def fresh_key(self, table: str, scripted: bool = False) -> Any:
        """A key value never used before in this source.

        Random operations get None once their part of the range is used up; scripted
        cases draw from a reserved part at the end of the range.
        """
        space = self.key_space[table]
        if scripted:
            index = self.next_reserved[table]
            if index >= len(space):
                raise RuntimeError(f"reserved keys of {table} exhausted")
            self.next_reserved[table] = index + 1
        else:
            index = self.next_free[table]
            if index >= len(space) - _RESERVED[table]:
                return None
            self.next_free[table] = index + 1
        return space[index]

    def random_date(self, start: int = 2001, end: int = 2023) -> str:
        """A midnight DATE value between the given years."""
        base = datetime(start, 1, 1)
        days = (datetime(end, 12, 31) - base).days
        return _date(base + timedelta(days=self.rng.randint(0, days)))

    def postal_code(self) -> str:
        """A postal code; always a string, often with leading zeros."""
        rng = self.rng
        self.postal_count += 1
        if self.postal_count == 1:
            return f"00{rng.randint(100, 999)}"
        style = rng.random()
        if style < 0.3:
            return f"0{rng.randint(0, 9999):04d}"
        if style < 0.6:
            return f"{rng.randint(10000, 99999)}"
        if style < 0.75:
            return f"{rng.randint(1, 999):04d}"
        if style < 0.9:
            return f"{rng.randint(100, 999)}-{rng.randint(0, 9999):04d}"
        return rng.choice(["OX9 9ZB", "09629850293", "M5V 2L7", "YSW 9T2", "01307-002"])

    def value(self, table: str, col: str, row: _Row) -> Any:
        """A plausible non-NULL value of ``table.col`` (``row`` gives context)."""
        rng = self.rng
        if col == "REGION_NAME":
            return rng.choice(_REGION_NAMES)
        if col == "COUNTRY_NAME":
            return rng.choice(_COUNTRY_NAMES)
        if col == "REGION_ID":
            return self.ref("REGIONS")
        if col == "COUNTRY_ID":
            return self.ref("COUNTRIES")
        if col == "STREET_ADDRESS":
            return f"{rng.randint(1, 9999)} {rng.choice(_STREETS)}"
        if col == "POSTAL_CODE":
            return self.postal_code()
        if col == "CITY":
            return rng.choice(_CITIES)[0]
        if col == "STATE_PROVINCE":
            return rng.choice(_CITIES)[1] or rng.choice(["Texas", "Ontario", "Bavaria"])
        if col == "DEPARTMENT_NAME":
            return rng.choice(_DEPARTMENT_NAMES)
        if col == "MANAGER_ID":
            return self.ref("EMPLOYEES")
        if col == "LOCATION_ID":
            return self.ref("LOCATIONS")
        if col == "DEPARTMENT_ID":
            return self.ref("DEPARTMENTS")
        if col == "FIRST_NAME":
            return rng.choice(_FIRST_NAMES)
        if col == "LAST_NAME":
            return rng.choice(_LAST_NAMES)
        if col == "EMAIL":
            first = row.get("FIRST_NAME") or ""
            last = row.get("LAST_NAME") or rng.choice(_LAST_NAMES)
            email = _ascii_upper(first[:1] + last)[:20]
            if rng.random() < 0.5 or "EMAIL" in row:
                email = f"{email}{rng.randint(1, 99)}"
            return email
        if col == "PHONE_NUMBER":
            if rng.random() < 0.8:
                return f"{rng.choice([515, 590, 650, 603])}.{rng.randint(100, 999)}." + (
                    f"{rng.randint(0, 9999):04d}"
                )
            return f"011.44.{rng.randint(1000, 1999)}.{rng.randint(0, 999999):06d}"
        if col == "HIRE_DATE":
            return self.random_date()
        if col == "JOB_ID":
            return rng.choice(_JOB_IDS)
        if col == "SALARY":
            return rng.randrange(210000, 2400000, 5) / 100
        if col == "COMMISSION_PCT":
            return rng.choice(_COMMISSIONS)
        if col == "START_DATE":
            return self.random_date(2001, 2020)
        if col == "END_DATE":
            start = datetime.strptime(row["START_DATE"], "%Y-%m-%dT%H:%M:%S")
            return _date(start + timedelta(days=rng.randint(30, 2000)))
        raise KeyError(f"{table}.{col}")

    def new_row(self, table: str, key: Any = None, scripted: bool = False) -> _Row | None:
        """A full new row, or None if no key is available.

        Args:
            table: The table.
            key: Key value to use (single-column keys); a fresh key if None.
            scripted: Take the fresh key from the reserved part of the range.
        """
        rng = self.rng
        row: _Row = {}
        if table == "JOB_HISTORY":
            emp = self.pick("EMPLOYEES", self.cur_tag is not None)
            if emp is None:
                emp = self.pick("EMPLOYEES")
            if emp is None:
                return None
            row["EMPLOYEE_ID"] = emp[0]
            for _ in range(20):
                row["START_DATE"] = self.value(table, "START_DATE", row)
                if (emp[0], row["START_DATE"]) not in self.rows[table]:
                    break
            else:
                return None
        else:
            if key is None:
                key = self.fresh_key(table, scripted)
            if key is None:
                return None
            row[HR_KEYS[table][0]] = key
        keys = HR_KEYS[table]
        for col, _, not_null in HR_TABLES[table]:
            if col in keys:
                continue
            p_null = 0.0 if not_null else _NULL_ON_INSERT.get((table, col), 0.1)
            row[col] = None if rng.random() < p_null else self.value(table, col, row)
        return row

    def changed_value(self, table: str, col: str, row: _Row) -> Any:
        """A value for ``table.col`` that differs from ``row[col]``."""
        not_null = next(nn for c, _, nn in HR_TABLES[table] if c == col)
        old = row[col]
        if not not_null and old is not None and self.rng.random() < _NULL_ON_UPDATE:
            return None
        for _ in range(25):
            value = self.value(table, col, row)
            if value is not None and value != old:
                return value
        return _MISSING

    def random_changes(self, table: str, row: _Row, count: int) -> _Row:
        """1..``count`` changed non-key columns for ``row``."""
        keys = HR_KEYS[table]
        cols = [c for c, _, _ in HR_TABLES[table] if c not in keys]
        self.rng.shuffle(cols)
        changes: _Row = {}
        for col in cols:
            if len(changes) >= count:
                break
            value = self.changed_value(table, col, row)
            if value is not _MISSING:
                changes[col] = value
        return changes

    # -- random operations -----------------------------------------------------------

    def op_insert(self, table: str) -> bool:
        if table not in self.rows:
            return False
        row = self.new_row(table)
        if row is None:
            return False
        self.insert(table, row)
        return True

    def op_update(self, table: str) -> bool:
        key = self.pick(table, self.cur_tag is not None)
        if key is None:
            return False
        row = self.rows[table][key]
        changes = self.random_changes(table, row, self.rng.choice([1, 1, 2, 2, 3]))
        if not changes:
            return False
        self.update(table, key, changes)
        return True

    def op_key_update(self, table: str) -> bool:
        if table not in _KEY_UPDATE_TABLES:
            return False
        key = self.pick(table, self.cur_tag is not None)
        if key is None:
            return False
        new_key = self.fresh_key(table)
        if new_key is None:
            return False
        row = self.rows[table][key]
        changes: _Row = {HR_KEYS[table][0]: new_key}
        if self.rng.random() < 0.5:
            changes.update(self.random_changes(table, row, 1))
        self.update(table, key, changes)
        return True

    def op_delete(self, table: str) -> bool:
        key = self.pick(table, self.cur_tag is not None)
        if key is None:
            return False
        self.delete(table, key)
        return True

    def random_op(self, early: bool) -> None:
        """One random row operation (falls back to other operations/tables if needed)."""
        rng = self.rng
        tables = list(self.cfg.tables)
        table = rng.choices(tables, [_TABLE_WEIGHTS[t] for t in tables])[0]
        r = rng.random()
        if early:
            kind = "insert" if r < 0.85 else ("update" if r < 0.97 else "delete")
        elif r < 0.36:
            kind = "insert"
        elif r < 0.80:
            kind = "update"
        elif r < 0.84:
            kind = "key_update"
        else:
            kind = "delete"
        ops: dict[str, Callable[[str], bool]] = {
            "insert": self.op_insert,
            "update": self.op_update,
            "key_update": self.op_key_update,
            "delete": self.op_delete,
        }
        order = [kind] + [k for k in ("insert", "update", "delete") if k != kind]
        for candidate_kind in order:
            if ops[candidate_kind](table):
                return
        for other in tables:
            for candidate_kind in ("insert", "update"):
                if ops[candidate_kind](other):
                    return
        raise RuntimeError("no operation possible")  # pragma: no cover

    def random_txn(self, early: bool, tagged: bool, min_ops: int = 1) -> _Txn:
        """A committed transaction of 1-6 random operations."""
        self.begin(_TAG if tagged else None)
        for _ in range(self.rng.randint(min_ops, 6)):
            self.random_op(early)
        return self.commit("tagged" if tagged else "random")

    # -- scripted transactions -------------------------------------------------------

    def ensure(self, table: str) -> _Key:
        """An existing untagged key of ``table``, inserting a row first if there is none."""
        key = self.pick(table, False)
        if key is None:
            row = self.new_row(table, scripted=True)
            if row is None:
                raise RuntimeError(f"cannot create a row in {table}")
            key = self.insert(table, row)
        return key

    def emp_chain(self) -> tuple[Any, Any, Any]:
        """EMPLOYEES k1 -> k2 -> k3 inside one transaction."""
        self.begin()
        k1 = self.ensure("EMPLOYEES")
        k2 = self.fresh_key("EMPLOYEES", scripted=True)
        k3 = self.fresh_key("EMPLOYEES", scripted=True)
        self.update("EMPLOYEES", k1, {"EMPLOYEE_ID": k2})
        row = self.rows["EMPLOYEES"][(k2,)]
        changes: _Row = {"EMPLOYEE_ID": k3}
        changes.update(self.random_changes("EMPLOYEES", row, 1))
        self.update("EMPLOYEES", (k2,), changes)
        self.op_update("JOB_HISTORY")
        self.commit("emp_chain")
        return k1[0], k2, k3

    def key_reuse(self, old_key: Any) -> None:
        """Insert a new row under a key that an earlier key update vacated."""
        self.begin()
        row = self.new_row("EMPLOYEES", key=old_key)
        assert row is not None
        self.insert("EMPLOYEES", row)
        self.op_insert("JOB_HISTORY")
        self.commit("key_reuse")

    def regions_chain(self, step: int, state: dict[str, Any]) -> None:
        """REGIONS r1 -> r2 (step 0) and r2 -> r3 (step 1) in consecutive transactions."""
        self.begin()
        if step == 0:
            r1 = self.ensure("REGIONS")
            r2 = self.fresh_key("REGIONS", scripted=True)
            self.update("REGIONS", r1, {"REGION_ID": r2})
            state["region"] = r2
            self.op_update("COUNTRIES")
        else:
            r2 = state["region"]
            r3 = self.fresh_key("REGIONS", scripted=True)
            row = self.rows["REGIONS"][(r2,)]
            changes: _Row = {"REGION_ID": r3}
            changes.update(self.random_changes("REGIONS", row, 1))
            self.update("REGIONS", (r2,), changes)
        self.commit(f"regions_chain_{step}")

    def lifecycle(self) -> None:
        """Insert, update and delete one row inside one transaction; insert + update another."""
        self.begin()
        dept = self.new_row("DEPARTMENTS", scripted=True)
        assert dept is not None
        key = self.insert("DEPARTMENTS", dept)
        self.update("DEPARTMENTS", key, self.random_changes("DEPARTMENTS", dept, 2))
        self.delete("DEPARTMENTS", key)
        emp = self.new_row("EMPLOYEES", scripted=True)
        assert emp is not None
        emp["COMMISSION_PCT"] = None
        ekey = self.insert("EMPLOYEES", emp)
        self.update("EMPLOYEES", ekey, {"COMMISSION_PCT": 0.15})
        self.update("EMPLOYEES", ekey, {"COMMISSION_PCT": None})
        self.commit("lifecycle")

    def reinsert(self) -> None:
        """Delete a row and insert the same key again inside one transaction."""
        self.begin()
        table = "LOCATIONS" if "LOCATIONS" in self.rows else "COUNTRIES"
        key = self.ensure(table)
        old = self.rows[table][key]
        self.delete(table, key)
        for _ in range(20):
            row = self.new_row(table, key=key[0])
            assert row is not None
            if row != old:
                break
        self.insert(table, row)
        self.op_update("EMPLOYEES")
        self.commit("reinsert")

    def rollback_txn(self, variant: int) -> None:
        """A transaction that ends with ROLLBACK (never applied)."""
        self.begin()
        if variant == 0:
            emp = self.new_row("EMPLOYEES", scripted=True)
            assert emp is not None
            ekey = self.insert("EMPLOYEES", emp)
            self.update("EMPLOYEES", ekey, self.random_changes("EMPLOYEES", emp, 2))
            self.op_update("EMPLOYEES")
            self.delete("REGIONS", self.ensure("REGIONS"))
        else:
            self.op_update("DEPARTMENTS")
            self.op_key_update("EMPLOYEES")
            self.delete("JOB_HISTORY", self.ensure("JOB_HISTORY"))
        if not self.ops:  # pragma: no cover - defensive
            self.op_insert("REGIONS")
        self.rollback()

    def pending_txn(self) -> None:
        """A transaction whose COMMIT never arrives: touches only rows it inserts itself."""
        self.begin()
        first = self.new_row("EMPLOYEES", scripted=True)
        second = self.new_row("EMPLOYEES", scripted=True)
        assert first is not None and second is not None
        k1 = self.insert("EMPLOYEES", first)
        self.insert("EMPLOYEES", second)
        self.update("EMPLOYEES", k1, self.random_changes("EMPLOYEES", first, 2))
        if "JOB_HISTORY" in self.rows:
            self.insert(
                "JOB_HISTORY",
                {
                    "EMPLOYEE_ID": k1[0],
                    "START_DATE": "2019-01-01T00:00:00",
                    "END_DATE": "2023-06-30T00:00:00",
                    "JOB_ID": "IT_PROG",
                    "DEPARTMENT_ID": None,
                },
            )
        self.leave_pending()


class _Missing:
    """Sentinel: no changed value could be produced."""


_MISSING: Any = _Missing()


def _plan(
    transactions: int, files: int, commit_records: bool, rng: random.Random
) -> tuple[list[str], list[tuple[int, int]]]:
    """Decide what each row transaction of a source is, and the file groups."""
    plan = ["random"] * transactions
    groups = [(g * transactions // files, (g + 1) * transactions // files) for g in range(files)]

    def group_of(index: int) -> int:
        return next(g for g, (lo, hi) in enumerate(groups) if lo <= index < hi)

    if commit_records:
        for b, (_, hi) in enumerate(groups[:-1]):
            plan[hi - 1] = "split_commit" if b % 2 == 0 else "split_rows"

    def place(block: list[str], target: int, group: int | None = None) -> None:
        for offset in range(transactions):
            for start in (target + offset, target - offset):
                idx = list(range(start, start + len(block)))
                if idx[0] < 1 or idx[-1] >= transactions:  # 0 is the seed transaction
                    continue
                if any(plan[i] != "random" for i in idx):
                    continue
                if len({group_of(i) for i in idx}) != 1:
                    continue
                if group is not None and group_of(idx[0]) != group:
                    continue
                for i, kind in zip(idx, block, strict=True):
                    plan[i] = kind
                return
        raise ValueError("not enough transactions to place the scripted cases")

    blocks: list[tuple[list[str], float]] = [
        (["regions_chain_0", "regions_chain_1"], 0.40),
        (["emp_chain", "key_reuse"], 0.45),
        (["lifecycle"], 0.50),
        (["reinsert"], 0.55),
    ]
    if commit_records:
        blocks += [(["rollback_0"], 0.35), (["rollback_1"], 0.65)]
    for block, frac in blocks:
        place(block, int(transactions * frac))
    if commit_records:
        lo, hi = groups[-1]
        place(["pending"], (lo + hi) // 2, group=files - 1)
    candidates = [i for i in range(transactions // 10, transactions) if plan[i] == "random"]
    n_tagged = min(len(candidates), max(1, round(transactions * _TAGGED_SHARE)))
    for i in rng.sample(candidates, n_tagged):
        plan[i] = "tagged"
    return plan, groups


def _generate_source(
    cfg: _SourceConfig, spec: SampleSpec, rng: random.Random
) -> tuple[list[list[dict[str, Any]]], _HrSource, list[_Txn]]:
    """Generate one source; return its records per file, the model and the row txns."""
    src = _HrSource(cfg, rng)
    ddl_txns = [src.ddl(t) for t in cfg.tables]
    plan, groups = _plan(spec.transactions, spec.files, cfg.commit_records, rng)
    early_limit = int(spec.transactions * _EARLY_SHARE)
    chain_state: dict[str, Any] = {}
    reuse_key: Any = None
    row_txns: list[_Txn] = []
    for index, kind in enumerate(plan):
        start = len(src.txns)
        early = index < early_limit
        if index == 0:
            # Seed rows, so that the early transactions have something to refer to.
            src.begin()
            for rid, name in cfg.seed_regions:
                src.insert("REGIONS", {"REGION_ID": rid, "REGION_NAME": name})
            src.commit("seed")
        elif kind in ("random", "split_commit"):
            src.random_txn(early, tagged=False)
        elif kind == "split_rows":
            src.random_txn(early, tagged=False, min_ops=2)
        elif kind == "tagged":
            src.random_txn(early, tagged=True)
        elif kind.startswith("regions_chain_"):
            src.regions_chain(int(kind[-1]), chain_state)
        elif kind == "emp_chain":
            reuse_key = src.emp_chain()[0]
        elif kind == "key_reuse":
            src.key_reuse(reuse_key)
        elif kind == "lifecycle":
            src.lifecycle()
        elif kind == "reinsert":
            src.reinsert()
        elif kind.startswith("rollback_"):
            src.rollback_txn(int(kind[-1]))
        elif kind == "pending":
            src.pending_txn()
        else:  # pragma: no cover
            raise AssertionError(kind)
        (txn,) = src.txns[start:]  # every branch emits exactly one transaction
        row_txns.append(txn)

    files: list[list[dict[str, Any]]] = [[] for _ in range(spec.files)]
    for txn in ddl_txns:
        files[0].extend(txn.records)
        if txn.end is not None:
            files[0].append(txn.end)
    for g, (lo, hi) in enumerate(groups):
        for index in range(lo, hi):
            txn = row_txns[index]
            records = list(txn.records)
            if txn.end is not None:
                records.append(txn.end)
            kind = plan[index]
            if kind.startswith("split_") and g + 1 < spec.files and txn.end is not None:
                cut = len(txn.records) if kind == "split_commit" else len(txn.records) // 2
                files[g].extend(records[:cut])
                files[g + 1].extend(records[cut:])
            else:
                files[g].extend(records)
    return files, src, row_txns


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as compact JSON lines (UTF-8, ``\\n`` line ends)."""
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write("".join(_JSON_DUMPS(row) + "\n" for row in rows))


def generate_hr_sample(out_dir: str | Path, spec: SampleSpec = SampleSpec()) -> dict[str, int]:
    """Write the HR sample change stream (and its expected final state) into ``out_dir``.

    Layout:

    * ``dbs1/changes_NNNN.jsonl``: ``DBS1.EXAMPLE.COM``, "commit records" mode: every
      transaction ends with a ``COMMIT`` (or ``ROLLBACK``) record; some transactions
      span two consecutive files; one transaction never ends (pending, last file).
    * ``dbs2/changes_NNNN.jsonl``: ``DBS2.EXAMPLE.COM``, "whole file" mode: no
      COMMIT records, every transaction lies inside one file; only REGIONS,
      COUNTRIES, DEPARTMENTS and EMPLOYEES, with key ranges disjoint from DBS1.
    * ``expected/<SOURCE>/<TABLE>.jsonl``: final state of each table (committed
      transactions only, tagged ones included), one row per line, ordered by key.
    * ``expected/tagged_transactions.json``: ``[[source, transaction_id], ...]`` of the
      tagged transactions.

    Stale ``changes_*.jsonl`` and expected files from earlier runs are removed first.

    Args:
        out_dir: Directory to write into (created if missing).
        spec: Seed, number of row transactions per source and files per source.

    Returns:
        Counts: ``records`` (all lines written to change files), ``dbs1_records``,
        ``dbs2_records``, ``transactions`` (distinct transactions, DDL included),
        ``commits`` (COMMIT records), ``rollbacks`` (ROLLBACK records),
        ``pending_transactions``, ``ddl`` (CREATE TABLE records), ``tagged_records``
        (lines with a non-null tag, their COMMIT records included),
        ``tagged_transactions`` and ``split_transactions``.

    Raises:
        ValueError: If ``spec`` is too small to hold the scripted cases.
    """
    if spec.files < 1:
        raise ValueError("files must be >= 1")
    if spec.transactions < max(_MIN_TRANSACTIONS, 6 * spec.files):
        raise ValueError(
            f"transactions must be >= max({_MIN_TRANSACTIONS}, 6 * files), got {spec.transactions}"
        )
    out = Path(out_dir)
    counts = {
        "records": 0,
        "dbs1_records": 0,
        "dbs2_records": 0,
        "transactions": 0,
        "commits": 0,
        "rollbacks": 0,
        "pending_transactions": 0,
        "ddl": 0,
        "tagged_records": 0,
        "tagged_transactions": 0,
        "split_transactions": 0,
    }
    tagged_txns: list[list[str]] = []
    expected_dir = out / "expected"
    expected_dir.mkdir(parents=True, exist_ok=True)
    for number, cfg in enumerate((_DBS1, _DBS2)):
        rng = random.Random(spec.seed * 1_000_003 + number)
        files, src, _ = _generate_source(cfg, spec, rng)
        directory = out / cfg.dirname
        directory.mkdir(parents=True, exist_ok=True)
        _clean_dir(directory, "changes_*.jsonl")
        first_file: dict[str, int] = {}
        last_file: dict[str, int] = {}
        for n, records in enumerate(files):
            write_jsonl(directory / f"changes_{n + 1:04d}.jsonl", records)
            for rec in records:
                first_file.setdefault(rec["transaction_id"], n)
                last_file[rec["transaction_id"]] = n
        lines = sum(len(records) for records in files)
        counts["records"] += lines
        counts[f"{cfg.dirname}_records"] = lines
        counts["transactions"] += len(src.txns)
        counts["split_transactions"] += sum(1 for t in first_file if first_file[t] != last_file[t])
        for records in files:
            for rec in records:
                cmd = rec["command_type"]
                if cmd == "COMMIT":
                    counts["commits"] += 1
                elif cmd == "ROLLBACK":
                    counts["rollbacks"] += 1
                elif cmd == "CREATE TABLE":
                    counts["ddl"] += 1
                if rec.get("tag") is not None:
                    counts["tagged_records"] += 1
        for txn in src.txns:
            if txn.outcome == "pending":
                counts["pending_transactions"] += 1
            if txn.tag is not None:
                tagged_txns.append([cfg.name, txn.txid])
        counts["tagged_transactions"] = len(tagged_txns)
        source_dir = expected_dir / cfg.name
        source_dir.mkdir(parents=True, exist_ok=True)
        _clean_dir(source_dir, "*.jsonl")
        for table in cfg.tables:
            rows = [src.rows[table][k] for k in sorted(src.rows[table])]
            write_jsonl(source_dir / f"{table}.jsonl", rows)
    pairs = ",\n".join(" " + _JSON_DUMPS(pair) for pair in tagged_txns)
    (expected_dir / "tagged_transactions.json").write_text(
        f"[\n{pairs}\n]\n" if pairs else "[]\n", encoding="utf-8"
    )
    return counts


# --------------------------------------------------------------------------------------
# Bench
# --------------------------------------------------------------------------------------

# fmt: off
_BENCH_WORDS = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
]
# fmt: on


def _bench_vocab(rng: random.Random) -> tuple[list[str], list[str], list[str]]:
    """Pre-encoded JSON fragments for NAME, NOTE and UPDATED values."""
    names = []
    for i in range(240):
        name = f"{rng.choice(_BENCH_WORDS).title()} {rng.choice(_BENCH_WORDS)} {i:03d}"
        names.append(_JSON_DUMPS(name[:40]))
    names.append(_JSON_DUMPS('Quote "q" & back\\slash'))
    names.append(_JSON_DUMPS("Zürich Ünïcödé"))
    notes = []
    for _ in range(200):
        words = [rng.choice(_BENCH_WORDS) for _ in range(rng.randint(1, 30))]
        notes.append(_JSON_DUMPS(" ".join(words)[:200]))
    notes.append(_JSON_DUMPS("line\nbreak\ttab"))
    base = datetime(2020, 1, 1)
    dates = [
        _JSON_DUMPS(_date(base + timedelta(seconds=rng.randint(0, 4 * 365 * 86400))))
        for _ in range(4096)
    ]
    return names, notes, dates


def generate_bench(
    out_dir: str | Path,
    records: int = 1_000_000,
    tables: int = 10,
    files: int = 20,
    seed: int = 11,
) -> dict[str, Any]:
    """Write a large generic change stream for throughput tests.

    Source ``BENCH.EXAMPLE.COM`` in "whole file" mode (no COMMIT records, every
    transaction inside one file). Tables ``BENCH.T01`` .. ``BENCH.T{tables:02d}``, each
    ``(ID NUMBER PK, NAME VARCHAR2(40), AMOUNT NUMBER(12,2), QTY NUMBER(9), UPDATED
    DATE, NOTE VARCHAR2(200))``. File 1 starts with the CREATE TABLE records; then
    ``records`` row records (~60% inserts, 30% partial updates of 1-3 columns, 10%
    deletes) in transactions of 1-10 records, spread evenly over
    ``out_dir/bench/changes_NNNN.jsonl``. Old values always match the history.

    Args:
        out_dir: Directory to write into; files go to ``out_dir/bench``.
        records: Number of row records (the DDL records come on top).
        tables: Number of tables (1-99).
        files: Number of files.
        seed: Seed of the random generator.

    Returns:
        Counts: ``records`` (all lines), ``row_records``, ``ddl``, ``transactions``
        (DDL included), ``inserts``, ``updates``, ``deletes``, ``files`` and
        ``final_rows`` (table name such as ``T01`` -> rows at the end).

    Raises:
        ValueError: On out-of-range arguments.
    """
    if not 1 <= tables <= 99:
        raise ValueError("tables must be within 1..99")
    if files < 1 or records < files:
        raise ValueError("need files >= 1 and records >= files")
    rng = random.Random(seed)
    rand = rng.random
    randrange = rng.randrange
    names, notes, dates = _bench_vocab(rng)
    n_names, n_notes, n_dates = len(names), len(notes), len(dates)

    table_names = [f"T{i + 1:02d}" for i in range(tables)]
    directory = Path(out_dir) / "bench"
    directory.mkdir(parents=True, exist_ok=True)
    _clean_dir(directory, "changes_*.jsonl")

    # Column stores per table; index = ID. Null: -1.
    st_name = [array("h", [-1]) for _ in range(tables)]
    st_amount = [array("q", [-1]) for _ in range(tables)]
    st_qty = [array("q", [-1]) for _ in range(tables)]
    st_upd = [array("h", [-1]) for _ in range(tables)]
    st_note = [array("h", [-1]) for _ in range(tables)]
    st_pos = [array("q", [-1]) for _ in range(tables)]  # index in alive, or -1
    st_alive = [array("q") for _ in range(tables)]

    src = f'{{"source_database":"{BENCH_SOURCE}","command_type":"'
    prefixes = {
        (cmd, t): f'{src}{cmd}","object_owner":"{BENCH_OWNER}","object_name":"{name}",'
        for cmd in ("INSERT", "UPDATE", "DELETE")
        for t, name in enumerate(table_names)
    }

    def enc_name(i: int) -> str:
        return "null" if i < 0 else names[i]

    def enc_note(i: int) -> str:
        return "null" if i < 0 else notes[i]

    def enc_upd(i: int) -> str:
        return "null" if i < 0 else dates[i]

    def enc_amount(c: int) -> str:
        return "null" if c < 0 else repr(c / 100)

    def enc_qty(q: int) -> str:
        return "null" if q < 0 else str(q)

    def full_row(t: int, rid: int) -> str:
        return (
            f'{{"ID":{rid},"NAME":{enc_name(st_name[t][rid])},'
            f'"AMOUNT":{enc_amount(st_amount[t][rid])},"QTY":{enc_qty(st_qty[t][rid])},'
            f'"UPDATED":{enc_upd(st_upd[t][rid])},"NOTE":{enc_note(st_note[t][rid])}}}'
        )

    column_sets = [(c,) for c in range(5)]
    column_sets2 = [(a, b) for a in range(5) for b in range(a + 1, 5)]
    column_sets3 = [(a, b, c) for a in range(5) for b in range(a + 1, 5) for c in range(b + 1, 5)]
    col_names = ("NAME", "AMOUNT", "QTY", "UPDATED", "NOTE")

    scn = 100_000
    clock = int(datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp())
    txn_no = 0
    counts: dict[str, Any] = {"inserts": 0, "updates": 0, "deletes": 0}
    transactions = 0
    lines_total = 0
    current_file = -1
    fh = None

    def open_file(n: int) -> Any:
        return (directory / f"changes_{n + 1:04d}.jsonl").open(
            "w", encoding="utf-8", newline="\n", buffering=1 << 20
        )

    def next_txid() -> str:
        return f"{1 + txn_no % 9}.{txn_no % 32}.{10_000 + txn_no}"

    try:
        current_file = 0
        fh = open_file(0)
        for name in table_names:
            ddl_scn = scn = scn + 1
            commit_scn = scn = scn + 1
            clock += 1
            rec = {
                "source_database": BENCH_SOURCE,
                "command_type": "CREATE TABLE",
                "object_owner": BENCH_OWNER,
                "object_name": name,
                "object_type": "TABLE",
                "ddl_text": bench_ddl(name),
                "current_schema": BENCH_OWNER,
                "logon_user": BENCH_OWNER,
                "transaction_id": next_txid(),
                "scn": ddl_scn,
                "commit_scn": commit_scn,
                "position": 1,
                "commit_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock)),
                "tag": None,
            }
            txn_no += 1
            transactions += 1
            fh.write(_JSON_DUMPS(rec) + "\n")
            lines_total += 1
        ddl_count = len(table_names)

        emitted = 0
        while emitted < records:
            target_file = min(files - 1, emitted * files // records)
            if target_file != current_file:
                fh.close()
                current_file = target_file
                fh = open_file(current_file)
            size = min(1 + int(rand() * 10), records - emitted)
            ops: list[tuple[str, str, int]] = []  # (prefix, values, scn)
            for _ in range(size):
                t = int(rand() * tables)
                alive = st_alive[t]
                r = rand()
                if r < 0.6 or not alive:
                    # INSERT
                    rid = len(st_pos[t])
                    nm = -1 if rand() < 0.02 else randrange(n_names)
                    am = -1 if rand() < 0.05 else randrange(1_000_000_000)
                    qt = -1 if rand() < 0.05 else randrange(1_000_000)
                    up = -1 if rand() < 0.02 else randrange(n_dates)
                    nt = -1 if rand() < 0.3 else randrange(n_notes)
                    st_name[t].append(nm)
                    st_amount[t].append(am)
                    st_qty[t].append(qt)
                    st_upd[t].append(up)
                    st_note[t].append(nt)
                    st_pos[t].append(len(alive))
                    alive.append(rid)
                    values = f'"new_values":{full_row(t, rid)}'
                    cmd = "INSERT"
                    counts["inserts"] += 1
                elif r < 0.9:
                    # UPDATE of 1-3 columns
                    rid = alive[int(rand() * len(alive))]
                    k = rand()
                    if k < 0.4:
                        cols = column_sets[int(rand() * 5)]
                    elif k < 0.75:
                        cols = column_sets2[int(rand() * 10)]
                    else:
                        cols = column_sets3[int(rand() * 10)]
                    old_parts = [f'"ID":{rid}']
                    new_parts = []
                    for c in cols:
                        if c == 0:
                            store, n_vocab, enc = st_name[t], n_names, enc_name
                        elif c == 1:
                            store, n_vocab, enc = st_amount[t], 1_000_000_000, enc_amount
                        elif c == 2:
                            store, n_vocab, enc = st_qty[t], 1_000_000, enc_qty
                        elif c == 3:
                            store, n_vocab, enc = st_upd[t], n_dates, enc_upd
                        else:
                            store, n_vocab, enc = st_note[t], n_notes, enc_note
                        old = store[rid]
                        if old >= 0 and rand() < 0.05:
                            new = -1
                        elif old < 0:
                            new = randrange(n_vocab)
                        else:
                            new = (old + 1 + randrange(n_vocab - 1)) % n_vocab
                        store[rid] = new
                        col = col_names[c]
                        old_parts.append(f'"{col}":{enc(old)}')
                        new_parts.append(f'"{col}":{enc(new)}')
                    values = (
                        f'"old_values":{{{",".join(old_parts)}}},'
                        f'"new_values":{{{",".join(new_parts)}}}'
                    )
                    cmd = "UPDATE"
                    counts["updates"] += 1
                else:
                    # DELETE
                    pos = st_pos[t]
                    i = int(rand() * len(alive))
                    rid = alive[i]
                    values = f'"old_values":{full_row(t, rid)}'
                    last = alive.pop()
                    if last != rid:
                        alive[i] = last
                        pos[last] = i
                    pos[rid] = -1
                    cmd = "DELETE"
                    counts["deletes"] += 1
                scn += 1
                ops.append((prefixes[(cmd, t)], values, scn))
            scn += 1
            clock += 1
            txid = next_txid()
            txn_no += 1
            transactions += 1
            tail_mid = f',"commit_scn":{scn},"position":'
            tail_end = (
                f',"commit_time":"{time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock))}"'
                ',"tag":null}\n'
            )
            fh.write(
                "".join(
                    f'{prefix}{values},"transaction_id":"{txid}","scn":{op_scn}'
                    f"{tail_mid}{p}{tail_end}"
                    for p, (prefix, values, op_scn) in enumerate(ops, 1)
                )
            )
            emitted += size
            lines_total += size
    finally:
        if fh is not None:
            fh.close()
    # Files that received no transaction (only possible for tiny inputs) still exist.
    for n in range(files):
        path = directory / f"changes_{n + 1:04d}.jsonl"
        if not path.exists():
            path.touch()

    counts.update(
        {
            "records": lines_total,
            "row_records": records,
            "ddl": ddl_count,
            "transactions": transactions,
            "files": files,
            "final_rows": {name: len(st_alive[t]) for t, name in enumerate(table_names)},
        }
    )
    return counts

"""Small builders of native change records for scenario tests."""

from __future__ import annotations

SRC = "DBS1.EXAMPLE.COM"
REGIONS_DDL = (
    "CREATE TABLE hr.regions (region_id NUMBER(4) NOT NULL, region_name VARCHAR2(25), "
    "note VARCHAR2(10), CONSTRAINT reg_pk PRIMARY KEY (region_id))"
)


class Txn:
    """Builds the records of one transaction; ``commit()`` adds the COMMIT record."""

    def __init__(self, txid: str, commit_scn: int, tag: str | None = None, source: str = SRC):
        self.txid, self.commit_scn, self.tag, self.source = txid, commit_scn, tag, source
        self.records: list[dict] = []

    def _base(self, cmd: str) -> dict:
        n = len(self.records) + 1
        return {
            "source_database": self.source,
            "command_type": cmd,
            "transaction_id": self.txid,
            "scn": self.commit_scn - 10 + n,
            "commit_scn": self.commit_scn,
            "position": n,
            "commit_time": f"2024-01-01T00:{self.commit_scn // 60 % 60:02d}:{self.commit_scn % 60:02d}Z",
            "tag": self.tag,
        }

    def ddl(self, text: str, owner: str = "HR", name: str = "REGIONS") -> Txn:
        r = self._base("CREATE TABLE")
        r.update(object_owner=owner, object_name=name, object_type="TABLE", ddl_text=text)
        self.records.append(r)
        return self

    def row(self, cmd: str, table: str = "REGIONS", old: dict | None = None, new: dict | None = None, owner: str = "HR") -> Txn:
        r = self._base(cmd)
        r.update(object_owner=owner, object_name=table)
        if old is not None:
            r["old_values"] = old
        if new is not None:
            r["new_values"] = new
        self.records.append(r)
        return self

    def commit(self) -> list[dict]:
        r = self._base("COMMIT")
        r["scn"] = self.commit_scn
        return [*self.records, r]

    def rollback(self) -> list[dict]:
        r = self._base("ROLLBACK")
        r["scn"] = self.commit_scn
        return [*self.records, r]

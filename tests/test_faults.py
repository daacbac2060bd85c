"""The fault suite: the whole pipeline as a subprocess, killed with SIGKILL at every named
fault point (``lakestreams.faults``) and at random moments, then run again; gold must equal
an uninterrupted run's, bronze must hold each record once, and the audit must balance.
Two runs started at once: one runs, the other stops cleanly and changes nothing.

Only runs that are killed need a process of their own. The uninterrupted runs and the runs
that finish a killed one are ``lakestreams run`` called in this process (the command's own
``main``, the test session's warm JVM): what a killed run left is on disk, whichever process
reads it next. A cold JVM's first run takes two minutes on two cores; a warm one, 40 s.

Run alone with ``make faults`` (every point, the random series too); ``make test`` kills at
three points (silver, gold, DDL), and ``make test-all`` adds the random series. ``LAKESTREAMS_FAULT_SEED``
repeats the random kill times (the seed is printed on failure; where a run is at a
given second still depends on the machine's load).
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from records import REGIONS_DDL, Txn

from bronze.ingest import BRONZE_TABLE, QUARANTINE_TABLE
from lakestreams.cli import main as cli_main
from lakestreams.faults import POINTS
from lakestreams.runlock import BUSY_EXIT

REPO = Path(__file__).resolve().parents[1]
COUNTRIES_DDL = ("CREATE TABLE hr.countries (country_id CHAR(2) NOT NULL, country_name VARCHAR2(40), "
                 "region_id NUMBER(4), CONSTRAINT ctry_pk PRIMARY KEY (country_id))")

#: Named points killed in the first landing round (create, load, change, an error, a
#: quarantined line), in pipeline order: each run goes on from where the last one died.
#: ``LAKESTREAMS_FAULT_POINTS=all`` (``make faults``) kills at every point; the default,
#: which ``make test`` runs, at three: a change table, a gold MERGE and a DDL's ALTER (each
#: kill starts a JVM whose first run takes two minutes on two cores: CI has a time limit).
ALL_ROUND_ONE = ["bronze.records", "bronze.offsets", "silver.ledger", "silver.transactions", "silver.dictionary",
                 "silver.changes", "silver.done", "plan.opened", "plan.target", "plan.written", "gold.merge",
                 "gold.progress", "gold.applied"]
CI_ROUND_ONE = ["silver.changes", "gold.merge"]
#: Killed in the second round, which adds a column to one table and renames one of the
#: other's: its ALTERs of the change tables and of the gold tables, and the second MERGE.
ALL_ROUND_TWO = ["ddl.alter", "ddl.alter#2", "ddl.alter#2", "gold.merge#2"]
CI_ROUND_TWO = ["ddl.alter#2"]
EVERY_POINT = os.environ.get("LAKESTREAMS_FAULT_POINTS", "") == "all"
ROUND_ONE, ROUND_TWO = (ALL_ROUND_ONE, ALL_ROUND_TWO) if EVERY_POINT else (CI_ROUND_ONE, CI_ROUND_TWO)


def _ddl(txid: str, scn: int, text: str, name: str, verb: str) -> list[dict]:
    t = Txn(txid, scn).ddl(text, name=name)
    t.records[0]["command_type"] = verb
    return t.commit()


def _row(txid: str, scn: int, cmd: str, table: str, old: dict | None = None, new: dict | None = None) -> list[dict]:
    return Txn(txid, scn).row(cmd, table, old=old, new=new).commit()


def round_one() -> list:
    lines: list = [*_ddl("1.1", 100, REGIONS_DDL, "REGIONS", "CREATE TABLE"),
                   *_ddl("1.2", 110, COUNTRIES_DDL, "COUNTRIES", "CREATE TABLE")]
    for i in range(1, 6):
        lines += _row(f"2.{i}", 200 + i * 10, "INSERT", "REGIONS", new={"REGION_ID": i, "REGION_NAME": f"r{i}"})
    for i, code in enumerate(("AR", "BE", "CA", "DE", "EG", "FR"), start=1):
        lines += _row(f"3.{i}", 300 + i * 10, "INSERT", "COUNTRIES",
                      new={"COUNTRY_ID": code, "COUNTRY_NAME": f"country {code}", "REGION_ID": i % 5 + 1})
    lines += _row("4.1", 400, "UPDATE", "REGIONS", old={"REGION_ID": 2}, new={"REGION_NAME": "two"})
    lines += _row("4.2", 410, "DELETE", "COUNTRIES", old={"COUNTRY_ID": "EG", "COUNTRY_NAME": "country EG"})
    lines += Txn("4.3", 420).row("INSERT", "REGIONS", new={"REGION_ID": 9, "REGION_NAME": "gone"}).rollback()
    # A key that is not a number: the error queue gets this transaction.
    lines += _row("4.4", 430, "INSERT", "REGIONS", new={"REGION_ID": "x4", "REGION_NAME": "nowhere"})
    lines.append('{"source_database": "DBS1.EXAMPLE.COM", "command_type": "INSERT", "scn": ')  # quarantined
    return lines


def round_two() -> list:
    lines: list = [*_ddl("5.1", 500, "ALTER TABLE hr.regions ADD (code VARCHAR2(5))", "REGIONS", "ALTER TABLE"),
                   *_ddl("5.2", 510, "ALTER TABLE hr.countries RENAME COLUMN country_name TO name", "COUNTRIES",
                         "ALTER TABLE")]
    lines += _row("6.1", 600, "UPDATE", "REGIONS", old={"REGION_ID": 1}, new={"CODE": "R1"})
    lines += _row("6.2", 610, "INSERT", "REGIONS", new={"REGION_ID": 6, "REGION_NAME": "r6", "CODE": "R6"})
    lines += _row("6.3", 620, "UPDATE", "COUNTRIES", old={"COUNTRY_ID": "AR"}, new={"NAME": "Argentina"})
    lines += _row("6.4", 630, "INSERT", "COUNTRIES", new={"COUNTRY_ID": "GH", "NAME": "Ghana", "REGION_ID": 6})
    lines += _row("6.5", 640, "DELETE", "REGIONS", old={"REGION_ID": 5})
    return lines


class Site:
    """One channel in a folder of its own, run by ``lakestreams run``: in a subprocess (to
    be killed) or here. Each site has its own schema prefix (the test session's catalog
    holds every site it ran); the channel's name, and so its run lock's, is ``faults``.
    The warehouse is the test session's: a run here creates its schemas there, and a
    subprocess's must be the same folders."""

    def __init__(self, root: Path, schema: str, warehouse: Path):
        self.root = root
        self.schema = schema
        self.warehouse = warehouse
        self.landing = root / "landing" / "src"
        self.landing.mkdir(parents=True)
        self.channel = root / "channel.yml"
        self.channel.write_text(yaml.safe_dump({
            "name": "faults",
            "storage": {"warehouse": str(warehouse), "state": str(root / "state"), "schema": schema},
            "landing": [{"name": "src", "path": str(self.landing), "transactions": "commit_records"}],
        }))
        self.log: list[str] = []

    def land(self, name: str, lines: list) -> None:
        (self.landing / name).write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))

    def start(self, kill_at: str | None = None) -> subprocess.Popen:
        env = {**os.environ, "LAKESTREAMS_SHUFFLE_PARTITIONS": "2", "LAKESTREAMS_DRIVER_MEMORY": "1g",
               "PYTHONUNBUFFERED": "1"}
        env.pop("LAKESTREAMS_KILL_AT", None)
        if kill_at:
            env["LAKESTREAMS_KILL_AT"] = kill_at
        # A session of its own: the run leads its process group (the JVM is in it).
        return subprocess.Popen([sys.executable, "-m", "lakestreams.cli", "run", "--channel", str(self.channel)],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def finish(self, proc: subprocess.Popen, what: str, timeout: float = 900) -> tuple[int, str]:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
        finally:
            _kill_group(proc)
        self.log.append(f"--- {what}: exit {proc.returncode}\n{out[-2000:]}\n{err[-4000:]}")
        return proc.returncode, err

    def run(self, kill_at: str | None = None) -> tuple[int, str]:
        return self.finish(self.start(kill_at), f"run kill_at={kill_at}")

    def run_here(self) -> int:
        """``lakestreams run`` in this process: its exit code (3 if the audit does not balance)."""
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli_main(["run", "--channel", str(self.channel)])
        self.log.append(f"--- run here: exit {rc}\n{out.getvalue()[-2000:]}\n{err.getvalue()[-4000:]}")
        return rc

    def table_path(self, layer: str, name: str) -> Path:
        return self.warehouse / f"{self.schema}_{layer}.db" / name

    def tables(self, layer: str) -> list[str]:
        folder = self.warehouse / f"{self.schema}_{layer}.db"
        return sorted(p.name for p in folder.iterdir() if (p / "_delta_log").is_dir())

    def versions(self) -> dict[str, int]:
        """Commits per table, counted from the Delta logs (no Spark needed)."""
        return {f"{layer}.{t}": len(list((self.table_path(layer, t) / "_delta_log").glob("*.json")))
                for layer in ("bronze", "silver", "gold") for t in self.tables(layer)}


def warehouse(spark) -> Path:
    """The test session's warehouse folder."""
    return Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))


def _kill_group(proc: subprocess.Popen) -> None:
    """Nothing of a run outlives it: its JVM goes with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


#: Gold columns that hold the time a row was written: they differ between any two runs.
WRITE_TIMES = {"applied_at", "at"}


def gold_state(spark, site: Site, same_plans: bool = True) -> dict[str, list]:
    """Every gold table's rows (small: a few dozen), sorted, without write times; bronze
    and quarantine as counts. Without ``same_plans`` (the records were planned in other
    batches) the plan logs are compared as what they add up to: per target and source
    the applied SCN and records, per source the last watermarks; and the DDL step's log is
    left out: rounds planned together make a table with its final columns, so no ALTER
    is logged, where rounds planned apart alter it and the added column comes last (each
    table's columns are compared instead, by name and type)."""
    from pyspark.sql import functions as F

    out = {}
    for t in site.tables("gold"):
        if not same_plans and t == "ddl_applied":
            continue
        df = spark.read.format("delta").load(str(site.table_path("gold", t)))
        if not same_plans:
            if t == "apply_progress":
                df = df.groupBy("target", "source_database").agg(F.max("applied_scn"), F.sum("records"))
            elif t == "apply_watermarks":
                df = df.orderBy(F.desc("plan_id")).limit(1).drop("plan_id")
            df = df.drop("plan_id")
        cols = sorted(c for c in df.columns if c not in WRITE_TIMES)
        columns = [f"{f.name} {f.dataType.simpleString()}" for f in df.schema.fields]
        out[f"{t}.columns"] = columns if same_plans else sorted(columns)
        out[t] = sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
                        for r in df.select(*cols).collect())  # test data: a few dozen rows
    for t in (BRONZE_TABLE, QUARANTINE_TABLE):
        out[f"bronze.{t}"] = spark.read.format("delta").load(str(site.table_path("bronze", t))).count()
    return out


def _explain(site: Site) -> str:
    return "\n".join(site.log[-3:])


def baseline_series(site: Site) -> dict:
    """An uninterrupted run per landing round, then one more run (which must write nothing),
    all in this process."""
    site.land("changes_0001.jsonl", round_one())
    for lines in (None, round_two()):
        if lines:
            site.land("changes_0002.jsonl", lines)
        assert site.run_here() == 0, _explain(site)
    before = site.versions()
    assert site.run_here() == 0, _explain(site)
    return {"before": before, "after": site.versions()}


def random_series(site: Site, seed: int) -> tuple[int, str, int, str]:
    """Both rounds landed at once; killed at three random moments; then two runs at once."""
    rng = random.Random(seed)
    site.land("changes_0001.jsonl", round_one())
    site.land("changes_0002.jsonl", round_two())
    for moment in sorted(rng.uniform(5, 60) for _ in range(3)):
        site.finish(site.start(), f"killed after {moment:.1f} s (seed {seed})", timeout=moment)
    first, second = site.start(), site.start()
    return (*site.finish(first, "first of two"), *site.finish(second, "second of two"))


@pytest.fixture(scope="module")
def series(request, spark, tmp_path_factory):
    """The baseline, run here; (when its test was chosen) the random series, subprocesses
    only, in the background from the start. Runs in this process are never concurrent
    (dbt keeps per-process state), so the baseline finishes before the tests begin."""
    seed = int(os.environ.get("LAKESTREAMS_FAULT_SEED", random.randrange(1 << 30)))
    chosen = {item.name for item in request.session.items}
    with ThreadPoolExecutor(max_workers=1) as pool:
        out: dict = {"seed": seed}
        if test_killed_at_random_moments_then_two_runs_at_once.__name__ in chosen:
            rand = Site(tmp_path_factory.mktemp("random"), "faults_random", warehouse(spark))
            out["random"] = (rand, pool.submit(random_series, rand, seed))
        base = Site(tmp_path_factory.mktemp("baseline"), "faults_baseline", warehouse(spark))
        out["baseline"] = (base, baseline_series(base))
        yield out


def test_the_series_cover_every_named_point_and_ci_three_stages():
    assert set(ALL_ROUND_ONE) | {p.partition("#")[0] for p in ALL_ROUND_TWO} == set(POINTS) - {"delta.write"}
    ci = set(CI_ROUND_ONE) | {p.partition("#")[0] for p in CI_ROUND_TWO}
    assert {p.split(".")[0] for p in ci} == {"silver", "ddl", "gold"}


def test_killed_at_every_named_point_then_run_again(spark, series, tmp_path):
    site = Site(tmp_path, "faults_killed", warehouse(spark))
    site.land("changes_0001.jsonl", round_one())
    for round_points, lines in ((ROUND_ONE, None), (ROUND_TWO, round_two())):
        if lines:
            site.land("changes_0002.jsonl", lines)
        for point in round_points:
            rc, err = site.run(kill_at=point)
            # Killed where asked: the run reached the point (else the point tests nothing).
            assert rc == -signal.SIGKILL and f"killed at fault point {point}" in err, _explain(site)
        assert site.run_here() == 0, _explain(site)  # the audit balances (exit 3 otherwise)
    base, _ = series["baseline"]
    assert gold_state(spark, site) == gold_state(spark, base)


def test_a_run_again_after_success_writes_no_table_version(series):
    site, versions = series["baseline"]
    assert versions["after"] == versions["before"], _explain(site)


@pytest.mark.extended  # the core kills at named points; test_runlock refuses a second run
def test_killed_at_random_moments_then_two_runs_at_once(spark, series):
    site, done = series["random"]
    seed = series["seed"]
    rc1, err1, rc2, err2 = done.result()
    assert sorted([rc1, rc2]) == [0, BUSY_EXIT], f"seed {seed}\n{_explain(site)}"
    refused = err1 if rc1 == BUSY_EXIT else err2
    assert "channel faults is being run by pid" in refused and "changed nothing" in refused
    base, _ = series["baseline"]
    assert gold_state(spark, site, same_plans=False) == gold_state(spark, base, same_plans=False), f"seed {seed}"

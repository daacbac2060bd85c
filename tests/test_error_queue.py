"""Error queue: failed transactions wait whole; after the cause is fixed they are
re-executed once, in SCN order, on what gold holds; or deleted."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from chispa import assert_df_equality
from conftest import REPO, make_channel, table_versions, write_lines
from records import REGIONS_DDL, SRC, Txn

from lakestreams import rebuild as rebuild_module
from lakestreams.api import Streams
from lakestreams.audit import run_audit
from lakestreams.cli import main
from lakestreams.config import TableSpec
from lakestreams.errors import ConfigError, ReplicationError
from lakestreams.explore import run_notebook
from lakestreams.pipeline import run_pipeline
from lakestreams.status import channel_status

SCHEMA = "REGION_ID INT, REGION_NAME STRING, NOTE STRING"
COUNTRIES_DDL = "CREATE TABLE hr.countries (country_id CHAR(2) NOT NULL, CONSTRAINT c_pk PRIMARY KEY (country_id))"


def _queue(spark, ch) -> dict[str, str]:
    view = spark.table(ch.storage.table("gold", "apply_error").replace("`", ""))
    return {r["source_transaction_id"]: r["error_message"] for r in view.collect()}


def test_error_queue_re_execution_and_delete(spark, tmp_path, monkeypatch, capsys):
    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "n"}).commit(),
        # The row was changed at the destination: the old name does not match (ORA-26786).
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "X"}, new={"REGION_NAME": "B"}).commit(),
        # COUNTRIES is not known yet: the whole transaction waits, its REGIONS insert too.
        *Txn("t4", 400).row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "C", "NOTE": None})
        .row("INSERT", table="COUNTRIES", new={"COUNTRY_ID": "NL"}).commit(),
        *Txn("t5", 500).row("UPDATE", old={"REGION_ID": 1, "NOTE": "n"}, new={"NOTE": "m"}).commit(),
        # A key that is taken (ORA-00001) by its second record: deleted from the queue
        # below, never applied (its first insert neither).
        *Txn("t6", 600).row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "fine", "NOTE": None})
        .row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "dup", "NOTE": None}).commit(),
    ])
    # Silver first: what is complete waits for gold (t4's REGIONS insert too); its COUNTRIES
    # record failed in silver, on no table.
    run_pipeline(spark, ch, ("bronze", "silver"))
    status = channel_status(spark, ch)
    assert [(t.target, t.waiting, t.open, t.errors, t.applied_scn) for t in status.tables] == [
        ("hr__regions", 6, 0, 0, None)]
    assert (status.failed_in_silver, status.error_queue, status.last_plan) == (1, 0, None)
    assert status.pending == run_audit(spark, ch).buckets["pending"] == 7
    run_pipeline(spark, ch)
    status = channel_status(spark, ch)
    assert [(t.target, t.waiting, t.errors, t.applied_scn) for t in status.tables] == [("hr__regions", 0, 3, 500)]
    assert status.tables[0].last_ddl == "SCN 100 CREATE TABLE → ADD"
    assert (status.pending, status.error_queue, status.errors_elsewhere) == (0, 3, 0)
    gold = f"{ch.storage.schema_name('gold')}.hr__regions"
    assert_df_equality(spark.table(gold).select("REGION_ID", "REGION_NAME", "NOTE"),
                       spark.createDataFrame([(1, "A", "m")], SCHEMA), ignore_row_order=True)
    queue = _queue(spark, ch)
    assert set(queue) == {"t3", "t4", "t6"}
    assert "ORA-26786" in queue["t3"] and "COUNTRIES is not in the source dictionary" in queue["t4"]
    # Each entry names the record that failed, whether silver or the apply found it.
    failing = {r["source_transaction_id"]: json.loads(r["failing_record"])
               for r in spark.table(ch.storage.table("gold", "apply_error").replace("`", "")).collect()}
    assert (failing["t4"]["object_name"], failing["t4"]["position"]) == ("COUNTRIES", 2)
    assert (failing["t6"]["new_values"]["REGION_NAME"], failing["t6"]["position"]) == ("dup", 2)
    assert failing["t3"]["command_type"] == "UPDATE"

    s = Streams(ch)
    with pytest.raises(ConfigError, match="transaction t9 is not in the error queue"):
        s.execute_error(spark, "t9")
    # Re-executed with its cause still there (from the error-queue notebook, as an operator
    # would: its widgets), t3 fails again, with the error it meets now.
    path = tmp_path / "channel.yml"
    path.write_text(yaml.safe_dump({
        "name": "t", "storage": {"warehouse": str(ch.storage.warehouse), "state": str(ch.storage.state),
                                 "schema": ch.storage.schema},
        "landing": [{"name": "src", "path": str(ch.landing[0].path)}],
    }))
    notebook = REPO / "notebooks" / "error_queue.py"
    run = run_notebook(notebook, spark, {"channel": str(path), "action": "execute", "transaction": "t3"},
                       tmp_path / "nb")
    assert "re-executed 1 transaction(s)" in run.printed and "3 transaction(s) in the error queue" in run.printed
    assert set(_queue(spark, ch)) == {"t3", "t4", "t6"}
    assert "ORA-26786" in _queue(spark, ch)["t3"]
    # The fix: an update conflict handler. t3 applies on the row as gold holds it (NOTE m
    # from t5 stays) and leaves the queue; executing it again finds nothing to do.
    s.set_update_conflict_handler("hr.regions", "OVERWRITE", "REGION_NAME", ["REGION_NAME"])
    s.execute_error(spark, "t3", SRC)
    assert_df_equality(spark.table(gold).select("REGION_ID", "REGION_NAME", "NOTE"),
                       spark.createDataFrame([(1, "B", "m")], SCHEMA), ignore_row_order=True)
    assert set(_queue(spark, ch)) == {"t4", "t6"}
    conflicts = spark.table(ch.storage.table("gold", "apply_conflicts").replace("`", "")).collect()
    assert [(r["transaction_id"], r["method"], r["resolution"]) for r in conflicts] == [("t3", "OVERWRITE", "applied")]
    with pytest.raises(ConfigError, match="transaction t3 is not in the error queue"):
        s.execute_error(spark, "t3")

    # Deleted from the error-queue notebook.
    run = run_notebook(notebook, spark, {"channel": str(path), "action": "delete", "transaction": "t6"},
                       tmp_path / "nb")
    assert "removed 1 transaction(s) from the error queue" in run.printed
    assert "1 transaction(s) in the error queue" in run.printed and "t4  commit SCN 400" in run.printed
    assert set(_queue(spark, ch)) == {"t4"}
    with pytest.raises(ConfigError, match="error queue action 'drop': use execute"):
        run_notebook(notebook, spark, {"channel": str(path), "action": "drop", "transaction": ""}, tmp_path / "nb")
    # The CLI lists the queue, and wants a transaction or --all to act on.
    assert main(["errors", "--channel", str(path)]) == 0
    listed = capsys.readouterr().out
    assert "1 transaction(s) in the error queue" in listed and "t4  commit SCN 400  3 record(s)" in listed
    assert "COUNTRIES is not in the source dictionary" in listed
    # The operator's view: t4 waits in the queue, with a change of REGIONS.
    assert main(["status", "--channel", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "error queue 1 transaction(s)\n" in shown
    assert re.search(r"hr__regions +DBS1.EXAMPLE.COM HR.REGIONS +500 .* 0 +0 +1  SCN 100 CREATE TABLE → ADD", shown), shown
    assert main(["status", "--channel", str(path), "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert (as_json["error_queue"], as_json["pending"], as_json["tables"][0]["applied_scn"]) == (1, 0, 500)
    assert main(["errors", "execute", "--channel", str(path)]) == 2
    assert "errors execute: give a transaction id or --all" in capsys.readouterr().err

    # COUNTRIES is declared and instantiated; the re-execution of all errors is killed
    # after clearing, refuses other work until finished, then finishes once.
    s.channel = s.channel.replace(tables=(TableSpec(SRC, COUNTRIES_DDL),))
    s.set_table_instantiation_scn("hr.countries", SRC, 1)
    real_derive = rebuild_module.derive

    def killed(*args, **kwargs):
        raise RuntimeError("killed")

    monkeypatch.setattr(rebuild_module, "derive", killed)
    with pytest.raises(RuntimeError, match="killed"):
        s.execute_all_errors(spark)
    with pytest.raises(ReplicationError, match=r"the re-execution of all error transactions \(silver batch \d+\) "
                                               r"did not finish; run `lakestreams errors execute --all`"):
        run_pipeline(spark, s.channel)
    with pytest.raises(ReplicationError, match="waits: the re-execution of all error transactions"):
        s.execute_error(spark, "t6")
    monkeypatch.setattr(rebuild_module, "derive", real_derive)
    result = s.execute_all_errors(spark)
    assert result.resumed and (result.count, result.sample) == (1, [(SRC, "t4")])
    assert_df_equality(spark.table(gold).select("REGION_ID", "REGION_NAME", "NOTE"),
                       spark.createDataFrame([(1, "B", "m"), (2, "C", None)], SCHEMA), ignore_row_order=True)
    assert spark.table(f"{ch.storage.schema_name('gold')}.hr__countries").count() == 1
    assert _queue(spark, ch) == {}

    # Nothing left: re-executing writes no version (an idle run writes none: the fault
    # suite); every record in one bucket (t6's two counted as error).
    before = table_versions(spark, s.channel)
    assert s.execute_all_errors(spark).count == 0
    assert table_versions(spark, s.channel) == before
    audit = run_audit(spark, s.channel)
    assert audit.ok, audit.problems
    assert audit.buckets["error"] == 2 and audit.buckets["applied"] == 5

    # Apply progress over the plans so far (the first run, and the re-executions that
    # applied): the notebook's plot has a point per plan on the table's line.
    run = run_notebook(REPO / "notebooks" / "apply_progress.py", spark, {"channel": str(path)}, tmp_path / "nb")
    scn_panel, _lag_panel = run.figures[0].axes
    points = {line.get_label(): len(line.get_xdata()) for line in scn_panel.get_lines()}
    assert points[f"hr__regions ({SRC})"] >= 2, points
    assert len(run.images) == 1 and run.images[0].read_bytes()[:4] == b"\x89PNG"

    # The operator's CLI: the DDL log, and the audit, which exits 3 once a record is
    # missing from every bucket.
    assert main(["ddl", "hr.regions", "--channel", str(path)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("1 DDL record(s) for HR.REGIONS") and "SCN 100  txn t1  CREATE TABLE  HR.REGIONS  → ADD" in shown
    assert main(["audit", "--channel", str(path)]) == 0
    assert "accounting          balanced" in capsys.readouterr().out
    outcomes = ch.storage.table("silver", "outcomes").replace("`", "")
    spark.sql(f"DELETE FROM {outcomes} WHERE transaction_id = 't5' AND stage = 'plan'")
    assert main(["audit", "--channel", str(path)]) == 3
    assert "accounting          UNBALANCED: bronze" in capsys.readouterr().out

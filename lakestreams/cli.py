"""The ``lakestreams`` command: thin entry points over the library (also the bundle's tasks)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from lakestreams.config import Channel, load_channel, with_storage
from lakestreams.errors import ConfigError, ReplicationError

REPO = Path(__file__).resolve().parents[1]
DEMO_CHANNEL = REPO / "sample_data" / "hr_demo.yml"


def _channel(args: argparse.Namespace) -> Channel:
    ch = with_storage(load_channel(args.channel), getattr(args, "catalog", None), getattr(args, "schema", None),
                      getattr(args, "state", None), prefix="--")
    if getattr(args, "landing_root", None) is not None:
        # A deployment keeps its landing folders under one root (the bundle's volume): each
        # landing folder of the channel is the folder of its name there. A mistyped root
        # would ingest nothing without a word: it must exist.
        root = Path(args.landing_root).resolve() if args.landing_root.strip() else None
        if root is None or not root.is_dir():
            raise ConfigError(f"--landing-root {args.landing_root!r}: not an existing folder")
        ch = ch.replace(landing=tuple(dataclasses.replace(lnd, path=root / lnd.name) for lnd in ch.landing))
    return ch


def _session(ch: Channel):
    from lakestreams.spark import build_session, ensure_schemas

    spark = build_session(ch.storage.warehouse)
    ensure_schemas(spark, ch.storage)
    return spark


def _print_summary(spark, ch: Channel, record: bool = False) -> int:
    """The overall accounting, what came since the last recorded audit, the gold tables and
    the rules; ``record``: keep these counts as the next audit's starting point. Exit 3 if
    an identity does not hold."""
    from lakestreams.audit import audit_since_last, format_run_audit, record_audit, run_audit
    from lakestreams.pipeline import (
        discard_reasons,
        format_rule_report,
        format_summary,
        gold_summary,
        rule_report,
    )

    audit = run_audit(spark, ch)
    eq = ch.storage.table("gold", "error_queue").replace("`", "")
    errors = spark.table(eq).count() if spark.catalog.tableExists(eq) else 0
    print(format_summary(audit, gold_summary(spark, ch), errors, discard_reasons(spark, ch)))
    since = audit_since_last(spark, ch, audit)
    print(format_run_audit(since))
    report = format_rule_report(rule_report(spark, ch))
    if report:
        print("rules per silver batch (records kept or discarded by each rule; row migrations)")
        print("\n".join(report))
    if record:
        record_audit(spark, ch, audit, since)
    return 0 if audit.ok and since.ok else 3


def cmd_run(args: argparse.Namespace, stages: tuple[str, ...]) -> int:
    from lakestreams.pipeline import run_pipeline

    ch = _channel(args)
    spark = _session(ch)
    run_pipeline(spark, ch, stages)
    if stages == ("bronze", "silver", "gold"):
        return _print_summary(spark, ch, record=True)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    ch = _channel(args)
    return _print_summary(_session(ch), ch, record=args.record)


def cmd_rules(args: argparse.Namespace) -> int:
    """Each client's rule sets and rules, with the Oracle condition text (no Spark needed)."""
    from silver.rules import build_clients, describe

    ch = _channel(args)
    rows = describe(build_clients(ch))
    if not rows:
        print("no rule sets: every client performs its task for all records (Table 5-1)")
    current = None
    for r in rows:
        head = (r["streams_type"], r["streams_name"], r["rule_set_type"], r["rule_set_name"])
        if head != current:
            current = head
            print(f"{r['streams_type']} {r['streams_name']}  {r['rule_set_type'].lower()} rule set {r['rule_set_name']}")
        subset = f" subset {r['subset_operation']}" if r["subset_operation"] else ""
        print(f"  {r['rule_name']}  ({r['rule_type']}{subset})")
        print(f"    {r['condition']}")
    for c in ch.clients:
        for t in c.transformations:
            what = t.function if t.kind == "custom" else ", ".join(
                f"{k}={v}" for k, v in dataclasses.asdict(t).items()
                if v not in (None, "*", 0) and k not in ("rule", "kind")
            )
            print(f"{c.streams_type} {c.name}  transformation on {t.rule}: {t.kind} {what} (step {t.step_number})")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Evaluate a proposed channel file's rules over bronze history; writes nothing."""
    from silver.simulate import format_simulation, simulate

    ch = _channel(args)
    proposed = load_channel(args.proposed).replace(storage=ch.storage)
    print(format_simulation(simulate(_session(ch), ch, proposed)))
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    """Re-derive a table (and what shares transactions or gold tables with it) under the
    current rules, apply it, then print the summary."""
    from lakestreams.pipeline import run_gold
    from lakestreams.rebuild import format_rebuild, parse_request, rebuild

    ch = _channel(args)
    parse_request(args.table, args.source_database)  # refuse a bad name before starting Spark
    spark = _session(ch)
    print(format_rebuild(rebuild(spark, ch, args.table, args.source_database)))
    run_gold(spark, ch)
    return _print_summary(spark, ch)


def cmd_errors(args: argparse.Namespace) -> int:
    """List the error queue; re-execute or delete error transactions."""
    from lakestreams.pipeline import run_pipeline
    from lakestreams.rebuild import delete_errors, execute_errors, format_execute

    ch = _channel(args)
    action = args.action or "list"
    if action != "list" and (args.all == (args.transaction is not None)):
        print(f"lakestreams: errors {action}: give a transaction id or --all", file=sys.stderr)
        return 2
    spark = _session(ch)
    if action == "execute":
        print(format_execute(execute_errors(spark, ch, args.transaction, args.source_database)))
        run_pipeline(spark, ch, ("gold",))
        return _print_summary(spark, ch)
    if action == "delete":
        removed = delete_errors(spark, ch, args.transaction, args.source_database)
        print(f"removed {removed} transaction(s) from the error queue")
        return 0
    from lakestreams.pipeline import format_error_queue

    print(format_error_queue(spark, ch))
    return 0


def cmd_ddl(args: argparse.Namespace) -> int:
    """Show the DDL log: each DDL record, its scope, the decision and why, the revision."""
    from lakestreams.config import split_table_name
    from lakestreams.pipeline import format_ddl_log

    table = split_table_name(args.table, "table") if args.table else None
    if args.limit < 1:
        print("lakestreams: ddl --limit: give a positive number", file=sys.stderr)
        return 2
    ch = _channel(args)
    spark = _session(ch)
    print(format_ddl_log(spark, ch, table, args.limit))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare a table's replica with a snapshot; exit 1 when they differ. With
    ``--resnapshot``, land the snapshot in the snapshot folder and run, which loads it."""
    from gold.compare import compare_snapshot, resnapshot
    from lakestreams.pipeline import run_pipeline

    ch = _channel(args)
    spark = _session(ch)
    result = compare_snapshot(spark, ch, args.table, args.snapshot)
    print(result.format())
    if not args.resnapshot:
        return 0 if result.identical else 1
    for f in resnapshot(spark, ch, args.table, args.snapshot):
        print(f"landed {f}")
    run_pipeline(spark, ch)
    return _print_summary(spark, ch)


def cmd_status(args: argparse.Namespace) -> int:
    """Per gold table: applied SCN, records waiting or open, errors, last DDL (reads only)."""
    from lakestreams.status import channel_status, format_status

    ch = _channel(args)
    status = channel_status(_session(ch), ch)
    print(json.dumps(status.as_dict(), default=str, indent=2) if args.json else format_status(status))
    return 0


def cmd_evolve(args: argparse.Namespace) -> int:
    """The DDL step before dbt: gold tables take their targets' DDL."""
    from lakestreams.pipeline import evolve_gold, format_evolution

    ch = _channel(args)
    print(format_evolution(evolve_gold(_session(ch), ch)))
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """dbt docs of the gold models and sources, and the bronze source's freshness."""
    from gold.dbt import generate_docs, source_freshness
    from lakestreams.pipeline import known_targets

    ch = _channel(args)
    spark = _session(ch)
    targets = known_targets(spark, ch)
    warned: list[str] = []
    print(f"dbt docs: {generate_docs(spark, ch, targets, warned) / 'index.html'}")
    for w in warned:
        print(f"dbt docs warning: {w}", file=sys.stderr)
    for source, status, message in source_freshness(spark, ch, targets):
        print(f"freshness of {source}: {status} {message}".rstrip())
    return 0


def cmd_maintain(args: argparse.Namespace) -> int:
    """OPTIMIZE bronze and silver tables; VACUUM with Delta's default retention. A table in
    those schemas whose name is not one this project makes is left alone and named, and the
    command then exits 1."""
    from delta.tables import DeltaTable

    from lakestreams.config import IDENTIFIER, IDENTIFIER_RULE
    from lakestreams.delta_io import table_names

    ch = _channel(args)
    spark = _session(ch)
    refused = []
    for layer in ("bronze", "silver"):
        # Tables only (a view has nothing to compact), as the catalog lists them.
        for table in sorted(table_names(spark, ch.storage, layer, views=False)):
            if not IDENTIFIER.fullmatch(table):
                refused.append(f"{ch.storage.schema_name(layer)}.{table!r}")
                continue
            # A checked identifier, quoted by Storage.table; Delta's API, no SQL text.
            name = ch.storage.table(layer, table)
            delta = DeltaTable.forName(spark, name)
            delta.optimize().executeCompaction()
            delta.vacuum()
            print(f"maintained {name}")
    for name in refused:
        print(f"not maintained {name}: not a table name lakestreams makes ({IDENTIFIER_RULE})", file=sys.stderr)
    return 1 if refused else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakestreams", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--channel", default=str(DEMO_CHANNEL), help="channel YAML file")
        p.add_argument("--catalog", help="Unity Catalog catalog (overrides the channel file)")
        p.add_argument("--schema", help="schema prefix (overrides the channel file)")
        p.add_argument("--state", metavar="FOLDER",
                       help="folder for bronze checkpoints, the run lock and dbt's files (overrides storage.state)")
        p.add_argument("--landing-root", metavar="FOLDER",
                       help="folder holding each landing folder under its name (overrides the channel file's paths)")
        p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                       help="when another run holds the channel, wait this long for it (default: stop at once)")
        return p

    add("run", "bronze → silver → gold, then the summary")
    add("demo", "run the bundled HR sample end to end and print the summary")
    add("bronze", "ingest new landing files")
    add("silver", "sequence, filter and type new bronze records")
    add("evolve", "the DDL step before dbt: gold tables take their targets' DDL (renames, drops, new or widened columns)")
    add("gold", "plan and apply (dbt) the new silver batches (evolving the gold tables first)")
    add("audit", "check the accounting identities, overall and since the last recorded audit; exit 3 when unbalanced") \
        .add_argument("--record", action="store_true",
                      help="keep the counts as the next audit's starting point (lakestreams run always does)")
    add("status", "per gold table and source: applied SCN, records waiting or open, errors, last DDL") \
        .add_argument("--json", action="store_true", help="print the status as JSON")
    add("maintain", "OPTIMIZE and VACUUM bronze and silver")
    add("docs", "generate the dbt docs of the gold models and sources; check the bronze source's freshness "
                "(fails when the newest record is over a day old)")
    add("rules", "list each client's rule sets, rules (Oracle condition text) and transformations")
    add("simulate", "what a proposed channel file would keep, discard or migrate differently; writes nothing") \
        .add_argument("proposed", help="the proposed channel YAML file")
    rb = add("rebuild", "re-derive a table's silver and gold from bronze under the current rules")
    rb.add_argument("table", help="OWNER.TABLE: a source table or a target (gold) table")
    rb.add_argument("--source-database", help="only this source database's table (and what it shares)")
    er = add("errors", "the error queue: list it, re-execute or delete error transactions")
    er.add_argument("action", nargs="?", choices=("list", "execute", "delete"), help="default: list")
    er.add_argument("transaction", nargs="?", help="source transaction id (e.g. 2.6.1043)")
    er.add_argument("--all", action="store_true", help="every transaction in the queue (commit SCN order)")
    er.add_argument("--source-database", help="the transaction's source database, when its id is not unique")
    dd = add("ddl", "the DDL log: each DDL record, its GoldenGate scope and outcome, the decision and why")
    dd.add_argument("table", nargs="?", help="OWNER.TABLE: only the records about this source table")
    dd.add_argument("--limit", type=int, default=50, help="the last N records (default 50)")
    cp = add("compare", "compare a table's replica with a snapshot (counts, checksums, differing rows)")
    cp.add_argument("table", help="OWNER.TABLE: the target (gold) table")
    cp.add_argument("snapshot", help="file or folder of the snapshot (snapshot landing format)")
    cp.add_argument("--resnapshot", action="store_true", help="then load the snapshot into the table (re-snapshot)")
    return parser


#: The pipeline stages each stage command runs.
STAGE_COMMANDS = {
    "run": ("bronze", "silver", "gold"), "demo": ("bronze", "silver", "gold"),
    "bronze": ("bronze",), "silver": ("silver",), "gold": ("gold",),
}


def writes(args: argparse.Namespace) -> bool:
    """Whether the command changes the channel's tables (and so takes its run lock)."""
    return (
        args.command in STAGE_COMMANDS or args.command in ("evolve", "rebuild", "maintain", "docs")
        or (args.command == "audit" and args.record)
        or (args.command == "errors" and args.action in ("execute", "delete"))
        or (args.command == "compare" and args.resnapshot)
    )


def stages_run(args: argparse.Namespace) -> int | None:
    """How many pipeline stages a writing command runs, for its progress bar (None: the
    command decides as it goes, e.g. a rebuild or a re-execution)."""
    stages = STAGE_COMMANDS.get(args.command)
    return None if stages is None else len(stages)


def main(argv: list[str] | None = None) -> int:
    from lakestreams.faults import kill_spec
    from lakestreams.progress import stage_progress
    from lakestreams.runlock import BUSY_EXIT, ChannelBusy, channel_lock

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        kill_spec()
    except ValueError as e:
        print(f"lakestreams: {e}", file=sys.stderr)
        return 2
    try:
        if writes(args):
            # Taken before Spark starts: a busy channel is refused in a moment.
            ch = _channel(args)
            with channel_lock(ch.name, ch.storage.state, args.wait, f"lakestreams {args.command}"), \
                    stage_progress(stages_run(args), label=f"lakestreams {args.command}"):
                return dispatch(parser, args)
        return dispatch(parser, args)
    except ChannelBusy as e:
        print(f"lakestreams: {e}", file=sys.stderr)
        return BUSY_EXIT
    except ReplicationError as e:
        print(f"lakestreams: {e}", file=sys.stderr)
        return 2


def dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command in STAGE_COMMANDS:
        return cmd_run(args, STAGE_COMMANDS[args.command])
    commands = {
        "ddl": cmd_ddl, "evolve": cmd_evolve, "docs": cmd_docs, "audit": cmd_audit, "status": cmd_status, "maintain": cmd_maintain, "rules": cmd_rules, "simulate": cmd_simulate,
        "rebuild": cmd_rebuild, "errors": cmd_errors, "compare": cmd_compare,
    }
    if args.command not in commands:
        parser.error(f"unknown command {args.command}")
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

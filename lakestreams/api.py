"""The programmatic side of a channel, named after DBMS_STREAMS_ADM and DBMS_APPLY_ADM.

What a channel file declares can be done from a notebook: the calls build the same
typed objects and are validated the same way.

>>> from lakestreams.api import Streams
>>> s = Streams.new("demo", landing=[{"name": "dbs1", "path": "/tmp/landing/dbs1"}])
>>> s.add_table_rules("hr.locations", streams_type="apply", streams_name="apply",
...                   include_dml=True, include_ddl=False, source_database="dbs1.example.com")
('LOCATIONS1', None)
>>> print(s.rules()[0]["condition"])
(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'LOCATIONS')) and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from lakestreams.config import (
    CLIENT_TYPES,
    Channel,
    ClientSpec,
    InstantiationSpec,
    KeySpec,
    RuleSpec,
    TransformSpec,
    channel_from_dict,
    check_conflict_handlers,
    check_global_name,
    check_identifier,
    check_instantiation,
    check_key_columns,
    check_rules,
    check_scn,
    compare_setting,
    conflict_handler,
    dml_handler_spec,
    load_channel,
    split_table_name,
    target_spec,
)
from lakestreams.errors import ConfigError
from silver.handlers import check_handlers
from silver.rules import build_clients, describe


class Streams:
    """A channel under administration; ``channel`` is what the pipeline runs."""

    def __init__(self, channel: Channel):
        self.channel = channel

    @classmethod
    def load(cls, path: str | Path) -> Streams:
        return cls(load_channel(path))

    @classmethod
    def new(cls, name: str, landing: list[dict[str, Any]], base_dir: str | Path = ".", **extra: Any) -> Streams:
        return cls(channel_from_dict({"name": name, "landing": landing, **extra}, Path(base_dir).resolve()))

    def _client(self, streams_type: str, streams_name: str) -> ClientSpec:
        if streams_type not in CLIENT_TYPES:
            raise ConfigError(f"streams_type: {streams_type!r} is not one of {', '.join(CLIENT_TYPES)}")
        check_identifier(streams_name, "streams_name")
        current = self.channel.client(streams_type)
        if current is not None and current.name != streams_name:
            raise ConfigError(
                f"streams_name: this channel's {streams_type} client is {current.name!r}, not {streams_name!r}"
            )
        return current or ClientSpec(streams_type, streams_name)

    def _replace_client(self, updated: ClientSpec) -> list:
        """Swap in the updated client if all its rules build; returns the built clients."""
        others = tuple(c for c in self.channel.clients if c.streams_type != updated.streams_type)
        candidate = self.channel.replace(clients=(*others, updated))
        built = check_rules(candidate)  # refuse a bad condition or transformation now, not at run time
        self.channel = candidate
        return built

    def _add_spec(self, spec: RuleSpec, streams_type: str, streams_name: str) -> list:
        """Add one rule request to its client; returns the rules it created."""
        client = self._client(streams_type, streams_name)
        updated = dataclasses.replace(client, rules=(*client.rules, spec))
        built = next(c for c in self._replace_client(updated) if c.streams_type == streams_type)
        rule_set = built.positive if spec.inclusion_rule else built.negative
        return [r for r in (rule_set.rules if rule_set else ()) if r.spec is spec]

    def _add(self, level: str, owner: str | None, table: str | None, streams_type: str, streams_name: str,
             include_dml: bool, include_ddl: bool, include_tagged_lcr: bool, source_database: str | None,
             inclusion_rule: bool, and_condition: str | None) -> tuple[str | None, str | None]:
        src = check_global_name(source_database, "source_database") if source_database else None
        spec = RuleSpec(level, owner, table, include_dml, include_ddl, include_tagged_lcr, src, inclusion_rule,
                        and_condition=and_condition)
        mine = self._add_spec(spec, streams_type, streams_name)
        dml = next((r.name for r in mine if r.kind == "DML"), None)
        ddl = next((r.name for r in mine if r.kind == "DDL"), None)
        return dml, ddl

    def add_global_rules(
        self,
        streams_type: str = "apply",
        streams_name: str = "apply",
        include_dml: bool = True,
        include_ddl: bool = False,
        include_tagged_lcr: bool = False,
        source_database: str | None = None,
        inclusion_rule: bool = True,
        and_condition: str | None = None,
    ) -> tuple[str | None, str | None]:
        """Global rules for every object; returns (dml_rule_name, ddl_rule_name)."""
        return self._add("GLOBAL", None, None, streams_type, streams_name, include_dml, include_ddl,
                         include_tagged_lcr, source_database, inclusion_rule, and_condition)

    def add_schema_rules(
        self,
        schema_name: str,
        streams_type: str = "apply",
        streams_name: str = "apply",
        include_dml: bool = True,
        include_ddl: bool = False,
        include_tagged_lcr: bool = False,
        source_database: str | None = None,
        inclusion_rule: bool = True,
        and_condition: str | None = None,
    ) -> tuple[str | None, str | None]:
        """Schema rules for ``schema_name``; returns (dml_rule_name, ddl_rule_name)."""
        owner = check_identifier(schema_name, "schema_name").upper()
        return self._add("SCHEMA", owner, None, streams_type, streams_name, include_dml, include_ddl,
                         include_tagged_lcr, source_database, inclusion_rule, and_condition)

    def add_table_rules(
        self,
        table_name: str,
        streams_type: str = "apply",
        streams_name: str = "apply",
        include_dml: bool = True,
        include_ddl: bool = False,
        include_tagged_lcr: bool = False,
        source_database: str | None = None,
        inclusion_rule: bool = True,
        and_condition: str | None = None,
    ) -> tuple[str | None, str | None]:
        """Table rules for ``owner.table``; returns (dml_rule_name, ddl_rule_name).

        ``and_condition`` is ANDed to the generated condition, with ``:lcr`` rewritten
        to ``:dml`` or ``:ddl`` for each rule.
        """
        owner, table = split_table_name(table_name, "table_name")
        return self._add("TABLE", owner, table, streams_type, streams_name, include_dml, include_ddl,
                         include_tagged_lcr, source_database, inclusion_rule, and_condition)

    def add_subset_rules(
        self,
        table_name: str,
        dml_condition: str,
        streams_type: str = "apply",
        streams_name: str = "apply",
        include_tagged_lcr: bool = False,
        source_database: str | None = None,
        inclusion_rule: bool = True,
    ) -> tuple[str, str, str]:
        """The insert, update and delete rules of a row subset; returns their names.

        Subset rules go in the positive rule set only: ``inclusion_rule=False`` is refused.
        """
        if not inclusion_rule:
            raise ConfigError("add_subset_rules: subset rules go in the positive rule set only (inclusion_rule=True)")
        owner, table = split_table_name(table_name, "table_name")
        if not isinstance(dml_condition, str) or not dml_condition.strip():
            raise ConfigError("dml_condition: expected a WHERE-like condition such as 'region_id=2'")
        src = check_global_name(source_database, "source_database") if source_database else None
        spec = RuleSpec("SUBSET", owner, table, True, False, include_tagged_lcr, src, True, dml_condition=dml_condition)
        mine = {r.subset_dml: r.name for r in self._add_spec(spec, streams_type, streams_name)}
        return mine["INSERT"], mine["UPDATE"], mine["DELETE"]

    def add_rule(
        self,
        condition: str,
        streams_type: str = "apply",
        streams_name: str = "apply",
        rule_name: str | None = None,
        inclusion_rule: bool = True,
    ) -> str:
        """A rule with a condition in Oracle syntax, verbatim (as DBMS_RULE_ADM.CREATE_RULE
        and ADD_RULE take it); returns the rule's name."""
        name = check_identifier(rule_name, "rule_name").upper() if rule_name else None
        spec = RuleSpec("CONDITION", inclusion_rule=inclusion_rule, condition=condition, rule_name=name)
        return self._add_spec(spec, streams_type, streams_name)[0].name

    def _transform(self, spec: TransformSpec, streams_type: str, streams_name: str) -> None:
        client = self._client(streams_type, streams_name)
        self._replace_client(dataclasses.replace(client, transformations=(*client.transformations, spec)))

    def rename_schema(self, rule_name: str, from_schema_name: str, to_schema_name: str, step_number: int = 0,
                      streams_type: str = "apply", streams_name: str = "apply") -> None:
        """Declarative transformation: records kept by ``rule_name`` move to another schema."""
        self._transform(TransformSpec(
            rule_name.upper(), "rename_schema", owner=check_identifier(from_schema_name, "from_schema_name").upper(),
            to_owner=check_identifier(to_schema_name, "to_schema_name").upper(), step_number=step_number,
        ), streams_type, streams_name)

    def rename_table(self, rule_name: str, from_table_name: str, to_table_name: str, step_number: int = 0,
                     streams_type: str = "apply", streams_name: str = "apply") -> None:
        """Declarative transformation: records of one table kept by ``rule_name`` go to another table."""
        owner, table = split_table_name(from_table_name, "from_table_name")
        to_owner, to_table = split_table_name(to_table_name, "to_table_name")
        self._transform(TransformSpec(rule_name.upper(), "rename_table", owner=owner, table=table,
                                      to_owner=to_owner, to_table=to_table, step_number=step_number),
                        streams_type, streams_name)

    def add_column(self, rule_name: str, table_name: str, column_name: str, column_type: str,
                   column_value: Any = None, expression: str | None = None, value_type: str = "NEW",
                   step_number: int = 0, streams_type: str = "apply", streams_name: str = "apply") -> None:
        """Declarative transformation: add a column with a value or an expression such as
        ``:lcr.get_source_database_name()``."""
        owner, table = split_table_name(table_name, "table_name")
        self._transform(TransformSpec(
            rule_name.upper(), "add_column", owner=owner, table=table,
            column=check_identifier(column_name, "column_name").upper(), column_type=column_type,
            value=column_value, expression=expression, value_type=value_type.upper(), step_number=step_number,
        ), streams_type, streams_name)

    def rename_column(self, rule_name: str, table_name: str, from_column_name: str, to_column_name: str,
                      value_type: str = "*", step_number: int = 0, streams_type: str = "apply",
                      streams_name: str = "apply") -> None:
        """Declarative transformation: rename a column in the old and/or new image."""
        owner, table = split_table_name(table_name, "table_name")
        self._transform(TransformSpec(
            rule_name.upper(), "rename_column", owner=owner, table=table,
            column=check_identifier(from_column_name, "from_column_name").upper(),
            to_column=check_identifier(to_column_name, "to_column_name").upper(),
            value_type=value_type.upper(), step_number=step_number,
        ), streams_type, streams_name)

    def delete_column(self, rule_name: str, table_name: str, column_name: str, value_type: str = "*",
                      step_number: int = 0, streams_type: str = "apply", streams_name: str = "apply") -> None:
        """Declarative transformation: drop a column from the old and/or new image."""
        owner, table = split_table_name(table_name, "table_name")
        self._transform(TransformSpec(
            rule_name.upper(), "delete_column", owner=owner, table=table,
            column=check_identifier(column_name, "column_name").upper(), value_type=value_type.upper(),
            step_number=step_number,
        ), streams_type, streams_name)

    def set_custom_transformation(self, rule_name: str, function_name: str, step_number: int = 0,
                                  streams_type: str = "apply", streams_name: str = "apply") -> None:
        """Run a transformation registered with ``silver.transforms.register`` for ``rule_name``."""
        self._transform(TransformSpec(rule_name.upper(), "custom", function=check_identifier(function_name, "function_name"),
                                      step_number=step_number), streams_type, streams_name)

    def _instantiate(self, src: str, owner: str | None, table: str | None, **values: int | None) -> None:
        current = next((i for i in self.channel.instantiation if (i.source_database, i.owner, i.table) == (src, owner, table)),
                       InstantiationSpec(src, owner, table, None))
        updated = dataclasses.replace(current, **values)
        kept = [i for i in self.channel.instantiation if i is not current]
        self.channel = self.channel.replace(instantiation=check_instantiation([*kept, updated]))

    def set_table_instantiation_scn(
        self, source_object_name: str, source_database_name: str, instantiation_scn: int
    ) -> None:
        """Apply changes to the table from this source only when committed above the SCN."""
        owner, table = split_table_name(source_object_name, "source_object_name")
        src = check_global_name(source_database_name, "source_database_name")
        self._instantiate(src, owner, table, scn=check_scn(instantiation_scn, "instantiation_scn"))

    def set_schema_instantiation_scn(
        self, source_schema_name: str, source_database_name: str, instantiation_scn: int
    ) -> None:
        """The instantiation SCN of every table of the schema without one of its own."""
        owner = check_identifier(source_schema_name, "source_schema_name").upper()
        src = check_global_name(source_database_name, "source_database_name")
        self._instantiate(src, owner, None, scn=check_scn(instantiation_scn, "instantiation_scn"))

    def set_global_instantiation_scn(self, source_database_name: str, instantiation_scn: int) -> None:
        """The instantiation SCN of every table of the source without a table or schema one."""
        src = check_global_name(source_database_name, "source_database_name")
        self._instantiate(src, None, None, scn=check_scn(instantiation_scn, "instantiation_scn"))

    def set_ignore_scn(self, source_object_name: str, source_database_name: str, ignore_scn: int) -> None:
        """Record a table's ignore SCN (what an export/import records): no instantiation SCN
        of the table may be set below it, and its changes at or below it are never applied."""
        owner, table = split_table_name(source_object_name, "source_object_name")
        src = check_global_name(source_database_name, "source_database_name")
        self._instantiate(src, owner, table, ignore_scn=check_scn(ignore_scn, "ignore_scn"))

    def set_key_columns(self, object_name: str, column_list: str | list[str] | None) -> None:
        """Rows of the target table are found by these columns instead of its primary key
        (NULLs allowed, matched null-safe); ``None`` removes the substitute key. A target
        that already holds rows takes a new key through ``lakestreams rebuild``."""
        owner, table = split_table_name(object_name, "object_name")
        kept = tuple(k for k in self.channel.keys if (k.owner, k.table) != (owner, table))
        if column_list is not None:
            kept = (*kept, KeySpec(owner, table, check_key_columns(column_list, "column_list")))
        self.channel = self.channel.replace(keys=kept)

    def set_target_options(self, object_name: str, history: str | None = None, soft_delete: bool = False) -> None:
        """Keep a history next to the replica (``'scd2'``: versions with valid-from/valid-to
        SCNs in ``<model>__history``; ``'timekey'``: every applied change in
        ``<model>__changes``) and/or mark deleted rows instead of removing them
        (``soft_delete``). Neither removes the options. They apply from the next plan."""
        owner, table = split_table_name(object_name, "object_name")
        kept = tuple(t for t in self.channel.targets if (t.owner, t.table) != (owner, table))
        if history is not None or soft_delete:
            spec = target_spec({"table": object_name, "history": history, "soft_delete": soft_delete}, "target options")
            kept = (*kept, spec)
        self.channel = self.channel.replace(targets=kept)

    def set_dml_handler(
        self, object_name: str, operation_name: str, user_procedure: str | None, error_handler: bool = False,
        sql: dict | None = None,
    ) -> None:
        """Set or remove (``user_procedure`` and ``sql`` None) the DML handler of a target
        table and operation, or its error handler (``error_handler=True``): a function
        registered with ``silver.handlers.register_dml_handler`` (``user_procedure``) or
        SQL expressions (``sql``: ``consume_when``, ``raise_when``, ``command_type``,
        ``set``). One handler per table and operation, as in Oracle Streams. It applies to
        changes silver derives, and failures the plan judges, from now on."""
        owner, table = split_table_name(object_name, "object_name")
        op = operation_name.upper() if isinstance(operation_name, str) else operation_name
        kept = tuple(h for h in self.channel.dml_handlers if (h.owner, h.table, h.operation) != (owner, table, op))
        if user_procedure is not None or sql is not None:
            spec = dml_handler_spec({"table": object_name, "operation": operation_name, "handler": user_procedure,
                                     "sql": sql, "error_handler": error_handler}, "set_dml_handler")
            check_handlers((spec,))
            kept = (*kept, spec)
        self.channel = self.channel.replace(dml_handlers=kept)

    def set_update_conflict_handler(
        self, object_name: str, method_name: str | None, resolution_column: str | None,
        column_list: str | list[str],
    ) -> None:
        """Resolve update conflicts in ``column_list`` of the target table with OVERWRITE,
        DISCARD, MAXIMUM or MINIMUM (the last two compare ``resolution_column``; the others
        default it to the first column). A handler with the same resolution column is
        replaced; ``method_name=None`` removes it (all of the table's without a column)."""
        owner, table = split_table_name(object_name, "object_name")
        res = None if resolution_column is None else check_identifier(resolution_column, "resolution_column").upper()
        added = []
        if method_name is not None:
            added = [conflict_handler(
                {"table": object_name, "method": method_name, "columns": column_list, "resolution_column": res},
                "set_update_conflict_handler",
            )]
            res = added[0].resolution_column
        kept = [h for h in self.channel.conflict_handlers
                if not ((h.owner, h.table) == (owner, table) and (res is None or h.resolution_column == res))]
        kept += added
        self.channel = self.channel.replace(
            conflict_handlers=check_conflict_handlers(kept, [f"update_conflict_handlers[{i}]" for i in range(len(kept))])
        )

    def compare_old_values(
        self, object_name: str, column_list: str | list[str], operation: str = "UPDATE", compare: bool = True
    ) -> None:
        """Switch conflict detection on (``compare=True``) or off for non-key columns of the
        target table (``'*'``: all of them) for UPDATE, DELETE or both (``'*'``)."""
        spec = compare_setting(
            {"table": object_name, "columns": column_list, "operation": operation, "compare": compare},
            "compare_old_values",
        )
        self.channel = self.channel.replace(compare_old_values=(*self.channel.compare_old_values, spec))

    def execute_error(self, spark: Any, transaction_id: str, source_database_name: str | None = None) -> Any:
        """Re-execute one error transaction under the channel as it is now and apply it
        (``lakestreams.rebuild.execute_errors``); it fails again into the queue if its
        cause is still there."""
        return self._execute(spark, transaction_id, source_database_name)

    def execute_all_errors(self, spark: Any) -> Any:
        """Re-execute every error transaction, in commit SCN order, and apply them."""
        return self._execute(spark, None, None)

    def _execute(self, spark: Any, transaction_id: str | None, source_database_name: str | None) -> Any:
        from lakestreams.pipeline import run_pipeline
        from lakestreams.rebuild import execute_errors

        result = execute_errors(spark, self.channel, transaction_id, source_database_name)
        # Applied like any run: conflicts the re-executed transactions explain are retried too.
        run_pipeline(spark, self.channel, ("gold",))
        return result

    def delete_error(self, spark: Any, transaction_id: str, source_database_name: str | None = None) -> int:
        """Remove one transaction from the error queue without applying it; returns 1."""
        from lakestreams.rebuild import delete_errors

        return delete_errors(spark, self.channel, transaction_id, source_database_name)

    def delete_all_errors(self, spark: Any) -> int:
        """Remove every transaction from the error queue without applying them; returns how many."""
        from lakestreams.rebuild import delete_errors

        return delete_errors(spark, self.channel)

    def compare(self, spark: Any, table: str, snapshot: str) -> Any:
        """Compare ``table``'s replica with the snapshot file or folder ``snapshot``: counts,
        checksums, and the differing rows in ``apply_compare`` (``gold.compare``)."""
        from gold.compare import compare_snapshot

        return compare_snapshot(spark, self.channel, table, snapshot)

    def resnapshot(self, spark: Any, table: str, snapshot: str) -> Any:
        """Land ``snapshot`` (of ``table`` alone) in the snapshot folder and run the pipeline:
        the table's target is replaced by it and instantiated at its SCN."""
        from gold.compare import resnapshot
        from lakestreams.pipeline import run_pipeline

        resnapshot(spark, self.channel, table, snapshot)
        return run_pipeline(spark, self.channel)

    def rules(self) -> list[dict[str, str]]:
        """Every rule with its client, rule set and Oracle condition (like DBA_STREAMS_RULES)."""
        return describe(build_clients(self.channel))

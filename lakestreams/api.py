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

from pathlib import Path
from typing import Any

from lakestreams.config import (
    CLIENT_TYPES,
    Channel,
    ClientSpec,
    InstantiationSpec,
    RuleSpec,
    channel_from_dict,
    check_global_name,
    check_identifier,
    load_channel,
    split_table_name,
)
from lakestreams.errors import ConfigError
from silver.rules import build_client


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

    def _add(
        self,
        level: str,
        owner: str | None,
        table: str | None,
        streams_type: str,
        streams_name: str,
        include_dml: bool,
        include_ddl: bool,
        include_tagged_lcr: bool,
        source_database: str | None,
        inclusion_rule: bool,
    ) -> tuple[str | None, str | None]:
        """Add one system-created rule request to its client; returns the rule names."""
        src = check_global_name(source_database, "source_database") if source_database else None
        spec = RuleSpec(level, owner, table, include_dml, include_ddl, include_tagged_lcr, src, inclusion_rule)
        if streams_type not in CLIENT_TYPES:
            raise ConfigError(f"streams_type: {streams_type!r} is not one of {', '.join(CLIENT_TYPES)}")
        check_identifier(streams_name, "streams_name")
        current = self.channel.client(streams_type)
        if current is not None and current.name != streams_name:
            raise ConfigError(
                f"streams_name: this channel's {streams_type} client is {current.name!r}, not {streams_name!r}"
            )
        client = current or ClientSpec(streams_type, streams_name)
        updated = ClientSpec(
            client.streams_type, client.name, client.positive_rule_set, client.negative_rule_set, (*client.rules, spec)
        )
        others = tuple(c for c in self.channel.clients if c.streams_type != streams_type)
        self.channel = self.channel.replace(clients=(*others, updated))
        built = build_client(updated)
        rule_set = built.positive if spec.inclusion_rule else built.negative
        mine = [r for r in (rule_set.rules if rule_set else ()) if r.spec is spec]
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
    ) -> tuple[str | None, str | None]:
        """Global rules for every object; returns (dml_rule_name, ddl_rule_name)."""
        return self._add("GLOBAL", None, None, streams_type, streams_name, include_dml, include_ddl,
                         include_tagged_lcr, source_database, inclusion_rule)

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
    ) -> tuple[str | None, str | None]:
        """Schema rules for ``schema_name``; returns (dml_rule_name, ddl_rule_name)."""
        owner = check_identifier(schema_name, "schema_name").upper()
        return self._add("SCHEMA", owner, None, streams_type, streams_name, include_dml, include_ddl,
                         include_tagged_lcr, source_database, inclusion_rule)

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
    ) -> tuple[str | None, str | None]:
        """Table rules for ``owner.table``; returns (dml_rule_name, ddl_rule_name)."""
        owner, table = split_table_name(table_name, "table_name")
        return self._add("TABLE", owner, table, streams_type, streams_name, include_dml, include_ddl,
                         include_tagged_lcr, source_database, inclusion_rule)

    def set_table_instantiation_scn(
        self, source_object_name: str, source_database_name: str, instantiation_scn: int
    ) -> None:
        """Apply changes to the table from this source only when committed above the SCN."""
        owner, table = split_table_name(source_object_name, "source_object_name")
        src = check_global_name(source_database_name, "source_database_name")
        if not isinstance(instantiation_scn, int) or isinstance(instantiation_scn, bool) or instantiation_scn < 0:
            raise ConfigError(f"instantiation_scn: {instantiation_scn!r} is not a non-negative integer SCN")
        kept = tuple(
            i for i in self.channel.instantiation if (i.source_database, i.owner, i.table) != (src, owner, table)
        )
        self.channel = self.channel.replace(
            instantiation=(*kept, InstantiationSpec(src, owner, table, instantiation_scn))
        )

    def rules(self) -> list[dict[str, str]]:
        """Every rule with its client, rule set and Oracle condition (like DBA_STREAMS_RULES)."""
        out = []
        for spec in self.channel.clients:
            client = build_client(spec)
            for kind, rs in (("POSITIVE", client.positive), ("NEGATIVE", client.negative)):
                for r in rs.rules if rs else ():
                    out.append(
                        {
                            "streams_type": client.streams_type,
                            "streams_name": client.name,
                            "rule_set_type": kind,
                            "rule_set_name": rs.name,
                            "rule_name": r.name,
                            "rule_type": r.kind,
                            "condition": r.condition,
                        }
                    )
        return out

"""The error hierarchy: every refusal names what was wrong and what is accepted."""

from __future__ import annotations


class ReplicationError(Exception):
    """Base class of every error lakestreams raises on purpose."""


class ConfigError(ReplicationError):
    """A channel file or API argument is not what its place allows."""


class RuleError(ReplicationError):
    """A rule, rule set or rule condition is invalid."""


class DdlError(ReplicationError):
    """A DDL statement cannot be understood or applied. ``code``: the Oracle error a
    database would give for it (942 no such table, 955 name in use, 904 no such column,
    1430 column exists, 957 duplicate column name, 2260 a second
    primary key), None when it has none."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class ApplyError(ReplicationError):
    """The apply stage cannot proceed (e.g. dbt failed)."""


class ConcurrentRunError(ReplicationError):
    """Another run of the same channel holds the lock."""

"""The error hierarchy: every refusal names what was wrong and what is accepted."""

from __future__ import annotations


class ReplicationError(Exception):
    """Base class of every error lakestreams raises on purpose."""


class ConfigError(ReplicationError):
    """A channel file or API argument is not what its place allows."""


class RuleError(ReplicationError):
    """A rule, rule set or rule condition is invalid."""


class DdlError(ReplicationError):
    """A DDL statement cannot be understood or applied."""


class ApplyError(ReplicationError):
    """The apply stage cannot proceed (e.g. dbt failed)."""


class ConcurrentRunError(ReplicationError):
    """Another run of the same channel holds the lock."""

"""lakestreams: Oracle Streams-grade change replication on a lakehouse."""

from __future__ import annotations

__version__ = "0.1.0"

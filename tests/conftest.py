"""One local Spark session with Delta for the whole run, and helpers to run channels."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lakestreams.config import Channel, channel_from_dict

# A fault point asked for in the caller's shell would kill pytest itself: only the fault
# suite's subprocesses get one.
os.environ.pop("LAKESTREAMS_KILL_AT", None)
os.environ.setdefault("LAKESTREAMS_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("LAKESTREAMS_DRIVER_MEMORY", "4g")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def _forget_delta_logs(request):
    """Each module's tables live in schemas of their own: once it is done, Delta's cached
    logs of them (snapshots and their plans) only fill the one session's heap."""
    yield
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from lakestreams.spark import build_session

    session = build_session(tmp_path_factory.mktemp("warehouse"), app_name="lakestreams-tests", shuffle_partitions=2)
    yield session
    session.stop()


_counter = iter(range(1, 10_000))


def make_channel(tmp_path: Path, landing: dict[str, str | dict] | None = None, **extra) -> Channel:
    """A channel whose tables live in their own schema prefix (one per test). ``landing``:
    folder name → its transactions mode, or its options."""
    landing = landing or {"src": "commit_records"}
    data = {
        "name": "t",
        "storage": {"warehouse": "wh", "state": "state", "schema": f"t{next(_counter)}"},
        "landing": [
            {"name": n, "path": f"landing/{n}", **(opts if isinstance(opts, dict) else {"transactions": opts})}
            for n, opts in landing.items()
        ],
        **extra,
    }
    return channel_from_dict(data, tmp_path)


def write_lines(channel: Channel, landing: str, filename: str, records: list) -> Path:
    folder = next(ld.path for ld in channel.landing if ld.name == landing)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    # surrogateescape: a corpus line may carry bytes that are not UTF-8 on purpose.
    with path.open("w", encoding="utf-8", errors="surrogateescape") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def table_versions(spark, channel: Channel) -> dict[str, int]:
    """Latest Delta version of every table of the channel."""
    out = {}
    for layer in ("bronze", "silver", "gold"):
        schema = channel.storage.schema_name(layer)
        for t in spark.catalog.listTables(schema):
            if t.tableType == "VIEW":
                continue
            out[f"{schema}.{t.name}"] = spark.sql(f"DESCRIBE HISTORY `{schema}`.`{t.name}` LIMIT 1").first()["version"]
    return out

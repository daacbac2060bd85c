"""One local Spark session with Delta for the whole run, and helpers to run channels."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lakestreams.config import Channel, channel_from_dict
from lakestreams.delta_io import table_names

# A fault point asked for in the caller's shell would kill pytest itself: only the fault
# suite's subprocesses get one.
os.environ.pop("LAKESTREAMS_KILL_AT", None)
os.environ.setdefault("LAKESTREAMS_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("LAKESTREAMS_DRIVER_MEMORY", "4g")
# Test data is small everywhere, as the product's small batches and plans are (they run
# without generated code, ``lakestreams.spark.interpreted``): the whole session, and the
# processes the tests start, run so. Generating and compiling code per query cost a test
# pipeline run 10% of its time (three channels, runs alternated in one session). The tests
# of ``interpreted`` and ``compiled_expressions`` set what they check themselves.
os.environ.setdefault("LAKESTREAMS_SPARK_CONF", "spark.sql.codegen.wholeStage=false;spark.sql.codegen.factoryMode=NO_CODEGEN")

REPO = Path(__file__).resolve().parents[1]
#: ``LAKESTREAMS_TESTS=all`` (``make test-all``) also runs the tests marked ``extended``:
#: further end-to-end variations of a capability whose core test ``make test`` runs. Each
#: pipeline run costs tens of seconds on two cores, and CI has a time limit.
ALL_TESTS = os.environ.get("LAKESTREAMS_TESTS", "") == "all"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "extended: an end-to-end variation run by `make test-all` (LAKESTREAMS_TESTS=all), "
                   "not by `make test`")


def pytest_report_header(config):
    return ("tests: all (core and extended)" if ALL_TESTS else
            "tests: core; `make test-all` (LAKESTREAMS_TESTS=all) adds the extended end-to-end variations")


#: The modules whose pipeline runs cost most, costliest first (seconds per module in a run
#: of the suite in one process, the machine shared: 760, 640, 460, 460, 400, 390, 330, 300,
#: 290, 240, 230, 210, 180, 170, 150, 120, 70, 70); the others follow in their own order.
#: ``make test`` hands its workers whole modules in collection order, so the long ones start
#: first and the run does not end on one worker finishing a long module alone.
COSTLY_FIRST = (
    "test_ddl_evolution", "test_faults", "test_late_records", "test_apply_scenarios", "test_scenarios_as_data",
    "test_wheel", "test_history_targets", "test_error_queue", "test_ddl_processing", "test_hr_sample",
    "test_rebuild", "test_dml_handlers", "test_hostile_text", "test_snapshots", "test_bad_records", "test_bronze",
    "test_rules_pipeline", "test_instantiation",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(COSTLY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: a module keeps its order
    if ALL_TESTS:
        return
    core, extended = [], []
    for item in items:
        (extended if item.get_closest_marker("extended") else core).append(item)
    if extended:
        config.hook.pytest_deselected(items=extended)
        items[:] = core


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
        for name in table_names(spark, channel.storage, layer, views=False):
            out[f"{schema}.{name}"] = spark.sql(f"DESCRIBE HISTORY `{schema}`.`{name}` LIMIT 1").first()["version"]
    return out


def queued(spark, channel: Channel) -> dict[str, str]:
    """The error queue as transaction → error: a test's few queued transactions."""
    q = spark.table(channel.storage.table("gold", "error_queue").replace("`", ""))
    return {r["transaction_id"]: r["error"] for r in q.collect()}

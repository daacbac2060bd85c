"""The bundle's wheel: built from this repository as the bundle builds it, installed apart
from the checkout, and every task of the bundle's two jobs run from it in a process of its
own, in the jobs' order and with the jobs' parameters, on the bundled HR sample."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from lakestreams.config import load_channel
from lakestreams.delta_io import table_names
from lakestreams.spark import ensure_schemas
from lakestreams.status import channel_status

#: What the wheel is built from (pyproject.toml's packages and its readme).
SOURCES = ("pyproject.toml", "README.md", "lakestreams", "bronze", "silver", "gold")
SAMPLE = REPO / "sample_data"
SCHEMA = "wheel_hr"
#: The sample's gold tables (the channel keeps job history out of the replica).
GOLD_TABLES = {"hr__regions", "hr__countries", "hr__locations", "hr__departments", "hr__employees"}


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{args[:4]} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``python -m build --wheel`` (the bundle's artifact build) on a copy of the sources,
    without build isolation: no index is needed."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(root / "dist"), str(src)])
    wheels = sorted((root / "dist").glob("*.whl"))
    assert [w.name for w in wheels] == ["lakestreams-0.1.0-py3-none-any.whl"]
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed into a folder of its own (its dependencies are this
    environment's), as a job's environment installs it."""
    site = tmp_path_factory.mktemp("site")
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site), str(wheel)])
    return site


def _env(site: Path) -> dict[str, str]:
    # The installed wheel comes first on the path; the checkout is not on it (the processes
    # run in a folder of their own). Small JVMs next to the tests' own.
    return {**os.environ, "PYTHONPATH": str(site), "LAKESTREAMS_DRIVER_MEMORY": "1g",
            "LAKESTREAMS_SHUFFLE_PARTITIONS": "2"}


def test_the_wheel_carries_the_dbt_project_and_the_entry_point(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("dbt_project.yml", "macros/lakestreams_apply.sql", "macros/generate_schema_name.sql",
              "macros/test_unique_key.sql", "models/README.md"):
        assert f"gold/dbt_project/{f}" in names, f
    entry_points = zipfile.ZipFile(wheel).read("lakestreams-0.1.0.dist-info/entry_points.txt").decode()
    # The jobs' python_wheel_task: package lakestreams, entry point lakestreams.
    assert "lakestreams = lakestreams.cli:main" in entry_points
    assert not any("__pycache__" in n or n.startswith(("tests/", "bench/", "notebooks/")) for n in names)
    # A job's environment installs the wheel with its dependencies: Spark and Delta are the
    # runtime's there, so the wheel asks for them only with the `local` extra.
    meta = zipfile.ZipFile(wheel).read("lakestreams-0.1.0.dist-info/METADATA").decode()
    requires = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    platform = [r for r in requires if r.lower().startswith(("pyspark", "delta-spark", "dbt-spark[session]"))]
    assert platform and all('extra == "local"' in r for r in platform), requires
    assert any(r.startswith("dbt-core") and "extra" not in r for r in requires), requires


def test_the_installed_wheel_is_what_runs(installed, tmp_path):
    done = _run([sys.executable, "-c", "import lakestreams.cli, gold.dbt; "
                 "print(lakestreams.cli.__file__); print(gold.dbt.project_root())"],
                cwd=tmp_path, env=_env(installed))
    module, project = done.stdout.split()
    assert Path(module).is_relative_to(installed) and Path(project) == installed / "gold" / "dbt_project"


def _tasks(resource: str, job: str) -> list[dict]:
    tasks = yaml.safe_load((REPO / "resources" / resource).read_text())["resources"]["jobs"][job]["tasks"]
    seen: set[str] = set()
    for t in tasks:  # listed in an order they can run in
        assert {d["task_key"] for d in t.get("depends_on", [])} <= seen, t["task_key"]
        seen.add(t["task_key"])
    return tasks


#: Where each job of the bundle is defined.
JOB_FILES = {"lakestreams_replication": "lakestreams.job.yml", "lakestreams_maintenance": "maintenance.job.yml"}


def _run_job(site: Path, cwd: Path, resource: str, job: str, variables: dict[str, str],
             parameters: dict[str, str] | None = None) -> dict[str, subprocess.CompletedProcess | bool | dict]:
    """Each task as the job runs it: a wheel task is the wheel's console script with the
    task's parameters (variables resolved; locally there is no Unity Catalog, so the
    ``--catalog`` pair is left out: two-part names); a condition task compares job
    parameters (their defaults unless ``parameters`` sets them); a run-job task runs the
    other job, with its job parameters, to its end (its tasks' outcomes); a task whose
    condition's outcome is not the one it waits for is excluded."""
    script = site / "bin" / "lakestreams"
    defaults = yaml.safe_load((REPO / "resources" / resource).read_text())["resources"]["jobs"][job].get("parameters", [])
    parameters = {**{p["name"]: p["default"] for p in defaults}, **(parameters or {})}
    outcome: dict[str, subprocess.CompletedProcess | bool | dict] = {}
    for task in _tasks(resource, job):
        key = task["task_key"]
        waits = {d["task_key"]: d.get("outcome") for d in task.get("depends_on", [])}
        if any(o is not None and str(outcome[k]).lower() != o for k, o in waits.items()) or \
                any(outcome[k] is None for k in waits):
            outcome[key] = None  # excluded, and so is what depends on it
            continue
        if "condition_task" in task:
            c = task["condition_task"]
            left, right = (_resolve(c[side], {}, parameters) for side in ("left", "right"))
            assert c["op"] in ("EQUAL_TO", "NOT_EQUAL"), c
            outcome[key] = (left == right) == (c["op"] == "EQUAL_TO")
            continue
        if "run_job_task" in task:
            other = re.fullmatch(r"\$\{resources\.jobs\.(\w+)\.id\}", task["run_job_task"]["job_id"]).group(1)
            outcome[key] = _run_job(site, cwd, JOB_FILES[other], other, variables,
                                    task["run_job_task"].get("job_parameters", {}))
            continue
        params = list(task["python_wheel_task"]["parameters"])
        i = params.index("--catalog")
        del params[i:i + 2]
        params = [_resolve(p, variables, parameters) for p in params]
        outcome[key] = _run([str(script), *params], cwd=cwd, env=_env(site))
    return outcome


def _resolve(text: str, variables: dict[str, str], parameters: dict[str, str]) -> str:
    for name, value in variables.items():
        text = text.replace(f"${{var.{name}}}", value)
    for name, value in parameters.items():
        text = text.replace(f"{{{{job.parameters.{name}}}}}", value)
    assert "${" not in text and "{{" not in text, f"unresolved: {text}"
    return text


@pytest.fixture(scope="module")
def replicated(spark, installed, tmp_path_factory):
    """The replication job on the HR sample: the bundled channel file, with this run's
    storage, and the sample's landing folders as the landing root."""
    root = tmp_path_factory.mktemp("wheel_run")
    channel = yaml.safe_load((SAMPLE / "hr_demo.yml").read_text())
    # The tests' warehouse: this session sees the tables the jobs write.
    # The state folder is the jobs' --state (the bundle's state_root), not the channel file's.
    channel["storage"] = {"warehouse": spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"),
                          "state": str(root / "unused_state"), "schema": "unused"}
    path = root / "hr_demo.yml"
    path.write_text(yaml.safe_dump(channel, sort_keys=False))
    variables = {"channel_file": str(path), "schema": SCHEMA, "landing_root": str(SAMPLE / "landing"),
                 "state_root": str(root / "state")}
    runs = _run_job(installed, root, "lakestreams.job.yml", "lakestreams_replication", variables)
    ch = load_channel(path)
    ch = ch.replace(storage=dataclasses.replace(ch.storage, schema=SCHEMA))
    ensure_schemas(spark, ch.storage)
    return ch, root, variables, runs


# The replication job runs from the wheel in the core tier: five cold processes on the HR
# sample, about 400 s here. The maintenance job (OPTIMIZE and VACUUM of every table, then a
# whole replication run with its re-execution: 1,315 s here) is the extended tier's
# (`make test-all`).
def test_the_replication_job_runs_from_the_wheel(spark, replicated):
    ch, root, _, runs = replicated
    assert list(runs) == ["bronze", "silver", "evolve", "gold", "audit", "errors_requested", "errors"]
    # Scheduled runs leave the error queue alone.
    assert runs["errors_requested"] is False and runs["errors"] is None
    # Checkpoints and dbt's files went to the jobs' --state.
    assert (root / "state" / "checkpoints").is_dir() and not (root / "unused_state").exists()
    # The DDL step ran before gold had tables: nothing to change.
    assert "no DDL to apply" in runs["evolve"].stdout
    assert "accounting          balanced" in runs["audit"].stdout
    gold = table_names(spark, ch.storage, "gold")
    assert GOLD_TABLES <= gold
    status = channel_status(spark, ch)
    assert {t.target for t in status.tables} == GOLD_TABLES
    assert all(t.errors == 0 and t.waiting == 0 and t.applied_scn is not None for t in status.tables)
    for t in GOLD_TABLES:
        assert spark.table(f"{ch.storage.schema_name('gold')}.{t}").limit(1).count() == 1, t


@pytest.mark.extended  # covered in the core: test_bronze maintains, test_error_queue re-executes, the job's wiring in test_bundle
def test_the_maintenance_job_runs_from_the_wheel_and_re_executes_errors_on_demand(spark, installed, replicated):
    ch, root, variables, _ = replicated
    runs = _run_job(installed, root, "maintenance.job.yml", "lakestreams_maintenance", variables,
                    {"execute_errors": "true"})
    assert runs["errors_requested"] is True
    maintained = {line.split()[-1] for line in runs["maintain"].stdout.splitlines() if line.startswith("maintained ")}
    assert f"`{SCHEMA}_bronze`.`change_records`" in maintained and any(f"`{SCHEMA}_silver`" in m for m in maintained)
    # The re-execution is a run of the replication job, which re-executes after its audit.
    replication = runs["errors"]
    assert replication["errors_requested"] is True
    # The sample's queue is empty: the task runs the re-execution and the gold stage on it.
    assert "accounting          balanced" in replication["errors"].stdout

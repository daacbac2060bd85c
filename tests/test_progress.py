"""The CLI's progress display: drawn from the pipeline's stage and step events on a
terminal, silent elsewhere (no Spark: the events are sent here as a run sends them)."""

from __future__ import annotations

import io
import threading

import pytest
from rich.console import Console

from lakestreams import timing
from lakestreams.cli import build_parser, stages_run
from lakestreams.progress import stage_progress
from lakestreams.timing import stage, step


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120, color_system=None), out


def _plan_step() -> None:
    with step("plan.order"):
        pass


def _run_events() -> None:
    with stage("bronze"):
        pass
    with stage("silver"):
        with step("silver.ledger"):
            pass
    with stage("gold"):
        # Plan steps run in threads.
        workers = [threading.Thread(target=_plan_step) for _ in range(3)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        with step("gold.dbt"):
            pass


def test_terminal_shows_stage_step_and_count():
    console, out = _terminal()
    with stage_progress(3, console):
        _run_events()
    shown = out.getvalue()
    assert "silver: silver.ledger" in shown
    assert "gold: plan.order" in shown and "gold: gold.dbt" in shown
    assert "1/3" in shown and "3/3" in shown
    assert timing.LISTENERS == []


def test_unknown_stage_count_still_shows_the_step():
    console, out = _terminal()
    with stage_progress(None, console):
        with stage("gold"), step("gold.plan"):
            pass
    assert "gold: gold.plan" in out.getvalue()


def test_label_names_the_work_before_its_first_stage():
    console, out = _terminal()
    with stage_progress(None, console, label="lakestreams maintain"):
        pass
    assert "lakestreams maintain" in out.getvalue()


def test_a_failing_display_never_stops_the_work(caplog):
    def broken(kind: str, name: str, done: bool) -> None:
        raise OSError("terminal gone")

    seen = []
    with timing.listening(broken), timing.listening(lambda *e: seen.append(e)):
        with stage("gold"), step("gold.plan"):
            pass
        assert len(timing.LISTENERS) == 1
    assert seen == [("stage", "gold", False), ("step", "gold.plan", False),
                    ("step", "gold.plan", True), ("stage", "gold", True)]
    assert "terminal gone" in caplog.text and timing.LISTENERS == []


def test_not_a_terminal_draws_nothing():
    out = io.StringIO()
    with stage_progress(3, Console(file=out, force_terminal=False)):
        assert timing.LISTENERS == []
        _run_events()
    assert out.getvalue() == ""


def test_listener_is_removed_when_the_command_fails():
    console, _ = _terminal()
    with pytest.raises(RuntimeError, match="stopped"), stage_progress(3, console):
        with stage("bronze"):
            raise RuntimeError("stopped")
    assert timing.LISTENERS == []


@pytest.mark.parametrize(("argv", "stages"), [
    (["run"], 3), (["demo"], 3), (["silver"], 1), (["gold"], 1),
    (["rebuild", "HR.EMPLOYEES"], None), (["errors", "execute", "--all"], None),
])
def test_stage_count_per_command(argv, stages):
    assert stages_run(build_parser().parse_args(argv)) == stages

"""The channel run lock, held by a real second process (no Spark needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakestreams.cli import main
from lakestreams.faults import KILL_ENV, kill_spec
from lakestreams.runlock import BUSY_EXIT, ChannelBusy, channel_lock

REPO = Path(__file__).resolve().parents[1]
HOLD = """
import sys, time
from lakestreams.runlock import channel_lock
with channel_lock("c", sys.argv[1], command="lakestreams run"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold(state: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(state), str(seconds)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_stops_at_once_and_names_the_holder(tmp_path):
    holder = hold(tmp_path, 30)
    try:
        start = time.monotonic()
        with pytest.raises(ChannelBusy, match=rf"channel c is being run by pid {holder.pid} on .*lakestreams run.*"
                                              r"changed nothing"):
            with channel_lock("c", tmp_path):
                pass
        assert time.monotonic() - start < 5
    finally:
        holder.kill()
        holder.wait()


def test_a_run_that_waits_goes_on_when_the_holder_finishes(tmp_path):
    holder = hold(tmp_path, 2)
    try:
        start = time.monotonic()
        with channel_lock("c", tmp_path, wait=60):
            assert time.monotonic() - start > 1  # it waited for the holder's two seconds
    finally:
        holder.wait()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = hold(tmp_path, 60)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with channel_lock("c", tmp_path):
        pass


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    with channel_lock("c", tmp_path), channel_lock("c", tmp_path):
        pass
    with channel_lock("c", tmp_path):  # and released at the outer block's end
        pass


def test_the_cli_refuses_a_busy_channel_before_starting_spark(tmp_path, capsys):
    channel = tmp_path / "ch.yml"
    channel.write_text("name: busy\nstorage: {warehouse: wh, state: state, schema: busy}\n"
                       "landing: [{name: src, path: landing/src}]\n")
    holder = hold(tmp_path / "state", 30)
    try:
        assert main(["run", "--channel", str(channel)]) == BUSY_EXIT
        assert "channel busy is being run by pid" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


def test_an_unknown_fault_point_is_refused(monkeypatch, capsys):
    monkeypatch.setenv(KILL_ENV, "silver.nowhere")
    assert main(["audit"]) == 2
    assert "no such fault point" in capsys.readouterr().err
    monkeypatch.setenv(KILL_ENV, "gold.merge#0")
    with pytest.raises(ValueError, match="hit number"):
        kill_spec()
    monkeypatch.setenv(KILL_ENV, "gold.merge#2")
    assert kill_spec() == ("gold.merge", 2)


def test_another_thread_of_the_process_is_refused(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    def enter():
        with channel_lock("c", tmp_path):
            pass

    with channel_lock("c", tmp_path), ThreadPoolExecutor(max_workers=1) as pool:
        with pytest.raises(ChannelBusy, match="channel c is being run by pid"):
            pool.submit(enter).result()

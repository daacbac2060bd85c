"""Local session starts are serialised: Ivy's shared jar cache takes one download at a time."""

from __future__ import annotations

import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: A process that holds the start lock for a second and reports when it held it.
HOLD = """
import sys, time
from pathlib import Path
from lakestreams.spark import jar_resolution_lock
with jar_resolution_lock(Path(sys.argv[1])):
    start = time.time()
    time.sleep(1.0)
    print(start, time.time())
"""


def test_processes_starting_at_once_take_the_start_lock_in_turn(tmp_path):
    lock = tmp_path / "start.lock"
    procs = [subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    spans = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        spans.append(tuple(map(float, out.split())))
    spans.sort()
    # Each holder starts after the one before let go: no two held the lock at once.
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)), spans
    assert spans[-1][1] - spans[0][0] >= 3.0


def test_a_start_that_must_wait_says_so_and_waits(tmp_path):
    from lakestreams.spark import jar_resolution_lock

    lock = tmp_path / "start.lock"
    with jar_resolution_lock(lock):
        proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # The waiting process has warned (stderr) and still holds nothing (no output yet).
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        line = proc.stderr.readline() if ready else ""
        if not ready:
            proc.kill()
        assert "another local Spark start holds" in line and str(lock) in line, line
        assert proc.poll() is None
        released = time.time()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert float(out.split()[0]) >= released

"""One writer per channel: the run lock.

Every command that writes a channel's tables holds an exclusive lock on
``<state>/run.lock`` while it runs. A second run started meanwhile either waits for it
(``wait`` seconds) or stops before it touches anything, saying who holds the lock. The
lock is the operating system's (``flock``): a run that dies, even by SIGKILL, lets go of
it at once, so there is no stale lock to clear by hand. On storage without ``flock``
(some FUSE mounts) the run goes on with a warning.

The lock keeps commands on one machine apart. Jobs on Databricks run on clusters of their
own, which it does not reach: there the replication job is the only job that writes gold
(error re-execution included), one run at a time (``max_concurrent_runs: 1``, queued; a
person re-executing from the error-queue notebook should do it between its runs), and
the maintenance job's OPTIMIZE and VACUUM meet its commits through Delta's optimistic
concurrency (a conflicting commit fails, and the task's retry runs it again).
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from lakestreams.errors import ReplicationError

log = logging.getLogger("lakestreams.runlock")

#: Exit status of a command that found its channel busy (EX_TEMPFAIL: try again later).
BUSY_EXIT = 75

_held: dict[tuple[Path, int], int] = {}  # (lock file, thread) → nesting depth
_guard = threading.Lock()


class ChannelBusy(ReplicationError):
    """Another process holds the channel's run lock."""


def lock_path(state: Path) -> Path:
    return Path(state) / "run.lock"


def holder(path: Path) -> str:
    """Who holds the lock, as the holder wrote it (pid, host, command, since when). A
    holder that has just taken the lock may not have written itself yet, and a run killed
    while holding it left its own details: those are read again for a moment."""
    info: dict = {}
    for _ in range(20):
        try:
            info = json.loads(path.read_text() or "{}")
        except (OSError, ValueError):
            info = {}
        if info and (info.get("host") != socket.gethostname() or _alive(int(info.get("pid", 0)))):
            break
        time.sleep(0.05)
    if not info:
        return "another process"
    return f"pid {info.get('pid')} on {info.get('host')} ({info.get('command')}, since {info.get('since')})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return pid > 0


@contextmanager
def channel_lock(channel_name: str, state: Path, wait: float = 0.0, command: str = "") -> Iterator[None]:
    """Hold the channel's run lock for the block; re-entrant within one thread. Raises
    ChannelBusy when another process (or thread) holds it for longer than ``wait`` seconds."""
    path = lock_path(state).resolve()
    key = (path, threading.get_ident())
    with _guard:
        nested = key in _held
        if nested:
            _held[key] += 1
    if nested:
        try:
            yield
        finally:
            with _guard:
                _held[key] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _acquire(fd, path, channel_name, wait):
            yield  # no flock on this storage: warned, run unguarded
            return
        with _guard:
            _held[key] = 1
        try:
            info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command or " ".join(sys.argv[:2]),
                    "since": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
            yield
        finally:
            with _guard:
                del _held[key]
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, channel_name: str, wait: float) -> bool:
    """Take the lock, polling up to ``wait`` seconds; False when the storage has no flock."""
    deadline = time.monotonic() + max(wait, 0.0)
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                log.warning("channel %s: the run lock %s cannot be taken on this storage (%s); "
                            "running without it", channel_name, path, e.strerror)
                return False
        if time.monotonic() >= deadline:
            how = f"waited {wait:g} s; " if wait > 0 else ""
            raise ChannelBusy(
                f"channel {channel_name} is being run by {holder(path)}: this command changed nothing "
                f"({how}run it again when that one has finished, or pass --wait SECONDS to wait for it)")
        if not announced:
            log.warning("channel %s is being run by %s; waiting up to %g s", channel_name, holder(path), wait)
            announced = True
        time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))

"""The CLI's progress display for long commands: a bar over the pipeline's stages, with the
stage and step running now (``rich``, drawn on standard error, only on a terminal).

It follows the stage and step events of ``lakestreams.timing``; it holds no pipeline logic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from lakestreams.timing import listening


@contextmanager
def stage_progress(stages: int | None, console: Console | None = None, label: str = "starting") -> Iterator[None]:
    """Show the block's progress: ``stages`` is how many pipeline stages it runs (None when
    the command decides that itself, e.g. a rebuild: the bar then only pulses); ``label``
    names the work until its first stage. Nothing is drawn where standard error is not a
    terminal (a scheduled job, a pipe, the tests)."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    progress = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=True,
    )
    task = progress.add_task(label, total=stages)
    now = {"stage": "", "step": ""}
    lock = threading.Lock()  # plan steps run in a few threads at once

    def on_event(kind: str, name: str, done: bool) -> None:
        with lock:
            if kind == "stage":
                now["stage"], now["step"] = name, ""
                if done and stages is not None:
                    progress.advance(task)
            elif not done:
                now["step"] = name
            now_label = now["stage"] + (f": {now['step']}" if now["step"] else "")
            progress.update(task, description=now_label or label)
            progress.refresh()

    with progress, listening(on_event):
        yield

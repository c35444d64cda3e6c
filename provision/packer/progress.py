"""The bake's progress display: a spinner with the current Packer step and the elapsed time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from provision.packer.runner import Event


@contextmanager
def packer_progress(title: str, console: Console | None = None) -> Iterator:
    """Yield an ``on_event`` callback; each Packer step (``==> ...``) becomes the spinner's text and a line."""
    console = console or Console(stderr=True)
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console
    ) as progress:
        task = progress.add_task(title)

        def on_event(event: Event) -> None:
            text = (event.message or "").strip()
            if text.startswith("==>"):
                progress.update(task, description=f"{title}: {text[4:]}")
                progress.console.print(f"  {text[4:]}", markup=False, highlight=False, soft_wrap=True)

        yield on_event

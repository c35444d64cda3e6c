"""What ``KubeApi.handle`` returns: a JSON reply or a watch stream (the HTTP server writes either)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Reply:
    status: int
    body: dict
    headers: dict = field(default_factory=dict)


@dataclass
class WatchStream:
    events: Iterator[dict]

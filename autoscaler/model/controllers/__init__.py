"""kube-controller-manager's controllers over the model's store (each module names the controller it follows).

A controller hears of changes through the store's listeners (it only notes what to look at: a listener must not
write) and does its work when the model settles (``ClusterModel._flush``), as a controller's work queue drains:
until nothing is left to do. Objects a controller creates go through the API server's admission when an API server
serves the model (``model.api_create``: quota, Pod Security, ServiceAccounts refuse what they refuse, and the
controller reports it as the real one does: a ``FailedCreate`` event and condition; the retired emulator did, issue
33), straight into the store otherwise (the simulator). Timers (back-offs, deadlines, TTLs) are events on the model's clock.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_ROUNDS = 200  # a controller loop that never settles is a bug: stop and say so


class Controller:
    """Base: ``kinds`` it watches; ``dirty`` holds (kind, namespace, name) keys or whole-kind markers."""

    kinds: tuple[str, ...] = ()

    def __init__(self, model) -> None:
        self.model = model
        self.dirty: set = set()

    @property
    def store(self):
        return self.model.store

    def on_change(self, kind: str, event: str, obj: dict) -> None:
        meta = obj["metadata"]
        self.dirty.add((kind, meta.get("namespace", ""), meta["name"], event))

    def sync(self) -> None:  # pragma: no cover - every controller overrides it
        self.dirty.clear()

    def later(self, delay_s: float, fn, *args) -> None:
        """Run ``fn`` after ``delay_s`` model seconds (scaled as the model's other delays)."""
        m = self.model
        m.queue.push(m.clock.now() + m.clock.scale(delay_s), fn, *args)


class Controllers:
    def __init__(self, model, controllers: Iterable[Controller]) -> None:
        self.model = model
        self.all = list(controllers)
        self.routes: dict[str, list[Controller]] = {}
        for c in self.all:
            for kind in c.kinds:
                self.routes.setdefault(kind, []).append(c)
        self.rounds_exceeded = 0

    def listener(self, kind: str, event: str, obj: dict) -> None:
        for c in self.routes.get(kind, ()):
            c.on_change(kind, event, obj)
        for c in self.routes.get("*", ()):
            c.on_change(kind, event, obj)

    @property
    def dirty(self) -> bool:
        return any(c.dirty for c in self.all)

    def run(self) -> None:
        for _ in range(MAX_ROUNDS):
            busy = [c for c in self.all if c.dirty]
            if not busy:
                return
            for c in busy:
                c.sync()
        self.rounds_exceeded += 1
        for c in self.all:
            c.dirty.clear()

    def named(self, cls):
        return next(c for c in self.all if isinstance(c, cls))

"""``make demo`` (``invoke demo``): the autoscaler's demo on a cluster set up as `invoke up` sets one up
(demos/day_one.py: the add-ons, the gang scheduler and the autoscaler's manifests applied with kubectl; the autoscaler
authenticated as its ServiceAccount); a manifest the API server refuses fails the demo with its message."""

from __future__ import annotations

from autoscaler.demo.run import main as run
from demos.day_one import day_one


def main(spec: str | None = None, out: str | None = None) -> None:
    run(spec, out, deploy=day_one)

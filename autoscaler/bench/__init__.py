"""Benchmarks that drive several parts together, above the parts they measure: the live controller against the
emulator (``live``), the Event writer against the emulator (``events``) and the cluster model on a trace
(``model``). The planner's own benchmark is ``autoscaler.core.bench``; ``autoscaler bench`` runs it."""

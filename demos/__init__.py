"""Demos that put several packages together (``labctl``, ``provision``, ``autoscaler``), above all of them:
``demos.researcher`` is ``invoke demo-researcher``; ``demos.autoscaler_demo`` is ``make demo``'s runner
(``demos.cluster`` its day one)."""

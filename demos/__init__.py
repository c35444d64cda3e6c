"""Demos that put several packages together (``labctl``, ``provision``, ``autoscaler``), above all of them:
``demos.researcher`` is ``invoke demo-researcher``. ``make demo`` (``autoscaler.demo``) needs only the
autoscaler and lives in it."""

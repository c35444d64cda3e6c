"""``python -m demos.researcher.emulator ARGS``: the emulator of ``make demo`` (same arguments) serving the
researcher's kinds as well (Jobs, Services, PodGroups, RBAC, claims, CSRs: autoscaler/emulator/researchers.py)."""

from __future__ import annotations

import sys

import autoscaler.emulator.__main__ as emulator_main
from autoscaler.emulator.researchers import install
from autoscaler.emulator.server import Emulator


class ResearcherEmulator(Emulator):
    def start(self) -> ResearcherEmulator:
        super().start()
        install(self)
        return self


if __name__ == "__main__":
    emulator_main.Emulator = ResearcherEmulator  # the standalone runner builds this one instead
    sys.exit(emulator_main.main())

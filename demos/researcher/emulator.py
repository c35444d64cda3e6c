"""``python -m demos.researcher.emulator ARGS``: the emulator of ``make demo`` (same arguments). Every kind the
researcher's path needs (Jobs, Services, PodGroups, RBAC, claims, CSRs) is served by the emulator itself now; the
module stays for the demo's process list."""

from __future__ import annotations

import sys

import autoscaler.emulator.__main__ as emulator_main

if __name__ == "__main__":
    sys.exit(emulator_main.main())

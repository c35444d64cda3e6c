"""The example spec's lab settings, as `invoke up` publishes them (provision/lab_settings.py)."""

from __future__ import annotations

from clusterspec.loader import load_spec
from labctl.settings import Settings
from provision.lab_settings import document

SETTINGS_TEXT = document(load_spec(), registry="123456789012.dkr.ecr.us-west-2.amazonaws.com",
                         code_bucket="dlr-results-123456789012")  # fmt: skip
SETTINGS = Settings.from_text(SETTINGS_TEXT, "test settings")

"""checkov (its own virtual environment, no downloads) finds nothing on the rendered roots and their modules;
every skip is justified inline."""

import json
import re
import subprocess

import pytest

from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, require_tool

SKIP = re.compile(r"#checkov:skip=([A-Z0-9_]+)(?::(.*))?")

pytestmark = pytest.mark.tool


@pytest.fixture(scope="module")
def report(rendered):
    checkov = require_tool("checkov", str(ROOT / ".checkov-venv/bin/checkov"))
    result = subprocess.run(
        [
            checkov,
            "-d",
            str(rendered),
            "--framework",
            "terraform",
            "--skip-download",
            "--compact",
            "--quiet",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.stdout.strip(), result.stderr[-2000:]
    return json.loads(result.stdout)


def test_checkov_reports_zero_failed_checks(report):
    failed = [(c["check_id"], c["resource"]) for c in report["results"].get("failed_checks", [])]
    assert report["summary"]["failed"] == 0, failed


def test_checkov_parsed_every_resource(report):
    assert report["summary"]["parsing_errors"] == 0
    assert report["summary"]["resource_count"] > 100
    assert report["summary"]["passed"] > 300


def test_every_skip_is_justified_inline():
    skips = [(p, m) for p in MODULES.rglob("*.tf") for m in SKIP.finditer(p.read_text())]
    assert skips, "no skips found: the pattern is wrong"
    for path, match in skips:
        reason = (match[2] or "").strip()
        assert len(reason) >= 20, f"{path.relative_to(ROOT)}: {match[1]} needs a reason"

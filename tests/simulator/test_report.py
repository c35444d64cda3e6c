from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

from simulator.metrics import JobOutcome, RunRecord, Sample, summarize
from simulator.report import write_report
from simulator.traces import Job

VOID = {"meta", "img", "br", "hr", "link", "input"}


class Balance(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.seen: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack}")
        else:
            self.stack.pop()


def _record(name: str, wait: float) -> RunRecord:
    rec = RunRecord(name, regions=("us-west-2", "us-east-1"), end_s=3600)
    rec.samples = [Sample(0, 8, 0, 0, 8, 24.0, (0, 0)), Sample(300, 8, 8, 8, 8, 24.0, (0, 8))]
    rec.jobs = {"a": JobOutcome(Job("a", 0, 8, 600), wait, wait + 600)}
    return rec


def test_report_is_valid_html_with_four_plots_and_a_table(tmp_path):
    records = [_record("batch", 300), _record("step <x>", 900)]
    figures = {r.policy: summarize(r, []) for r in records}
    path = write_report(tmp_path / "out", "Simulation", "trace t.csv", records, figures)
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>")
    parser = Balance()
    parser.feed(text)
    assert parser.errors == [] and parser.stack == []
    assert parser.seen.count("img") == 4 and parser.seen.count("table") == 1
    assert "step &lt;x&gt;" in text
    for data in re.findall(r'src="data:image/png;base64,([^"]+)"', text):
        assert base64.b64decode(data).startswith(b"\x89PNG")
    row = re.search(r"<tr><th>batch</th>(.*?)</tr>", text).group(1)
    assert "<td>300.0</td>" in row  # the p50 wait

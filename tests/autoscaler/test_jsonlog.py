import io
import json
import logging

from autoscaler import jsonlog


def test_one_json_object_per_line_with_extras():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    jsonlog.setup("info", stream)
    try:
        logging.getLogger("autoscaler.test").info("action", extra={"group": "g", "desired": 3})
        logging.getLogger("autoscaler.test").debug("hidden")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    [line] = stream.getvalue().splitlines()
    record = json.loads(line)
    assert (
        record["message"] == "action" and record["level"] == "info" and record["logger"] == "autoscaler.test"
    )
    assert record["group"] == "g" and record["desired"] == 3 and record["time"].endswith("Z")

"""Fault injection into a boto3 client through botocore's event hooks (moto fakes no failures)."""

from __future__ import annotations

from datetime import datetime

from botocore.awsrequest import AWSResponse


class _Raw:
    def __init__(self, body: bytes):
        self._body = body

    def stream(self, **_):
        yield self._body


def http_error(client, operation: str, status: int, code: str, times: int | None = None) -> dict:
    """Make ``operation`` answer ``status``/``code`` (``times`` times, or always); returns a call counter."""
    counter = {"calls": 0}
    body = (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>injected {code}</Message>"
        "</Error><RequestId>x</RequestId></ErrorResponse>"
    ).encode()

    def handler(request, **_):
        counter["calls"] += 1
        if times is not None and counter["calls"] > times:
            return None
        return AWSResponse(request.url, status, {"Content-Type": "text/xml"}, _Raw(body))

    client.meta.events.register(f"before-send.{client.meta.service_model.service_name}.{operation}", handler)
    return counter


def failed_activities(client, activities: list[dict]) -> None:
    """DescribeScalingActivities returns ``activities`` (moto returns none): each
    ``{"group", "message", "at": datetime (its end), "started"?: datetime, "description"?, "status"?}``."""

    def handler(**_):
        parsed = {
            "Activities": [
                {
                    "ActivityId": f"act-{i}",
                    "AutoScalingGroupName": a["group"],
                    "Description": a.get(
                        "description", "Launching a new EC2 instance.  Status Reason: failed"
                    ),
                    "Cause": "a user request update of AutoScalingGroup constraints",
                    "StartTime": a.get("started", a["at"]),
                    "EndTime": a["at"],
                    "StatusCode": a.get("status", "Failed"),
                    "StatusMessage": a["message"],
                    "Progress": 100,
                }
                for i, a in enumerate(
                    sorted(activities, key=lambda a: a.get("started", a["at"]), reverse=True)
                )
            ]
        }
        return AWSResponse("http://injected", 200, {}, _Raw(b"")), parsed

    client.meta.events.register("before-call.autoscaling.DescribeScalingActivities", handler)


def hide_instances(client, group: str) -> None:
    """DescribeAutoScalingGroups shows ``group`` without instances (they never launched)."""

    def handler(parsed, **_):
        for g in parsed.get("AutoScalingGroups", []):
            if g["AutoScalingGroupName"] == group:
                g["Instances"] = []

    client.meta.events.register("after-call.autoscaling.DescribeAutoScalingGroups", handler)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))

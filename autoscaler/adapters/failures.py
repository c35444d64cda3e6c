"""Classify failed Auto Scaling activities into the planner's failure reasons.

A launch fails with a status message such as ``We currently do not have sufficient p3.16xlarge capacity in the
Availability Zone you requested (us-west-2a)...`` or an error code (``InsufficientInstanceCapacity``,
``VcpuLimitExceeded``...). The planner only needs the kind of failure: it backs the group off and, for capacity
and limits, spills the pods over to the next region.
"""

from __future__ import annotations

import re

INSUFFICIENT_CAPACITY = "insufficient-capacity"
INSTANCE_LIMIT = "instance-limit"
VCPU_LIMIT = "vcpu-limit"
SPOT = "spot"
UNKNOWN = "unknown"
REASONS = (INSUFFICIENT_CAPACITY, INSTANCE_LIMIT, VCPU_LIMIT, SPOT, UNKNOWN)

# First match wins: vCPU limits before instance limits (both say "limit"), spot before capacity (spot capacity
# errors are spot failures: the on-demand pool of the same type may still have room).
_RULES: list[tuple[str, re.Pattern]] = [
    (VCPU_LIMIT, re.compile(r"VcpuLimitExceeded|vCPU (capacity|limit)", re.I)),
    (
        SPOT,
        re.compile(
            r"MaxSpotInstanceCountExceeded|SpotMaxPriceTooLow|\bspot\b.*(capacity|request|price|limit)|"
            r"UnfulfillableCapacity|capacity-not-available",
            re.I,
        ),
    ),
    (
        INSTANCE_LIMIT,
        re.compile(r"InstanceLimitExceeded|You have requested more instances|instance limit", re.I),
    ),
    (
        INSUFFICIENT_CAPACITY,
        re.compile(
            r"InsufficientInstanceCapacity|InsufficientCapacity|do(es)? not have sufficient .*capacity|"
            r"insufficient capacity",
            re.I,
        ),
    ),
]

_COUNT = re.compile(r"Launching (\d+) new EC2 instances", re.I)


def classify(message: str) -> str:
    """One of REASONS for an activity's StatusMessage (or StatusCode + message)."""
    for reason, pattern in _RULES:
        if pattern.search(message or ""):
            return reason
    return UNKNOWN


def missing_instances(description: str) -> int:
    """How many instances a failed launch activity was for: ``Launching 3 new EC2 instances`` -> 3, else 1."""
    m = _COUNT.search(description or "")
    return int(m.group(1)) if m else 1

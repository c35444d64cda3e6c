"""Kubernetes' rules for label keys, label values and taints (apimachinery's validation, as regexes)."""

from __future__ import annotations

import re

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_key_problem(key: str) -> str | None:
    """Why Kubernetes would reject ``key`` as a label (or taint) key, or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return "has more than one '/'"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"prefix {prefix!r} must be a lowercase DNS subdomain (e.g. example.com) of at most 253 characters"
    if not name or len(name) > 63 or not _NAME.match(name):
        return (
            f"name {name!r} must be 1-63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if value == "":
        return None
    if len(value) > 63 or not _NAME.match(value):
        return (
            "must be empty or 1-63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None

"""ISO-8601 timestamps in and out (always timezone-aware, UTC when no zone is given)."""

from __future__ import annotations

from datetime import UTC, datetime

MIN_YEAR, MAX_YEAR = 1970, 2999


def parse_time(value: object, where: str, errors: list[str]) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        errors.append(f"{where}: expected an ISO-8601 time such as 2025-01-31T12:00:00Z, got {value!r}")
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        errors.append(f"{where}: {value!r} is not an ISO-8601 time; use e.g. 2025-01-31T12:00:00Z")
        return None
    if not MIN_YEAR <= t.year <= MAX_YEAR:
        # Kubernetes writes RFC 3339 times of its own clock; a year outside this range is a corrupt or made-up
        # value, and arithmetic on it (back-offs, timeouts) would overflow
        errors.append(
            f"{where}: {value!r} is not a plausible time; expected a year from {MIN_YEAR} to {MAX_YEAR}"
        )
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def show_time(t: datetime | None) -> str | None:
    if t is None:
        return None
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")

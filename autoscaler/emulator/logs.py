"""``GET /api/v1/namespaces/{ns}/pods/{name}/log``: a container's output, as kube-apiserver and the kubelet serve it.

The emulator runs no processes, so what a container prints is written by whoever plays it (a test, a demo) with
:meth:`ContainerLogs.write`; everything else follows the real system:

- which container (kubernetes pkg/registry/core/pod/strategy.go, ``LogLocation`` and ``validateContainer``):
  ``container`` may be omitted only for a single-container pod, else 400 "a container name must be specified
  for pod P, choose one of: [a b]" (init containers first, as ``VisitContainers`` lists them); a name the pod
  does not have is 400 "container C is not valid for pod P"; a pod without a node has no log location, and
  the API server answers 200 with an empty body (apiserver ``LocationStreamer`` without a location);
- whether it has output yet (kubelet ``validateContainerLogStatus``): a waiting container is 400 'container
  "C" in pod "P" is waiting to start: <reason>'; ``previous`` needs a terminated earlier instance, which the
  model never has (containers are not restarted), so it is 400 'previous terminated container "C" in pod "P"
  not found';
- the options (``PodLogOptions``): ``tailLines`` (the last N lines), ``limitBytes``, ``sinceSeconds``,
  ``timestamps`` (RFC 3339 with nanoseconds and a space before each line), ``follow`` (the stream stays open
  and carries new lines until the container terminates or the pod is gone); a negative number is 422 Invalid
  (``ValidatePodLogOptions``), a non-number 400;
- the reply is ``text/plain``, streamed (chunked) when following.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from autoscaler.emulator import resources as R
from autoscaler.emulator.selectors import BadRequest
from autoscaler.model.store import Invalid, NotFound

FOLLOW_POLL_S = 0.05


@dataclass
class Text:
    """A ``text/plain`` reply: its chunks are written as they come (chunked) when ``stream`` is set."""

    chunks: Iterator[bytes]
    stream: bool = False
    status: int = 200


@dataclass
class _Line:
    t: float
    text: str  # with its newline


@dataclass
class ContainerLogs:
    """What each container printed, by (namespace, pod uid, container): a pod recreated under the same name
    starts with an empty log, as a new pod does."""

    _lines: dict[tuple[str, str, str], list[_Line]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, api, namespace: str, pod: str, container: str, text: str) -> None:
        """The container prints ``text``; only a started container can (ValueError otherwise)."""
        with api.model.lock:
            api.model.advance()  # as every API call does: the model is current when looked at
            obj = api._get(_pods(), namespace, pod)
            state = _state(obj, container)
            if state is None or "waiting" in state:
                raise ValueError(f"container {container!r} of pod {namespace}/{pod} has not started")
            if "terminated" in state:
                raise ValueError(f"container {container!r} of pod {namespace}/{pod} has terminated")
            now = api.model.now()
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        with self._lock:
            self._lines.setdefault(_key(obj, container), []).extend(_Line(now, ln) for ln in lines)

    def lines(self, obj: dict, container: str, start: int = 0) -> list[_Line]:
        with self._lock:
            return list(self._lines.get(_key(obj, container), ())[start:])


def _pods() -> R.Resource:
    return R.BY_PATH[("", "v1", "pods")]


def _key(obj: dict, container: str) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta.get("uid") or meta["name"], container)


def _state(obj: dict, container: str) -> dict | None:
    for cs in (obj.get("status") or {}).get("containerStatuses") or ():
        if cs.get("name") == container:
            return cs.get("state") or {}
    return None


def _number(query: dict, name: str) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None
    return value


def _flag(query: dict, name: str) -> bool:
    return query.get(name, "false").lower() in ("1", "true")


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


def serve(api, namespace: str, name: str, query: dict) -> Text:
    """The log request; called with ``api.model.lock`` held, returns what the server writes after."""
    tail, limit, since = (_number(query, k) for k in ("tailLines", "limitBytes", "sinceSeconds"))
    for field_name, value, least in (
        ("tailLines", tail, 0),
        ("limitBytes", limit, 1),
        ("sinceSeconds", since, 1),
    ):
        if value is not None and value < least:
            err = Invalid(
                f'PodLogOptions "{name}" is invalid: {field_name}: Invalid value: {value}: '
                f"must be greater than{' or equal to' if least == 0 else ''} {0 if least == 0 else least - 1}"
            )
            err.name, err.kind = name, "PodLogOptions"
            raise err
    pod = api._get(_pods(), namespace, name)
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("initContainers") or ()] + [
        c["name"] for c in spec.get("containers") or ()
    ]
    container = query.get("container") or ""
    if not container:
        regular = spec.get("containers") or ()
        if len(regular) != 1:
            raise BadRequest(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
            )
        container = regular[0]["name"]
    elif container not in names:
        raise BadRequest(f"container {container} is not valid for pod {name}")
    if not spec.get("nodeName"):
        return Text(iter(()))
    state = _state(pod, container) or {"waiting": {"reason": "ContainerCreating"}}
    if _flag(query, "previous"):
        raise BadRequest(f'previous terminated container "{container}" in pod "{name}" not found')
    if "waiting" in state:
        reason = (state["waiting"] or {}).get("reason") or "ContainerCreating"
        raise BadRequest(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    logs: ContainerLogs = api.logs
    now = api.model.now()
    lines = logs.lines(pod, container)
    seen = len(lines)
    if since is not None:
        lines = [ln for ln in lines if ln.t >= now - since]
    if tail is not None:
        lines = lines[len(lines) - tail :] if tail else []
    timestamps = _flag(query, "timestamps")

    def render(batch: list[_Line]) -> bytes:
        return "".join((f"{_stamp(ln.t)} " if timestamps else "") + ln.text for ln in batch).encode()

    first = render(lines)
    if limit is not None:
        first = first[:limit]
    follow = _flag(query, "follow") and "terminated" not in state
    if not follow:
        return Text(iter([first]) if first else iter(()))

    def stream() -> Iterator[bytes]:
        sent = len(first)
        if first:
            yield first
        nonlocal seen
        while not api.stopping and (limit is None or sent < limit):
            time.sleep(FOLLOW_POLL_S)
            with api.model.lock:
                api.model.advance()
                try:
                    current = api._get(_pods(), namespace, name)
                except NotFound:
                    return
            fresh = logs.lines(current, container, seen)
            seen += len(fresh)
            if fresh:
                chunk = render(fresh)
                if limit is not None:
                    chunk = chunk[: limit - sent]
                sent += len(chunk)
                yield chunk
            if "terminated" in (_state(current, container) or {}):
                return

    return Text(stream(), stream=True)

"""What the model reads from pods: requests, gang membership, duration, ownership, label selectors."""

from __future__ import annotations

from clusterspec.names import POD_GROUP_LABEL, POD_GROUP_SIZE_ANNOTATION
from simulator.model.quantity import parse_quantity

DURATION_ANNOTATION = "research.cluster/duration-s"  # seconds a pod runs once started; absent: until deleted
EXIT_CODE_ANNOTATION = (
    "research.cluster/exit-code"  # the simulated container's exit code when it ends (default 0)
)
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
JOB_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
TERMINAL = frozenset({"Succeeded", "Failed"})


def requests(pod: dict) -> dict[str, float]:
    """Effective requests (containers summed, at least the largest init container) plus one ``pods`` slot."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or ():
        for r, q in (((c.get("resources") or {}).get("requests")) or {}).items():
            total[r] = total.get(r, 0.0) + parse_quantity(q)
    for c in spec.get("initContainers") or ():
        for r, q in (((c.get("resources") or {}).get("requests")) or {}).items():
            total[r] = max(total.get(r, 0.0), parse_quantity(q))
    for r, q in (spec.get("overhead") or {}).items():
        total[r] = total.get(r, 0.0) + parse_quantity(q)
    total["pods"] = 1.0
    return total


def gang_key(pod: dict) -> tuple[str, str, str] | None:
    """Pods with the same key bind all-or-nothing: the declared PodGroup (label scheduling.x-k8s.io/pod-group),
    which is how the Coscheduling plugin groups pods (scheduler-plugins, pkg/coscheduling). An Indexed Job alone
    is no gang: the scheduler places its pods one by one (autoscaler/core/snapshot.py reads gangs the same way)."""
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    if labels.get(POD_GROUP_LABEL):
        return ("pod-group", meta.get("namespace", "default"), labels[POD_GROUP_LABEL])
    return None


def distributed_key(pod: dict) -> tuple[str, str, str] | None:
    """The workers of one distributed job, which die together (a training job fails with any worker): the
    declared gang, else an Indexed Job's pods by job name."""
    key = gang_key(pod)
    if key is not None:
        return key
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    if JOB_INDEX_LABEL in labels:
        job = labels.get(JOB_NAME_LABEL) or (owner_name(pod) if owner_kind(pod) == "Job" else None)
        if job:
            return ("job", meta.get("namespace", "default"), job)
    return None


def gang_size(pod: dict) -> int | None:
    """A PodGroup's declared size (annotation research.cluster/pod-group-size); None: every member seen."""
    if not (pod["metadata"].get("labels") or {}).get(POD_GROUP_LABEL):
        return None
    value = (pod["metadata"].get("annotations") or {}).get(POD_GROUP_SIZE_ANNOTATION)
    return int(value) if value else None


def job_key(pod: dict) -> tuple[str, str, str]:
    """What counts as one job: the gang, else the Job named by the job-name label, else the pod itself."""
    key = distributed_key(pod)
    if key:
        return key
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    if labels.get(JOB_NAME_LABEL):
        return ("job", meta.get("namespace", "default"), labels[JOB_NAME_LABEL])
    return ("pod", meta.get("namespace", "default"), meta["name"])


def exit_code(pod: dict) -> int:
    value = (pod["metadata"].get("annotations") or {}).get(EXIT_CODE_ANNOTATION)
    try:
        return int(value) if value not in (None, "") else 0
    except ValueError:
        return 0


def duration(pod: dict) -> float | None:
    value = (pod["metadata"].get("annotations") or {}).get(DURATION_ANNOTATION)
    return float(value) if value not in (None, "") else None


def _owner(pod: dict) -> dict:
    refs = pod["metadata"].get("ownerReferences") or ()
    return next((r for r in refs if r.get("controller")), refs[0] if refs else {})


def owner_kind(pod: dict) -> str | None:
    return _owner(pod).get("kind")


def owner_name(pod: dict) -> str | None:
    return _owner(pod).get("name")


def is_daemonset(pod: dict) -> bool:
    return owner_kind(pod) == "DaemonSet"


def is_job_pod(pod: dict) -> bool:
    return owner_kind(pod) == "Job" or bool((pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL))


def is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL


def selector_matches(selector: dict | None, labels: dict | None) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions); an empty selector matches everything."""
    labels = labels or {}
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True

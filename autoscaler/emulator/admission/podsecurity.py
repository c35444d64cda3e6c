"""Pod Security admission, as the built-in ``PodSecurity`` plugin runs it (k8s.io/pod-security-admission).

The policy comes from the namespace's labels (``pod-security.kubernetes.io/enforce``, ``-warn``, ``-audit`` and
their ``-version``: ``latest`` or ``v1.<minor>``; api/helpers.go ``PolicyToEvaluate``): unlabelled is
``privileged`` (kubeadm configures no other default), a warn level defaults to a stricter enforce level, a bad
label is 422 on the namespace and fails closed for enforce. Pods that violate the enforce level are refused with
``pods "<name>" is forbidden: violates PodSecurity "restricted:latest": <detail>``; controllers' pod templates
(Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates) and
pods that pass enforce get ``Warning: would violate PodSecurity "<level>:<version>": <detail>`` for the warn level
(the audit level goes to the audit log, which the emulator does not keep). Raising a namespace's enforce level
warns about the existing pods that violate it (admission.go ``EvaluatePodsInNamespace``).

The checks follow policy/check_*.go one for one: ids, levels, the version each applies from, which baseline
checks a restricted one overrides, the evaluation order (baseline ids sorted, then restricted ids sorted) and the
reason and detail texts. Evaluated against the pod as defaulted (a ``hostNetwork`` pod's ports have ``hostPort``
set by then).
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.emulator.errors import Invalid

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
LABEL = "pod-security.kubernetes.io/"


def _quote(items) -> str:
    items = list(items)
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(one: str, many: str, n: int) -> str:
    return one if n == 1 else many


def _containers(spec: dict):
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or ()


def _sc(c: dict) -> dict:
    return c.get("securityContext") or {}


def _windows(spec: dict) -> bool:
    return ((spec.get("os") or {}).get("name")) == "windows"


def _userns(spec: dict) -> bool:
    return spec.get("hostUsers") is False


Result = tuple[str, str] | None  # (reason, detail) when forbidden


# --- baseline ----------------------------------------------------------------------------------------------
def host_namespaces(meta, spec) -> Result:
    found = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    return ("host namespaces", ", ".join(found)) if found else None


def privileged(meta, spec) -> Result:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged") is True]
    if bad:
        return (
            "privileged",
            f"{_plural('container', 'containers', len(bad))} {_quote(bad)} must not set securityContext.privileged=true",
        )
    return None


CAPS_BASELINE = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}  # fmt: skip


def capabilities_baseline(meta, spec) -> Result:
    bad, caps = [], set()
    for c in _containers(spec):
        added = [x for x in ((_sc(c).get("capabilities") or {}).get("add") or ()) if x not in CAPS_BASELINE]
        if added:
            bad.append(c.get("name", ""))
            caps.update(added)
    if bad:
        return "non-default capabilities", (f"{_plural('container', 'containers', len(bad))} {_quote(bad)} must not "
                                            f"include {_quote(sorted(caps))} in securityContext.capabilities.add")  # fmt: skip
    return None


def host_path_volumes(meta, spec) -> Result:
    bad = [v.get("name", "") for v in spec.get("volumes") or () if v.get("hostPath") is not None]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)}") if bad else None


def host_ports(meta, spec) -> Result:
    bad, ports = [], set()
    for c in _containers(spec):
        used = [p.get("hostPort") for p in c.get("ports") or () if p.get("hostPort")]
        if used:
            bad.append(c.get("name", ""))
            ports.update(str(p) for p in used)
    if bad:
        return "hostPort", (f"{_plural('container', 'containers', len(bad))} {_quote(bad)} {_plural('uses', 'use', len(bad))} "
                            f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")  # fmt: skip
    return None


def _probe_hosts(probe) -> list[str]:
    if not isinstance(probe, dict):
        return []
    return [
        h for h in ((probe.get("httpGet") or {}).get("host"), (probe.get("tcpSocket") or {}).get("host")) if h
    ]


def host_probes(meta, spec) -> Result:
    bad, hosts = set(), set()
    for c in _containers(spec):
        found = []
        for key in ("livenessProbe", "readinessProbe", "startupProbe"):
            found += _probe_hosts(c.get(key))
        for key in ("postStart", "preStop"):
            found += _probe_hosts((c.get("lifecycle") or {}).get(key))
        if found:
            bad.add(c.get("name", ""))
            hosts.update(found)
    if bad:
        return "probe or lifecycle host", (
            f"{_plural('container', 'containers', len(bad))} {_quote(sorted(bad))} {_plural('uses', 'use', len(bad))} "
            f"{_plural('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} {_quote(sorted(hosts))}")  # fmt: skip
    return None


def app_armor(meta, spec) -> Result:
    setters, values = [], set()
    allowed = ("RuntimeDefault", "Localhost")
    profile = (spec.get("securityContext") or {}).get("appArmorProfile") or {}
    if profile and profile.get("type") not in allowed:
        setters.append("pod")
        values.add(profile.get("type", ""))
    bad = []
    for c in _containers(spec):
        p = _sc(c).get("appArmorProfile") or {}
        if p and p.get("type") not in allowed:
            bad.append(c.get("name", ""))
            values.add(p.get("type", ""))
    if bad:
        setters.append(f"{_plural('container', 'containers', len(bad))} {_quote(bad)}")
    annotations = sorted(
        f'{k}="{v}"' for k, v in (meta.get("annotations") or {}).items()
        if k.startswith("container.apparmor.security.beta.kubernetes.io/")
        and not (not v or v == "runtime/default" or v.startswith("localhost/"))
    )  # fmt: skip
    listed = sorted(values) + annotations
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if setters:
        return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(listed)),
                f"{' and '.join(setters)} must not set AppArmor profile type to {_quote(listed)}")  # fmt: skip
    return None


def _selinux(allowed_types: set[str]) -> Callable:
    def check(meta, spec) -> Result:
        setters, types = [], set()
        flags = {"user": False, "role": False}

        def valid(opts: dict) -> bool:
            ok = True
            if opts.get("type", "") not in allowed_types:
                ok = False
                types.add(opts.get("type", ""))
            for k in ("user", "role"):
                if opts.get(k):
                    ok, flags[k] = False, True
            return ok

        pod_opts = (spec.get("securityContext") or {}).get("seLinuxOptions")
        if pod_opts is not None and not valid(pod_opts):
            setters.append("pod")
        bad = [c.get("name", "") for c in _containers(spec)
               if _sc(c).get("seLinuxOptions") is not None and not valid(_sc(c)["seLinuxOptions"])]  # fmt: skip
        if bad:
            setters.append(f"{_plural('container', 'containers', len(bad))} {_quote(bad)}")
        if not setters:
            return None
        data = []
        if types:
            data.append(f"{_plural('type', 'types', len(types))} {_quote(sorted(types))}")
        if flags["user"]:
            data.append("user may not be set")
        if flags["role"]:
            data.append("role may not be set")
        return (
            "seLinuxOptions",
            f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
        )

    return check


def _proc_mount(relax: bool) -> Callable:
    def check(meta, spec) -> Result:
        if relax and _userns(spec):
            return None
        bad, kinds = [], set()
        for c in _containers(spec):
            pm = _sc(c).get("procMount")
            if pm is not None and pm != "Default":
                bad.append(c.get("name", ""))
                kinds.add(pm)
        if bad:
            return "procMount", (f"{_plural('container', 'containers', len(bad))} {_quote(bad)} must not set "
                                 f"securityContext.procMount to {_quote(sorted(kinds))}")  # fmt: skip
        return None

    return check


def seccomp_baseline(meta, spec) -> Result:
    setters, values = [], set()
    ok = ("RuntimeDefault", "Localhost")
    p = (spec.get("securityContext") or {}).get("seccompProfile")
    if p is not None and p.get("type") not in ok:
        setters.append("pod")
        values.add(p.get("type", ""))
    bad = []
    for c in _containers(spec):
        cp = _sc(c).get("seccompProfile")
        if cp is not None and cp.get("type") not in ok:
            bad.append(c.get("name", ""))
            values.add(cp.get("type", ""))
    if bad:
        setters.append(f"{_plural('container', 'containers', len(bad))} {_quote(bad)}")
    if setters:
        return (
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}",
        )
    return None


SYSCTLS = {
    0: {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"},
    27: {"net.ipv4.ip_local_reserved_ports"},
    29: {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
         "net.ipv4.tcp_keepalive_probes"},
    32: {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"},
    37: {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"},
}  # fmt: skip


def _sysctls(minor: int) -> Callable:
    allowed = set().union(*(v for k, v in SYSCTLS.items() if k <= minor))

    def check(meta, spec) -> Result:
        bad = [s.get("name", "") for s in (spec.get("securityContext") or {}).get("sysctls") or ()
               if s.get("name") not in allowed]  # fmt: skip
        return ("forbidden sysctls", ", ".join(bad)) if bad else None

    return check


def windows_host_process(meta, spec) -> Result:
    bad = [
        c.get("name", "")
        for c in _containers(spec)
        if (_sc(c).get("windowsOptions") or {}).get("hostProcess") is True
    ]
    setters = (
        ["pod"]
        if ((spec.get("securityContext") or {}).get("windowsOptions") or {}).get("hostProcess") is True
        else []
    )
    if bad:
        setters.append(f"{_plural('container', 'containers', len(bad))} {_quote(bad)}")
    if setters:
        return (
            "hostProcess",
            f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true",
        )
    return None


# --- restricted --------------------------------------------------------------------------------------------
def _not_windows(check: Callable) -> Callable:
    return lambda meta, spec: None if _windows(spec) else check(meta, spec)


def _allow_privilege_escalation(meta, spec) -> Result:
    bad = [
        c.get("name", "") for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False
    ]
    if bad:
        return "allowPrivilegeEscalation != false", (f"{_plural('container', 'containers', len(bad))} {_quote(bad)} "
                                                     "must set securityContext.allowPrivilegeEscalation=false")  # fmt: skip
    return None


def _capabilities_restricted(meta, spec) -> Result:
    missing, adding, caps = [], [], set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if capabilities is None:
            missing.append(c.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or ()):
            missing.append(c.get("name", ""))
        added = [x for x in capabilities.get("add") or () if x != "NET_BIND_SERVICE"]
        if added:
            adding.append(c.get("name", ""))
            caps.update(added)
    details = []
    if missing:
        details.append(f'{_plural("container", "containers", len(missing))} {_quote(missing)} must set '
                       'securityContext.capabilities.drop=["ALL"]')  # fmt: skip
    if adding:
        details.append(f"{_plural('container', 'containers', len(adding))} {_quote(adding)} must not include "
                       f"{_quote(sorted(caps))} in securityContext.capabilities.add")  # fmt: skip
    return ("unrestricted capabilities", "; ".join(details)) if details else None


ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
                   "projected", "secret")  # fmt: skip
KNOWN_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs",
                 "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte",
                 "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")  # fmt: skip


def restricted_volumes(meta, spec) -> Result:
    bad, types = [], set()
    for v in spec.get("volumes") or ():
        if any(v.get(k) is not None for k in ALLOWED_VOLUMES):
            continue
        bad.append(v.get("name", ""))
        types.add(next((k for k in KNOWN_VOLUMES if v.get(k) is not None), "unknown"))
    if bad:
        return "restricted volume types", (
            f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)} {_plural('uses', 'use', len(bad))} "
            f"{_plural('restricted volume type', 'restricted volume types', len(types))} {_quote(sorted(types))}")  # fmt: skip
    return None


def _run_as_non_root(relax: bool) -> Callable:
    def check(meta, spec) -> Result:
        if relax and _userns(spec):
            return None
        setters = []
        pod_value = (spec.get("securityContext") or {}).get("runAsNonRoot")
        pod_ok = pod_value is True
        if pod_value is False:
            setters.append("pod")
        explicit, implicit = [], []
        for c in _containers(spec):
            v = _sc(c).get("runAsNonRoot")
            if v is not None:
                if v is False:
                    explicit.append(c.get("name", ""))
            elif not pod_ok:
                implicit.append(c.get("name", ""))
        if explicit:
            setters.append(f"{_plural('container', 'containers', len(explicit))} {_quote(explicit)}")
        if setters:
            return (
                "runAsNonRoot != true",
                f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false",
            )
        if implicit:
            return "runAsNonRoot != true", (f"pod or {_plural('container', 'containers', len(implicit))} "
                                            f"{_quote(implicit)} must set securityContext.runAsNonRoot=true")  # fmt: skip
        return None

    return check


def _run_as_user(relax: bool) -> Callable:
    def check(meta, spec) -> Result:
        if relax and _userns(spec):
            return None
        setters = ["pod"] if (spec.get("securityContext") or {}).get("runAsUser") == 0 else []
        bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
        if bad:
            setters.append(f"{_plural('container', 'containers', len(bad))} {_quote(bad)}")
        return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None

    return check


def _seccomp_restricted(meta, spec) -> Result:
    ok = ("RuntimeDefault", "Localhost")
    setters, values = [], set()
    pod = (spec.get("securityContext") or {}).get("seccompProfile")
    pod_set = False
    if pod is not None:
        if pod.get("type") not in ok:
            setters.append("pod")
            values.add(pod.get("type", ""))
        else:
            pod_set = True
    explicit, implicit = [], []
    for c in _containers(spec):
        cp = _sc(c).get("seccompProfile")
        if cp is not None:
            if cp.get("type") not in ok:
                explicit.append(c.get("name", ""))
                values.add(cp.get("type", ""))
        elif not pod_set:
            implicit.append(c.get("name", ""))
    if explicit:
        setters.append(f"{_plural('container', 'containers', len(explicit))} {_quote(explicit)}")
    if setters:
        return (
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}",
        )
    if implicit:
        return "seccompProfile", (f"pod or {_plural('container', 'containers', len(implicit))} {_quote(implicit)} "
                                  'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')  # fmt: skip
    return None


# (id, level, [(minimum minor, check, overridden baseline ids)]) as policy/check_*.go register them
CHECKS: list[tuple[str, str, list[tuple[int, Callable, tuple[str, ...]]]]] = [
    ("appArmorProfile", BASELINE, [(0, app_armor, ())]),
    ("capabilities_baseline", BASELINE, [(0, capabilities_baseline, ())]),
    ("hostNamespaces", BASELINE, [(0, host_namespaces, ())]),
    ("hostPathVolumes", BASELINE, [(0, host_path_volumes, ())]),
    ("hostPorts", BASELINE, [(0, host_ports, ())]),
    ("hostProbesAndHostLifecycle", BASELINE, [(34, host_probes, ())]),
    ("privileged", BASELINE, [(0, privileged, ())]),
    ("procMount", BASELINE, [(0, _proc_mount(False), ()), (35, _proc_mount(True), ())]),
    ("seLinuxOptions", BASELINE, [
        (0, _selinux({"", "container_t", "container_init_t", "container_kvm_t"}), ()),
        (31, _selinux({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}), ()),
    ]),
    ("seccompProfile_baseline", BASELINE, [(19, seccomp_baseline, ())]),
    ("sysctls", BASELINE, [(0, _sysctls(0), ()), (27, _sysctls(27), ()), (29, _sysctls(29), ()),
                           (32, _sysctls(32), ()), (37, _sysctls(37), ())]),
    ("windowsHostProcess", BASELINE, [(0, windows_host_process, ())]),
    ("allowPrivilegeEscalation", RESTRICTED, [(8, _allow_privilege_escalation, ()),
                                              (25, _not_windows(_allow_privilege_escalation), ())]),
    ("capabilities_restricted", RESTRICTED, [(22, _capabilities_restricted, ("capabilities_baseline",)),
                                             (25, _not_windows(_capabilities_restricted), ("capabilities_baseline",))]),
    ("procMount_restricted", RESTRICTED, [(35, _proc_mount(False), ("procMount",))]),
    ("restrictedVolumes", RESTRICTED, [(0, restricted_volumes, ("hostPathVolumes",))]),
    ("runAsNonRoot", RESTRICTED, [(0, _run_as_non_root(False), ()), (35, _run_as_non_root(True), ())]),
    ("runAsUser", RESTRICTED, [(23, _run_as_user(False), ()), (35, _run_as_user(True), ())]),
    ("seccompProfile_restricted", RESTRICTED, [(19, _seccomp_restricted, ("seccompProfile_baseline",)),
                                               (25, _not_windows(_seccomp_restricted), ("seccompProfile_baseline",))]),
]  # fmt: skip


def _version_of(versions, minor: int):
    chosen = None
    for v in versions:
        if v[0] <= minor:
            chosen = v
    return chosen


def evaluate(level: str, minor: int, meta: dict, spec: dict) -> list[tuple[str, str]]:
    """The (reason, detail) of every check ``level`` at policy version ``minor`` fails, in the registry's order."""
    if level == PRIVILEGED:
        return []
    chosen: dict[str, tuple] = {}
    for cid, clevel, versions in CHECKS:
        if clevel == RESTRICTED and level != RESTRICTED:
            continue
        v = _version_of(versions, minor)
        if v is not None:
            chosen[cid] = v
    overridden = {o for v in chosen.values() for o in v[2]}
    out = []
    baseline_ids = sorted(c[0] for c in CHECKS if c[1] == BASELINE)
    restricted_ids = sorted(c[0] for c in CHECKS if c[1] == RESTRICTED)
    for cid in baseline_ids + restricted_ids:
        if cid not in chosen or cid in overridden:
            continue
        result = chosen[cid][1](meta, spec)
        if result is not None:
            out.append(result)
    return out


def detail(results: list[tuple[str, str]]) -> str:
    """AggregateCheckResult.ForbiddenDetail: ``reason (detail), reason, ...``."""
    return ", ".join(f"{r} ({d})" if d else r for r, d in results)


# --- the policy from namespace labels ----------------------------------------------------------------------
class Policy:
    def __init__(self, enforce, warn, audit) -> None:
        self.enforce, self.warn, self.audit = (
            enforce,
            warn,
            audit,
        )  # (level, version) with version None = latest

    @staticmethod
    def show(lv) -> str:
        return f"{lv[0]}:{'latest' if lv[1] is None else f'v1.{lv[1]}'}"


def _parse_version(value: str):
    if value == "latest":
        return None, None
    if (
        value.startswith("v1.")
        and value[3:].isdigit()
        and (value[3:] == "0" or not value[3:].startswith("0"))
    ):
        return int(value[3:]), None
    return None, 'must be "latest" or "v1.x"'


def policy_from(labels: dict | None) -> tuple[Policy, list[tuple[str, str, str]]]:
    """(policy, errors as (label, value, message)) from a namespace's labels, as api.PolicyToEvaluate."""
    labels = labels or {}
    errors = []
    enforce, warn, audit = [PRIVILEGED, None], [PRIVILEGED, None], [PRIVILEGED, None]
    has_enforce = has_warn = has_warn_version = False
    for mode, target in (("enforce", enforce), ("audit", audit), ("warn", warn)):
        key = LABEL + mode
        if key in labels:
            value = labels[key]
            if mode == "warn":
                has_warn = True
            if value in LEVELS:
                target[0] = value
                if mode == "enforce":
                    has_enforce = True
            else:
                errors.append((key, value, "must be one of privileged, baseline, restricted"))
                target[0] = RESTRICTED if mode == "enforce" else PRIVILEGED
        vkey = key + "-version"
        if vkey in labels:
            if mode == "warn":
                has_warn_version = True
            version, err = _parse_version(labels[vkey])
            target[1] = version
            if err:
                errors.append((vkey, labels[vkey], err))
    order = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}
    if not has_warn and has_enforce and order[enforce[0]] > order[warn[0]]:
        warn[0] = enforce[0]
        if not has_warn_version:
            warn[1] = enforce[1]
    return Policy(tuple(enforce), tuple(warn), tuple(audit)), errors


def _minor(version, server_minor: int) -> int:
    return server_minor if version is None else min(version, server_minor)


TEMPLATE_KINDS = {"deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "replicationcontrollers",
                  "podtemplates", "cronjobs"}  # fmt: skip


def pod_template(plural: str, obj: dict) -> tuple[dict, dict] | None:
    """(metadata, spec) of the pod a controller object makes (PodSpecExtractor)."""
    if plural == "podtemplates":
        tpl = obj.get("template") or {}
    elif plural == "cronjobs":
        tpl = (((obj.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
    else:
        tpl = (obj.get("spec") or {}).get("template") or {}
    if not tpl:
        return None
    return tpl.get("metadata") or {}, tpl.get("spec") or {}


class PodSecurity:
    def __init__(self, api) -> None:
        self.api = api

    def _namespace(self, name: str) -> dict | None:
        return self.api.model.store.find("namespaces", None, name)

    def validate(
        self, op: str, plural: str, obj: dict, old: dict | None, namespace: str | None, sub: str
    ) -> None:
        minor = self.api.minor
        if plural == "namespaces":
            self._validate_namespace(op, obj, old, minor)
            return
        if plural == "pods":
            if sub:
                return  # status, binding, eviction, log... are not evaluated
            if op == "UPDATE" and old is not None and not _significant(obj, old):
                return
            enforce = True
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        elif plural in TEMPLATE_KINDS and not sub:
            enforce = False
            extracted = pod_template(plural, obj)
            if extracted is None:
                return
            meta, spec = extracted
        else:
            return
        ns = self._namespace(namespace or "")
        if ns is None:
            return
        policy, errors = policy_from(ns["metadata"].get("labels"))
        if not errors and policy.enforce[0] == policy.warn[0] == policy.audit[0] == PRIVILEGED:
            return
        cached: dict = {}

        def results(lv):
            if lv not in cached:
                cached[lv] = evaluate(lv[0], _minor(lv[1], minor), meta, spec)
            return cached[lv]

        if enforce:
            failed = results(policy.enforce)
            if failed:
                from autoscaler.emulator.errors import forbidden

                raise forbidden("", plural, (obj.get("metadata") or {}).get("name") or "",
                                f'violates PodSecurity "{Policy.show(policy.enforce)}": {detail(failed)}')  # fmt: skip
        warned = results(policy.warn)
        if warned:
            self.api.warn(f'would violate PodSecurity "{Policy.show(policy.warn)}": {detail(warned)}')

    def _validate_namespace(self, op: str, ns: dict, old: dict | None, minor: int) -> None:
        policy, errors = policy_from((ns.get("metadata") or {}).get("labels"))
        name = (ns.get("metadata") or {}).get("name", "")
        if errors:
            old_errors = policy_from(((old or {}).get("metadata") or {}).get("labels"))[1] if old else []
            if op == "CREATE" or not old_errors or old_errors != errors:
                parts = [f'metadata.labels[{k}]: Invalid value: "{v}": {m}' for k, v, m in errors]
                shown = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
                raise Invalid(f'Namespace "{name}" is invalid: {shown}')
        if op != "UPDATE" or old is None:
            return
        old_policy, _ = policy_from((old.get("metadata") or {}).get("labels"))
        if policy.enforce == old_policy.enforce or policy.enforce[0] == PRIVILEGED:
            return
        order = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}
        if (
            policy.enforce[1] == old_policy.enforce[1]
            and order[policy.enforce[0]] <= order[old_policy.enforce[0]]
        ):
            return
        for warning in self._existing_pods(name, policy.enforce, minor):
            self.api.warn(warning)

    def _existing_pods(self, namespace: str, enforce, minor: int) -> list[str]:
        counts: dict[str, list] = {}
        order: list[str] = []
        seen_controllers: set[str] = set()
        pods = self.api.model.store.list("pods", namespace)
        for pod in pods:
            owner = next(
                (r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")), None
            )
            if owner is not None:
                if owner.get("uid") in seen_controllers:
                    continue
                seen_controllers.add(owner.get("uid"))
            failed = evaluate(enforce[0], _minor(enforce[1], minor), pod["metadata"], pod.get("spec") or {})
            if not failed:
                continue
            reason = ", ".join(r for r, _ in failed)
            if reason not in counts:
                counts[reason] = [pod["metadata"]["name"], 0]
                order.append(reason)
            elif pod["metadata"]["name"] < counts[reason][0]:
                counts[reason][0] = pod["metadata"]["name"]
            counts[reason][1] += 1
        if not order:
            return []
        out = [f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
               f'"{Policy.show(enforce)}"']  # fmt: skip
        decorated = []
        for reason in order:
            first, n = counts[reason]
            if n == 1:
                decorated.append(f"{first}: {reason}")
            elif n == 2:
                decorated.append(f"{first} (and 1 other pod): {reason}")
            else:
                decorated.append(f"{first} (and {n - 1} other pods): {reason}")
        return out + sorted(decorated)


def _significant(new: dict, old: dict) -> bool:
    """isSignificantPodUpdate: a pod update is evaluated only when it changes a container's image (or its seccomp
    annotation), the number of containers, or the ephemeral containers."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    new_ann = (new.get("metadata") or {}).get("annotations") or {}
    old_ann = (old.get("metadata") or {}).get("annotations") or {}
    for key in ("containers", "initContainers"):
        a, b = ns.get(key) or [], os_.get(key) or []
        if len(a) != len(b):
            return True
        for c, o in zip(a, b, strict=True):
            seccomp = "container.seccomp.security.alpha.kubernetes.io/" + (c.get("name") or "")
            if c.get("image") != o.get("image") or new_ann.get(seccomp) != old_ann.get(seccomp):
                return True
    return (ns.get("ephemeralContainers") or []) != (os_.get("ephemeralContainers") or [])

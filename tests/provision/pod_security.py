"""Pod Security Standards, level "restricted" (version latest), as kube-apiserver's PodSecurity admission
evaluates a pod spec: the checks of k8s.io/pod-security-admission policy/check_*.go, baseline and restricted,
one message per violation in the words the admission uses. A test helper: what the project deploys into a
namespace that enforces "restricted" must come out of this with no violation."""

from __future__ import annotations

# policy/check_capabilities_baseline.go: capabilitiesAllowedV1Dot0
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
# policy/check_restrictedVolumes.go
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip
# policy/check_sysctls.go (v1.32: the latest list)
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
}  # fmt: skip
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
VOLUME_SOURCES = RESTRICTED_VOLUMES | {
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "portworxVolume", "photonPersistentDisk", "scaleIO", "storageos", "image",
}  # fmt: skip


def pod_spec(obj: dict) -> dict | None:
    """The pod spec of a Pod or of a workload's pod template; None for anything else."""
    if obj.get("kind") == "Pod":
        return obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"].get("spec") or {}
    template = (obj.get("spec") or {}).get("template")
    return template.get("spec") or {} if isinstance(template, dict) else None


def _containers(spec: dict) -> list[dict]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or []]


def violations(spec: dict) -> list[str]:
    """Every way SPEC fails the restricted level (empty: admitted)."""
    out: list[str] = []
    psc = spec.get("securityContext") or {}
    containers = _containers(spec)
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            out.append(f"host namespaces ({key}=true)")
    for c in containers:
        sc = c.get("securityContext") or {}
        name = c.get("name")
        if sc.get("privileged"):
            out.append(f"privileged (container {name!r} must not set securityContext.privileged=true)")
        caps = sc.get("capabilities") or {}
        added = set(caps.get("add") or [])
        if added - BASELINE_CAPABILITIES:
            out.append(
                f"non-default capabilities (container {name!r} adds {sorted(added - BASELINE_CAPABILITIES)})"
            )
        if added - {"NET_BIND_SERVICE"}:
            out.append(f"unrestricted capabilities (container {name!r} may add only NET_BIND_SERVICE)")
        if "ALL" not in (caps.get("drop") or []):
            out.append(f'unrestricted capabilities (container {name!r} must set capabilities.drop=["ALL"])')
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                out.append(f"hostPort (container {name!r} uses hostPort {port['hostPort']})")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"allowPrivilegeEscalation != false (container {name!r})")
        if sc.get("procMount", "Default") != "Default":
            out.append(f"procMount (container {name!r})")
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"hostProcess (container {name!r})")
    # runAsNonRoot: true at the pod, and no container undoing it; or true on every container
    pod_nonroot = psc.get("runAsNonRoot")
    for c in containers:
        own = (c.get("securityContext") or {}).get("runAsNonRoot")
        if own is False or (own is None and pod_nonroot is not True):
            out.append(f"runAsNonRoot != true (container {c.get('name')!r})")
    if pod_nonroot is False:
        out.append("runAsNonRoot != true (pod)")
    if psc.get("runAsUser") == 0:
        out.append("runAsUser=0 (pod)")
    for c in containers:
        if (c.get("securityContext") or {}).get("runAsUser") == 0:
            out.append(f"runAsUser=0 (container {c.get('name')!r})")
    # seccomp: RuntimeDefault or Localhost at the pod or on every container, never Unconfined
    allowed = {"RuntimeDefault", "Localhost"}
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    if pod_seccomp is not None and pod_seccomp not in allowed:
        out.append(f"seccompProfile (pod must not set type {pod_seccomp})")
    for c in containers:
        own = ((c.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
        if (own is not None and own not in allowed) or (own is None and pod_seccomp not in allowed):
            out.append(
                f'seccompProfile (pod or container {c.get("name")!r} must set type "RuntimeDefault" or "Localhost")'
            )
    # SELinux, sysctls, AppArmor
    for where, sc in [("pod", psc)] + [
        (repr(c.get("name")), c.get("securityContext") or {}) for c in containers
    ]:
        se = sc.get("seLinuxOptions") or {}
        if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            out.append(f"seLinuxOptions ({where})")
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            out.append(f"appArmorProfile ({where} must not be Unconfined)")
    for sysctl in psc.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            out.append(f"forbidden sysctls ({sysctl.get('name')})")
    for vol in spec.get("volumes") or []:
        sources = [k for k in vol if k != "name"]
        if sources and sources[0] == "hostPath":
            out.append(f"hostPath volumes ({vol['name']})")
        if sources and sources[0] not in RESTRICTED_VOLUMES:
            out.append(f"restricted volume types ({vol['name']} uses {sources[0]})")
    return out


def enforced_levels(docs: list[dict]) -> dict[str, str]:
    """Namespace name => its enforced Pod Security level, for the Namespaces among DOCS."""
    return {
        d["metadata"]["name"]: (d["metadata"].get("labels") or {}).get(
            "pod-security.kubernetes.io/enforce", ""
        )
        for d in docs
        if d.get("kind") == "Namespace"
    }

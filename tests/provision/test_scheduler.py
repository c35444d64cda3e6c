"""The scheduler profile: the control plane's KubeSchedulerConfiguration and kubeadm patch, the gang scheduler's
manifests (strict offline validation), each held to the fields and plugin names of the real sources
(scheduler_config_fields.yaml), and the simulator's scheduler agreeing with what is deployed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from clusterspec.errors import UserError
from clusterspec.loader import load_spec, spec_from_data
from provision import images
from provision import scheduler as S
from simulator.model.scheduler import NodeInfo, Scheduler, deployed_profile
from simulator.workload import GANG_SCHEDULER
from tests.support import ROOT, example_spec_data, load_yaml

FIELDS = load_yaml(Path(__file__).parent / "scheduler_config_fields.yaml")
PLUGINS = set(FIELDS["in_tree_plugins"]) | set(FIELDS["scheduler_plugins"])


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture(scope="module")
def written(spec, tmp_path_factory):
    return S.write(spec, tmp_path_factory.mktemp("scheduler"))


def _check_configuration(doc: dict, allowed_plugins: set[str]) -> None:
    assert (
        doc["apiVersion"] == "kubescheduler.config.k8s.io/v1" and doc["kind"] == "KubeSchedulerConfiguration"
    )
    assert set(doc) <= set(FIELDS["configuration"])
    assert set(doc.get("leaderElection", {})) <= set(FIELDS["leader_election"])
    assert set(doc.get("clientConnection", {})) <= set(FIELDS["client_connection"])
    assert 0 <= doc.get("percentageOfNodesToScore", 0) <= 100
    for profile in doc["profiles"]:
        assert set(profile) <= set(FIELDS["profile"])
        for point, sets in (profile.get("plugins") or {}).items():
            assert point in FIELDS["extension_points"], point
            for kind in ("enabled", "disabled"):
                for plugin in sets.get(kind, ()):
                    assert plugin["name"] in allowed_plugins | {"*"}, plugin["name"]
        for entry in profile.get("pluginConfig", ()):
            assert entry["name"] in allowed_plugins
            assert set(entry["args"]) <= set(FIELDS["plugin_args"][entry["name"]]), entry
            strategy = entry["args"].get("scoringStrategy")
            if strategy:
                assert set(strategy) <= set(FIELDS["scoring_strategy"])
                assert strategy["type"] in FIELDS["scoring_types"]
                for r in strategy["resources"]:
                    assert FIELDS["resource_weight"]["min"] <= r["weight"] <= FIELDS["resource_weight"]["max"]


def test_the_control_plane_configuration_names_only_real_fields_and_in_tree_plugins(written):
    (doc,) = list(yaml.safe_load_all(written["kube-scheduler-config.yaml"].read_text()))
    _check_configuration(doc, set(FIELDS["in_tree_plugins"]))  # the upstream image: no Coscheduling there
    assert doc["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf"
    assert [p["schedulerName"] for p in doc["profiles"]] == ["default-scheduler"]


def test_the_gang_scheduler_configuration_names_only_real_fields_and_plugins(spec):
    config = next(d for d in S.render_manifests(spec) if d["kind"] == "ConfigMap")
    doc = yaml.safe_load(config["data"]["config.yaml"])
    _check_configuration(doc, PLUGINS)
    (profile,) = doc["profiles"]
    assert profile["schedulerName"] == S.GANG_SCHEDULER == GANG_SCHEDULER
    assert profile["plugins"]["queueSort"] == {
        "enabled": [{"name": "Coscheduling"}],
        "disabled": [{"name": "*"}],
    }
    assert {"name": "Coscheduling"} in profile["plugins"]["multiPoint"]["enabled"]


def test_gpus_weigh_more_than_cpu_and_memory_in_the_deployed_profile(written):
    (doc,) = list(yaml.safe_load_all(written["kube-scheduler-config.yaml"].read_text()))
    strategy = doc["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]
    weights = {r["name"]: r["weight"] for r in strategy["resources"]}
    assert strategy["type"] == "MostAllocated"
    assert weights["nvidia.com/gpu"] > max(weights["cpu"], weights["memory"])


def test_the_kubeadm_patch_loads_the_file_from_a_mounted_directory(written):
    (doc,) = list(yaml.safe_load_all(written["kubeadm-scheduler.yaml"].read_text()))
    assert doc["apiVersion"] == "kubeadm.k8s.io/v1beta4" and doc["kind"] == "ClusterConfiguration"
    component = doc["scheduler"]
    assert set(component) <= set(FIELDS["kubeadm_component"])
    args = component["extraArgs"]
    assert isinstance(args, list) and all(
        set(a) == set(FIELDS["kubeadm_arg"]) for a in args
    )  # v1beta4: a list
    config = next(a["value"] for a in args if a["name"] == "config")
    (volume,) = component["extraVolumes"]
    assert set(volume) <= set(FIELDS["kubeadm_host_path_mount"])
    assert volume["pathType"] in FIELDS["host_path_types"]
    assert config.startswith(volume["mountPath"] + "/") and volume["readOnly"] is True


def test_every_gang_scheduler_manifest_passes_strict_validation(spec, written):
    version = spec.kubernetes.minor + ".0"
    for doc in yaml.safe_load_all(written["gang-scheduler.yaml"].read_text()):
        kubernetes_validate.validate(doc, version, strict=True)
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "kubernetes-validate"), "--strict", "--quiet", "-k", version,
         str(written["gang-scheduler.yaml"])], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_deployment_reads_the_rendered_configuration_and_runs_the_release_for_the_spec(spec):
    docs = S.render_manifests(spec)
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = container["volumeMounts"]
    assert container["args"] == [f"--config={mount['mountPath']}/config.yaml"]
    assert pod["volumes"][0]["configMap"]["name"] == config["metadata"]["name"]
    assert set(config["data"]) == {"config.yaml"}
    assert (  # from the lab's ECR mirror (issue 36)
        images.upstream(container["image"])
        == f"registry.k8s.io/scheduler-plugins/kube-scheduler:{S.SCHEDULER_PLUGINS[spec.kubernetes.minor]}"
    )
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["serviceAccountName"] == S.GANG_SCHEDULER
    assert S.podgroup_crd_url(spec).endswith(
        f"/{S.SCHEDULER_PLUGINS[spec.kubernetes.minor]}/manifests/crds/scheduling.x-k8s.io_podgroups.yaml"
    )


@pytest.mark.tool
def test_the_podgroup_crd_is_the_releases_kept_in_the_repository(spec, kube):
    """Issue 26: no download at deploy time. The kept file names its release and the upstream file's sha256; applied
    as `invoke deploy-scheduler` applies it, the real API server serves the version `lab` writes, and admits the
    PodGroup `lab submit` makes for a gang (server-side dry run in a namespace of this test's own)."""
    import hashlib
    import json

    from clusterspec.scheduler import POD_GROUP_API
    from labctl import jobs as lab_jobs
    from tests.labctl.settings import SETTINGS

    path = S.podgroup_crd(spec)
    text = path.read_text()
    header = [ln for ln in text.splitlines() if ln.startswith("#")]
    body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("#")) + "\n"
    assert S.SCHEDULER_PLUGINS[spec.kubernetes.minor] in header[0]
    assert f"sha256 of the upstream file: {hashlib.sha256(body.encode()).hexdigest()}" in "".join(header)
    crd = yaml.safe_load(body)
    assert crd["spec"]["names"]["plural"] == "podgroups"
    kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=research-cluster-scheduler",
                 "-f", str(path), check=True)  # fmt: skip
    kube.kubectl("wait", "--for=condition=Established", "--timeout=30s", f"crd/{crd['metadata']['name']}",
                 check=True)  # fmt: skip
    served = json.loads(kube.kubectl("get", "--raw", f"/apis/{POD_GROUP_API}", check=True).stdout)
    assert "podgroups" in [r["name"] for r in served["resources"]]
    ns = kube.namespace("podgroup")
    req = lab_jobs.JobRequest(name="resnet", namespace=ns, image=SETTINGS.standard_image, command=["true"],
                              gpus=8, nodes=2, gang=True, user="alice")  # fmt: skip
    (group,) = [d for d in lab_jobs.manifests(req, SETTINGS) if d["kind"] == "PodGroup"]
    done = kube.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(group), check=True
    )
    assert json.loads(done.stdout)["spec"]["minMember"] == 2
    kube.kubectl("delete", "namespace", ns, "--wait=false")


def test_rbac_grants_no_wildcards_and_only_reads_podgroups(spec):
    docs = S.render_manifests(spec)
    for doc in docs:
        for rule in doc.get("rules", ()):
            for key in ("verbs", "resources", "apiGroups"):
                assert "*" not in rule.get(key, ()), (doc["metadata"]["name"], rule)
    podgroups = next(d for d in docs if d["kind"] == "ClusterRole")
    assert podgroups["rules"] == [
        {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]}
    ]
    bound = {d["roleRef"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"}
    assert {"system:kube-scheduler", "system:volume-scheduler"} <= bound


def test_a_kubernetes_minor_without_a_scheduler_plugins_release_is_one_clear_error():
    data = example_spec_data()
    data["kubernetes"]["version"] = "1.36.1"
    with pytest.raises(UserError) as e:
        S.render_manifests(spec_from_data(data, "cluster.yaml"))
    (line,) = e.value.lines
    assert "kubernetes.version 1.36.1" in line and "1.35" in line


# --- the simulator agrees with what is deployed ------------------------------------------------------------
def _deployed(doc: dict) -> tuple[str, tuple, frozenset[str]]:
    """(strategy, resource weights, resource score plugins) as the deployed configuration says."""
    (profile,) = doc["profiles"]
    fit = next(c for c in profile["pluginConfig"] if c["name"] == "NodeResourcesFit")["args"][
        "scoringStrategy"
    ]
    disabled = {p["name"] for p in (profile.get("plugins") or {}).get("score", {}).get("disabled", ())}
    plugins = frozenset({"NodeResourcesFit", "NodeResourcesBalancedAllocation"} - disabled)
    return fit["type"], tuple((r["name"], r["weight"]) for r in fit["resources"]), plugins


def test_the_simulators_scheduler_scores_with_the_deployed_strategy_weights_and_plugins(written, spec):
    sim = Scheduler(lambda pod, node: None, lambda pod, why: None)
    (control,) = list(yaml.safe_load_all(written["kube-scheduler-config.yaml"].read_text()))
    gang = yaml.safe_load(
        next(d for d in S.render_manifests(spec) if d["kind"] == "ConfigMap")["data"]["config.yaml"]
    )
    for doc in (control, gang):
        strategy, weights, plugins = _deployed(doc)
        assert (sim.profile.strategy, sim.profile.resources, sim.profile.score_plugins) == (
            strategy,
            weights,
            plugins,
        )
        assert doc["percentageOfNodesToScore"] == sim.profile.percentage_of_nodes_to_score
    has_gangs = any(
        p["name"] == "Coscheduling" for p in gang["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    )
    assert sim.gangs is has_gangs is True
    assert sim.profile is deployed_profile()


def test_a_score_computed_by_hand_from_the_deployed_weights_matches_the_simulators(written):
    (doc,) = list(yaml.safe_load_all(written["kube-scheduler-config.yaml"].read_text()))
    _, weights, _ = _deployed(doc)
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "62", "memory": "480Gi",
                                                                   "nvidia.com/gpu": "8", "pods": "110"}}}  # fmt: skip
    ni = NodeInfo(node)
    ni.used = {"cpu": 6000, "memory": 24 * 2**30, "nvidia.com/gpu": 2}
    req = {"cpu": 3.0, "memory": 12 * 2**30, "nvidia.com/gpu": 1.0, "pods": 1.0}
    # MostAllocated: requested * 100 // allocatable per resource, weighted mean (integer division, as Go does)
    parts = {"nvidia.com/gpu": 3 * 100 // 8, "cpu": 9000 * 100 // 62000, "memory": 36 * 100 // 480}
    expected = sum(parts[r] * w for r, w in weights) // sum(w for _, w in weights)
    sim = Scheduler(lambda pod, node: None, lambda pod, why: None)
    assert sim.score(req, ni) == expected

"""``python -m demos.bench_live --churn PODS``: pods that vanish, on the real control plane (docs/benchmarks.md, "Live
controller"). PODS pending 1-GPU pods created at once, each deleted 2 s after its creation; the real ``autoscaler
run`` (default idle threshold, 10 minutes) against moto, and localcluster's node agent registering an instance as a
kwok Node ``--boot-s`` after it launched (Ready at once, its GPUs advertised); a minute after the last deletion, what is still bought above the groups' minimum.
Only processes this module starts are ever signalled."""

from __future__ import annotations

import random
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from clusterspec.names import AUTOSCALER_NAMESPACE, NODE_GROUP_LABEL
from demos.bench_live import NAMESPACE, ROOT, Api, _accounts, _wait, claim_and_volume, pod_body
from demos.live_sides import Aws, Controller
from localcluster.nodes import GONE
from localcluster.stack import Stack

CHURN_POD = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}


def churn(pods: int, delete_after_s: float, after_s: float, boot_s: float, workers: int, out: Path,
          progress=lambda what: None) -> dict:  # fmt: skip
    """The churn scenario on the real control plane: ``pods`` pending 1-GPU pods created at once (``workers``
    concurrent writes), each deleted ``delete_after_s`` after its creation; the real ``autoscaler run`` (default
    idle threshold, 10 minutes) against moto, and a node agent that registers an instance as a kwok Node
    ``boot_s`` after it launched; ``after_s`` after the last deletion, what is still bought."""
    from autoscaler.core.bench_sizes import compile_tree

    compile_tree(ROOT)
    out.mkdir(parents=True, exist_ok=True)
    stack = Stack(Path(tempfile.mkdtemp(prefix="churn-", dir=out))).start(timeout_s=120)
    aws = agent = ctl = None
    figures: dict = {"pods": pods, "delete_after_s": delete_after_s, "after_s": after_s, "boot_s": boot_s}
    try:
        api = Api(stack.admin_kubeconfig, workers)
        for ns in (NAMESPACE, AUTOSCALER_NAMESPACE):
            api.core.create_namespace({"metadata": {"name": ns}})
        _accounts(api)
        claim, volume = claim_and_volume()  # the claim the kubectl-sized pods name (unbound: no scale-up)
        api.core.create_persistent_volume(volume)
        api.core.create_namespaced_persistent_volume_claim(NAMESPACE, claim)
        aws = Aws()
        agent = Booting(aws.url, api.core, boot_s).start()
        ctl = Controller(ROOT, stack.admin_kubeconfig, aws.url, "10s",
                         out / "churn-controller.log")  # fmt: skip
        _wait(lambda: (ctl.loops() or 0) >= 1, 300, ctl, "its first pass")
        time.sleep(boot_s + 2)  # the groups' minimum instances registered
        agent.at_start = set(agent.registered)
        progress(
            f"controller running; creating {pods:,} pods, each deleted {delete_after_s:g} s after creation"
        )
        before = agent.groups()
        figures["desired_before"] = sum(g["desired"] for g in before)  # the groups' minimum, there before
        figures["instances_before"] = sum(len(g["instances"]) for g in before)
        peak = {"desired": figures["desired_before"]}
        stop = threading.Event()

        def watch_desired():
            while not stop.wait(0.5):
                peak["desired"] = max(peak["desired"], sum(g["desired"] for g in agent.groups()))

        threading.Thread(target=watch_desired, daemon=True).start()
        created: list[tuple[float, str]] = []
        errors: list[str] = []
        lock = threading.Lock()

        def create(i: int) -> None:
            name = f"churn-{i}"
            status, text = api.post(f"/api/v1/namespaces/{NAMESPACE}/pods",
                                    pod_body(name, CHURN_POD, i, random.Random(i), gpu=True))  # fmt: skip
            if status < 300:
                with lock:
                    created.append((time.monotonic(), name))
            elif not errors:
                errors.append(f"{status}: {text[:200]}")

        deleted = 0
        late: list[float] = []  # seconds past its due time each deletion was sent

        def delete(item: tuple[float, str]) -> None:
            late.append(time.monotonic() - item[0] - delete_after_s)
            api.pool.request("DELETE", f"{api.host}/api/v1/namespaces/{NAMESPACE}/pods/{item[1]}"
                             "?gracePeriodSeconds=0")  # fmt: skip

        def deleter():
            nonlocal deleted
            with ThreadPoolExecutor(workers) as deleters:
                while not stop.is_set() or deleted < len(created):
                    with lock:
                        due = [c for c in created[deleted:] if c[0] + delete_after_s <= time.monotonic()]
                    deleted += len(due)
                    list(deleters.map(delete, due))
                    time.sleep(0.05)

        t0 = time.monotonic()
        deleting = threading.Thread(target=deleter, daemon=True)
        deleting.start()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(create, range(pods)))
        figures["create_s"] = round(time.monotonic() - t0, 1)
        if len(created) < pods:
            raise RuntimeError(f"{pods - len(created):,} of {pods:,} pods not created: {errors[0]}")
        stop.set()
        deleting.join()
        last = time.monotonic()
        progress(
            f"{len(created):,} pods created in {figures['create_s']} s and deleted; waiting {after_s:g} s"
        )
        time.sleep(after_s)
        groups = agent.groups()
        figures |= {
            "created": len(created),
            "peak_desired": peak["desired"],
            "desired_after": sum(g["desired"] for g in groups),
            "instances_after": sum(len(g["instances"]) for g in groups),
            "nodes_registered": len(agent.registered - agent.at_start),
            "agent_errors": agent.errors,
            "deletion_late_max_s": round(max(late), 1) if late else None,
            "nodes_after": len(api.core.list_node(label_selector=NODE_GROUP_LABEL).items)
            - figures["instances_before"],
            "waited_s": round(time.monotonic() - last, 1),
        }
    finally:
        for thing in (agent, ctl):
            if thing is not None:
                thing.stop()
        if aws:
            aws.stop()
        stack.stop()
    return figures


class Booting:
    """localcluster's node agent (kwok's registration, each Node ``boot_s`` after its instance launched; gone with
    its instance) and what the figures read of the groups: the desired counts and live instances."""

    def __init__(self, aws_url: str, core, boot_s: float) -> None:
        import boto3

        from autoscaler.adapters.aws import AwsCloud
        from clusterspec.loader import load_spec
        from localcluster.nodes import NodeAgent
        from simulator.model.boot import NodeLifecycle

        spec = load_spec(str(ROOT / "cluster.yaml"))
        session = boto3.Session(aws_access_key_id="bench-agent", aws_secret_access_key="bench-agent")
        regions = list(spec.spill_over_order)
        cloud = AwsCloud(spec.name, regions, endpoint_url=aws_url, session=session)
        self.agent = NodeAgent(cloud, core.api_client, lifecycle=NodeLifecycle.instant(), boot_s=boot_s)
        self.asg = {r: session.client("autoscaling", region_name=r, endpoint_url=aws_url) for r in regions}
        self.at_start: set[str] = set()

    @property
    def registered(self) -> set[str]:
        return {n.name for n in self.agent.nodes.values()}

    @property
    def errors(self) -> int:
        return self.agent.errors

    def groups(self) -> list[dict]:
        out = []
        for region, asg in self.asg.items():
            for page in asg.get_paginator("describe_auto_scaling_groups").paginate():
                for g in page["AutoScalingGroups"]:
                    live = [i for i in g.get("Instances", []) if i.get("LifecycleState") not in GONE]
                    out.append({"region": region, "name": g["AutoScalingGroupName"],
                                "desired": g["DesiredCapacity"], "instances": live})  # fmt: skip
        return out

    def start(self) -> Booting:
        self.agent.start()
        return self

    def stop(self) -> None:
        self.agent.stop()


def churn_report(f: dict) -> str:
    empty = f["desired_after"] <= f["desired_before"] and f["instances_after"] <= f["instances_before"]
    empty = empty and f["nodes_after"] <= 0
    return (
        f"churn: {f['created']:,} pending 1-GPU pods created in {f['create_s']} s, each deleted "
        f"{f['delete_after_s']:g} s after creation (sent at most {f['deletion_late_max_s']} s late); nodes register {f['boot_s']:g} s after launch\n"
        f"the groups' minimum before: desired {f['desired_before']}, {f['instances_before']} instance(s); above "
        f"it: {f['peak_desired'] - f['desired_before']} node(s) bought at the peak; {f['waited_s']} s after the "
        f"last deletion: desired {f['desired_after'] - f['desired_before']}, live instances "
        f"{f['instances_after'] - f['instances_before']}, Nodes {f['nodes_after']} ({f['nodes_registered']} "
        f"registered meanwhile; node agent errors: {f['agent_errors'] or 'none'}): "
        + ("nothing bought" if empty else "NOT empty")
    )

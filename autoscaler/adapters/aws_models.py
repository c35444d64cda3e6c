"""The AWS API models of the adapter's clients, cut to the operations the adapter calls.

A boto3 client loads its service's whole model (``botocore/data/<service>/<version>/service-2.json``) and keeps
it for the life of the process: EC2's describes about 750 operations and 5,000 shapes, 15-20 MiB once decoded,
of which the controller calls three. :func:`session` makes a boto3 session whose data loader hands out these
models with only the listed operations and the shapes they reach (input, output, errors, and every member,
list element and map key or value under them, transitively), so what is kept is exactly what botocore needs to
validate, serialize and parse those calls; everything else about the clients (endpoints, retries, event hooks,
paginators) is botocore's own. A call to an operation not listed fails at once as an unknown method
(AttributeError), never on the wire: tests/autoscaler/adapters/test_aws_models.py checks the list against the
adapter's source. Figures: docs/benchmarks.md ("Live controller").
"""

from __future__ import annotations

import boto3
import botocore.session

OPERATIONS = {  # what autoscaler/adapters/aws.py calls, by service
    "ec2": frozenset({"DescribeInstances", "DescribeLaunchTemplateVersions", "DescribeInstanceTypes"}),
    "autoscaling": frozenset(
        {
            "DescribeAutoScalingGroups",
            "DescribeLaunchConfigurations",
            "DescribeScalingActivities",
            "SetDesiredCapacity",
            "SetInstanceProtection",
            "TerminateInstanceInAutoScalingGroup",
            "UpdateAutoScalingGroup",
        }
    ),
}


def cut(model: dict, operations: frozenset[str]) -> dict:
    """``model`` (a service-2 document) with only ``operations`` and the shapes they reach."""
    shapes = model["shapes"]
    ops = {name: op for name, op in model["operations"].items() if name in operations}
    todo = [ref["shape"] for op in ops.values() for ref in (op.get("input"), op.get("output")) if ref]
    todo += [err["shape"] for op in ops.values() for err in op.get("errors") or []]
    reached: set[str] = set()
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        shape = shapes[name]
        todo += [member["shape"] for member in (shape.get("members") or {}).values()]
        todo += [shape[k]["shape"] for k in ("member", "key", "value") if k in shape]
    return {**model, "operations": ops, "shapes": {k: v for k, v in shapes.items() if k in reached}}


def _install(loader, operations: dict[str, frozenset[str]]) -> None:
    full = loader.load_service_model
    done: dict[tuple, dict] = {}  # each cut model made once (the whole one is not kept, so not re-read)

    def load_service_model(service_name, type_name, api_version=None):
        if type_name != "service-2" or service_name not in operations:
            return full(service_name, type_name, api_version)
        key = (service_name, api_version)
        if key in done:
            return done[key]
        model = full(service_name, type_name, api_version)
        cached = getattr(loader, "_cache", None)  # botocore's instance cache holds the whole model: let it go
        if isinstance(cached, dict):
            for key, value in list(cached.items()):
                if value is model or (isinstance(value, tuple) and value and value[0] is model):
                    del cached[key]
        done[key] = cut(model, operations[service_name])
        return done[key]

    loader.load_service_model = load_service_model


def session(operations: dict[str, frozenset[str]] | None = None) -> boto3.Session:
    """A boto3 session (credentials and region as ``boto3.Session()`` finds them) whose clients of the services
    in ``operations`` (default :data:`OPERATIONS`) know only those operations. A session of its own: clients
    made from any other session are whole."""
    core = botocore.session.get_session()
    _install(core.get_component("data_loader"), OPERATIONS if operations is None else operations)
    return boto3.Session(botocore_session=core)

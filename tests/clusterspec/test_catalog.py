from kubernetes.utils.quantity import parse_quantity

from clusterspec import catalog

REQUIRED_FAMILIES = {"p2", "p3", "p4d", "p5", "g4dn", "g5", "g6", "c5", "c6i", "m5", "m6i"}


def test_table_covers_the_required_families():
    assert {t.family for t in catalog.instance_types().values()} >= REQUIRED_FAMILIES


def test_every_gpu_type_names_a_known_model_and_every_type_a_price():
    models = catalog.gpu_models()
    for t in catalog.instance_types().values():
        assert (t.gpus > 0) == (t.gpu_model is not None), t.name
        assert t.gpu_model is None or t.gpu_model in models, t.name
        assert t.price, f"{t.name} has no price in any region"
        assert all(p > 0 for p in t.price.values())


def test_allocatable_is_below_capacity_and_parses_as_quantities():
    p3 = catalog.instance_type("p3.16xlarge")
    alloc = {k: parse_quantity(v) for k, v in p3.allocatable().items()}
    assert 60 < alloc["cpu"] < 64
    assert 400 * 2**30 < alloc["memory"] < 488 * 2**30
    assert alloc["nvidia.com/gpu"] == 8
    assert "nvidia.com/gpu" not in catalog.instance_type("m5.large").allocatable()


def test_unknown_type_names_it():
    try:
        catalog.instance_type("p9.huge")
    except KeyError as e:
        assert "p9.huge" in str(e)
    else:
        raise AssertionError("expected KeyError")


def test_efa_instance_types_offer_their_efa_interfaces_from_zero():
    """A pod that asks for vpc.amazonaws.com/efa (multi-node training on p4d/p5) must see it on the group's
    template, or a group scaled to zero could never be chosen for it (the EFA device plugin advertises it on the
    node; AWS EC2 User Guide, EFA supported instance types; DescribeInstanceTypes NetworkInfo.EfaInfo)."""
    from autoscaler.adapters.node_template import instance_type_from_ec2

    assert catalog.instance_type("p4d.24xlarge").allocatable()["vpc.amazonaws.com/efa"] == "4"
    assert "vpc.amazonaws.com/efa" not in catalog.instance_type("p3.16xlarge").allocatable()
    described = {"InstanceType": "p5.48xlarge", "VCpuInfo": {"DefaultVCpus": 192}, "MemoryInfo": {"SizeInMiB": 2097152},
                 "GpuInfo": {"Gpus": [{"Name": "H100", "Count": 8}]},
                 "NetworkInfo": {"EfaSupported": True, "EfaInfo": {"MaximumEfaInterfaces": 32}}}  # fmt: skip
    assert instance_type_from_ec2(described).allocatable()["vpc.amazonaws.com/efa"] == "32"

from kubernetes.utils.quantity import parse_quantity

from autoscaler import catalog

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

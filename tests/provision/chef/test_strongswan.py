from __future__ import annotations

import pytest

from clusterspec.spec import TunnelCrypto
from provision.chef.strongswan import esp_proposal, ike_proposal
from tests.provision.chef.support import HERE
from tests.support import load_yaml

CASES = load_yaml(HERE / "proposals.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["ike"] for c in CASES])
def test_aws_algorithms_become_strongswan_proposals(case):
    tunnel = TunnelCrypto.model_validate(case["tunnel"])
    assert ike_proposal(tunnel) == case["ike"]
    assert esp_proposal(tunnel) == case["esp"]

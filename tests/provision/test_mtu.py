"""The pod MTU plan (provision/mtu.py): ESP in UDP 4500 in a 1500-byte packet (RFC 4303 padding and ICV,
RFC 3948 encapsulation, RFC 4868 truncation, RFC 4106 GCM), capped at AWS's 1446, less VXLAN's 50 (RFC 7348)."""

import pytest

from clusterspec.spec import TunnelCrypto
from provision import mtu

CASES = [
    # (esp_encryption, esp_integrity, tunnel MTU) worked by hand:
    # AES-CBC: 1500-20-8-8-16(IV)-16(ICV)=1432 -> 89 blocks of 16 = 1424, less 2 trailer bytes = 1422
    (["AES256"], ["SHA2-256"], 1422),
    # SHA2-512 truncated to 32 bytes: 1500-20-8-8-16-32=1416 -> 1408-2 = 1406
    (["AES128"], ["SHA2-512"], 1406),
    # GCM: IV 8, ICV 16, 4-byte alignment: 1500-20-8-8-8-16=1440 -> 1438; under AWS's 1446
    (["AES256-GCM-16"], ["SHA2-256"], 1438),
    # SHA2-384 truncated to 24 bytes: 1500-20-8-8-16-24=1424, already 89 blocks -> 1422
    (["AES256"], ["SHA2-384"], 1422),
    # both kinds allowed: the worst proposal counts (AES-CBC with SHA2-512's 32-byte ICV: 1406, GCM: 1438)
    (["AES256-GCM-16", "AES256"], ["SHA2-256", "SHA2-512"], 1406),
]


@pytest.mark.parametrize(("enc", "integ", "tunnel"), CASES)
def test_tunnel_pod_and_mss(enc, integ, tunnel):
    t = TunnelCrypto(esp_encryption=enc, esp_integrity=integ)
    assert mtu.tunnel_mtu(t) == tunnel
    assert mtu.pod_mtu(t) == tunnel - 50
    assert mtu.tcp_mss(t) == tunnel - 40


def test_never_above_what_aws_accepts(monkeypatch):
    monkeypatch.setattr(mtu, "UNDERLAY_MTU", 9001)  # even on a jumbo-frame uplink
    assert mtu.tunnel_mtu(TunnelCrypto()) == mtu.AWS_TUNNEL_MTU == 1446

"""One MTU for the whole pod network: the smallest path, VXLAN inside the site's IPsec tunnels.

flannel's VXLAN packets between a site server and a cloud node cross a site-to-site tunnel: the pod's packet
plus 50 bytes of VXLAN (RFC 7348: outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14) inside an ESP packet
(RFC 4303: SPI and sequence 8, the cipher's IV, padding to its block plus 2 trailer bytes, the integrity check
value) in UDP 4500 (RFC 3948, NAT traversal; the gateway forces it with `encap = yes`) in IPv4 (20) on the site's
Internet uplink (1500). AWS caps what enters a Site-to-Site VPN tunnel at 1446 bytes (its quotas page: MTU 1446,
MSS 1406). Either ESP proposal of the spec may be negotiated, so the worst one counts. Pods on cloud nodes get the
same MTU: flannel writes one CNI configuration for every node, and a cloud pod talks to site pods too.
"""

from __future__ import annotations

from clusterspec.spec import TunnelCrypto

UNDERLAY_MTU = 1500  # the site's Internet uplink
AWS_TUNNEL_MTU = 1446  # AWS Site-to-Site VPN quotas: maximum transmission unit
OUTER_IPV4 = 20
NAT_T_UDP = 8
ESP_HEADER = 8
ESP_TRAILER = 2  # pad length + next header
VXLAN_OVERHEAD = 50
TCP_IP_HEADERS = 40
# cipher -> (IV bytes, block the padded payload aligns to); RFC 3602 (CBC), RFC 4106 (GCM, 4-byte alignment)
CIPHERS = {"AES128": (16, 16), "AES256": (16, 16), "AES128-GCM-16": (8, 4), "AES256-GCM-16": (8, 4)}
# integrity -> ICV bytes: RFC 4868 truncates HMAC-SHA2 to half its size; GCM-16 carries a 16-byte tag
ICV = {"SHA2-256": 16, "SHA2-384": 24, "SHA2-512": 32}
GCM_ICV = 16


def _inner_max(cipher: str, icv: int) -> int:
    iv, block = CIPHERS[cipher]
    room = UNDERLAY_MTU - OUTER_IPV4 - NAT_T_UDP - ESP_HEADER - iv - icv
    return room // block * block - ESP_TRAILER


def tunnel_mtu(t: TunnelCrypto) -> int:
    """The largest inner IPv4 packet every allowed ESP proposal carries in one 1500-byte packet, AWS's cap too."""
    fits = []
    for cipher in t.esp_encryption:
        icvs = [GCM_ICV] if "GCM" in cipher else [ICV[i] for i in t.esp_integrity]
        fits += [_inner_max(cipher, icv) for icv in icvs]
    return min([AWS_TUNNEL_MTU, *fits])


def pod_mtu(t: TunnelCrypto) -> int:
    """flannel's pod MTU: the tunnel's less VXLAN's encapsulation."""
    return tunnel_mtu(t) - VXLAN_OVERHEAD


def tcp_mss(t: TunnelCrypto) -> int:
    """The MSS the gateway clamps TCP SYNs to on the tunnel interfaces (IPv4 + TCP headers of 40 bytes)."""
    return tunnel_mtu(t) - TCP_IP_HEADERS

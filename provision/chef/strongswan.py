"""The spec's ``vpn.tunnel`` algorithms in strongSwan's proposal syntax (what swanctl.conf needs).

AWS names them as the Terraform VPN module sets them (``AES256``, ``SHA2-256``, DH group ``14``); strongSwan
wants ``aes256-sha256-modp2048``. One proposal carries every algorithm the spec allows, except that AEAD (GCM)
and classic ciphers cannot share a proposal (strongSwan's proposals docs, RFC 7296 3.3): a spec listing both
kinds gets two proposals, comma-separated, in the order the spec names the kinds.
"""

from __future__ import annotations

from clusterspec.spec import TunnelCrypto

ENCRYPTION = {
    "AES128": "aes128",
    "AES256": "aes256",
    "AES128-GCM-16": "aes128gcm16",
    "AES256-GCM-16": "aes256gcm16",
}
INTEGRITY = {"SHA2-256": "sha256", "SHA2-384": "sha384", "SHA2-512": "sha512"}
# IANA DH group number -> strongSwan keyword (strongSwan's IKEv2 cipher suites table).
DH_GROUPS = {
    14: "modp2048", 15: "modp3072", 16: "modp4096", 17: "modp6144", 18: "modp8192",
    19: "ecp256", 20: "ecp384", 21: "ecp521", 22: "modp1024s160", 23: "modp2048s224", 24: "modp2048s256",
}  # fmt: skip


def _by_kind(encryption: list[str]) -> list[list[str]]:
    """The strongSwan ciphers split into AEAD and classic ones, each kind where the spec first names it."""
    kinds: dict[bool, list[str]] = {}
    for e in encryption:
        kinds.setdefault("gcm" in e, []).append(e)
    return list(kinds.values())


def ike_proposal(t: TunnelCrypto) -> str:
    """IKE SA proposals; with AEAD ciphers the integrity algorithms become PRFs (``prfsha256``)."""
    dh = [DH_GROUPS[g] for g in t.dh_groups]
    proposals = []
    for enc in _by_kind([ENCRYPTION[e] for e in t.ike_encryption]):
        aead = "gcm" in enc[0]
        integ = [("prf" if aead else "") + INTEGRITY[i] for i in t.ike_integrity]
        proposals.append("-".join(enc + integ + dh))
    return ",".join(proposals)


def esp_proposal(t: TunnelCrypto) -> str:
    """CHILD SA proposals with PFS in the same DH groups (the VPN module sets phase-2 groups = phase-1)."""
    dh = [DH_GROUPS[g] for g in t.dh_groups]
    proposals = []
    for enc in _by_kind([ENCRYPTION[e] for e in t.esp_encryption]):
        integ = [] if "gcm" in enc[0] else [INTEGRITY[i] for i in t.esp_integrity]
        proposals.append("-".join(enc + integ + dh))
    return ",".join(proposals)


# Route-based tunnels: one XFRM interface per tunnel; strongSwan binds the tunnel's SAs and policies to it with
# if_id_in/if_id_out (strongSwan's "Route-based VPNs" docs), the traffic selectors are 0.0.0.0/0 both ways.
ANY = "0.0.0.0/0"
IFNAMSIZ = 15  # Linux interface names


def if_id(region_index: int, tunnel: int) -> int:
    """The XFRM interface id of a tunnel: unique per gateway, never 0 (0 means "no interface")."""
    return 10 * (region_index + 1) + tunnel


def region_short(region: str) -> str:
    """``us-west-2`` -> ``usw2``: the region in the few characters an interface name has room for."""
    parts = region.split("-")
    return parts[0] + "".join(p[0] for p in parts[1:-1]) + parts[-1]


def interface(region_index: int, region: str, tunnel: int) -> str:
    """The tunnel's XFRM interface name, e.g. ``aws0-usw2-1`` (the index keeps look-alike regions apart)."""
    name = f"aws{region_index}-{region_short(region)}-{tunnel}"
    return name if len(name) <= IFNAMSIZ else f"aws{region_index}-t{tunnel}"

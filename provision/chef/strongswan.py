"""The spec's ``vpn.tunnel`` algorithms in strongSwan's proposal syntax (what swanctl.conf needs).

AWS names them as the Terraform VPN module sets them (``AES256``, ``SHA2-256``, DH group ``14``); strongSwan
wants ``aes256-sha256-modp2048``. One proposal carries every algorithm the spec allows.
"""

from __future__ import annotations

from provision.spec import TunnelCrypto

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


def ike_proposal(t: TunnelCrypto) -> str:
    """IKE SA proposal; with only AEAD ciphers the integrity algorithms become PRFs (``prfsha256``)."""
    enc = [ENCRYPTION[e] for e in t.ike_encryption]
    aead_only = all("gcm" in e for e in enc)
    integ = [("prf" if aead_only else "") + INTEGRITY[i] for i in t.ike_integrity]
    return "-".join(enc + integ + [DH_GROUPS[g] for g in t.dh_groups])


def esp_proposal(t: TunnelCrypto) -> str:
    """CHILD SA proposal with PFS in the same DH groups (the VPN module sets phase-2 groups = phase-1)."""
    enc = [ENCRYPTION[e] for e in t.esp_encryption]
    aead_only = all("gcm" in e for e in enc)
    integ = [] if aead_only else [INTEGRITY[i] for i in t.esp_integrity]
    return "-".join(enc + integ + [DH_GROUPS[g] for g in t.dh_groups])

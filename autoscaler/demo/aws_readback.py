"""The embedded AWS reads back what it was given, as AWS does, where moto drops it (the day-one rehearsal's second
plan, docs/terraform.md "Rehearsal": each of these made the real provider plan a change on every run that real AWS
would not show). Each answer follows the EC2 API Reference:

- CreateCustomerGateway's ``DeviceName``, ``BgpAsnExtended`` and ``CertificateArn`` come back in
  DescribeCustomerGateways (moto keeps only type, address and ASN, so the site's gateway was replaced each plan:
  ``device_name`` forces a new resource);
- a security group rule's ``Description`` comes back in DescribeSecurityGroupRules for a rule that names another
  group or a prefix list too (moto answers it only for CIDR rules, so those rules' descriptions changed each plan).

``install()``/``uninstall()``: the server's process (autoscaler/demo/aws_server.py) and the tests that share one.
"""

from __future__ import annotations

from moto.ec2.models import security_groups as sg_models
from moto.ec2.responses.customer_gateways import CustomerGateways

CUSTOMER_GATEWAY_FIELDS = {"DeviceName": "device_name", "BgpAsnExtended": "bgp_asn_extended",
                           "CertificateArn": "certificate_arn"}  # fmt: skip
_original_create_customer_gateway = CustomerGateways.create_customer_gateway
_original_rule_init = sg_models.SecurityGroupRule.__init__
_original_description = sg_models.SecurityGroupRule.description


def _create_customer_gateway(self):
    result = _original_create_customer_gateway(self)
    gateway = result.result["CustomerGateway"]
    for param, attribute in CUSTOMER_GATEWAY_FIELDS.items():
        value = self._get_param(param)
        if value is not None:
            setattr(gateway, attribute, str(value))
    return result


def _rule_init(self, *args, **kwargs) -> None:
    _original_rule_init(self, *args, **kwargs)
    prefix = kwargs.get("prefix_list_id", args[7] if len(args) > 7 else None)
    self.prefix_list = prefix or {}


def _description(self) -> str | None:
    """The rule's description whichever kind of source it names (a CIDR, a group, a prefix list)."""
    for source in (self.ip_range, self.source_group, getattr(self, "prefix_list", None) or {}):
        if source.get("Description") is not None:
            return source["Description"]
    return None


def install() -> None:
    CustomerGateways.create_customer_gateway = _create_customer_gateway
    sg_models.SecurityGroupRule.__init__ = _rule_init
    sg_models.SecurityGroupRule.description = property(_description)


def uninstall() -> None:
    CustomerGateways.create_customer_gateway = _original_create_customer_gateway
    sg_models.SecurityGroupRule.__init__ = _original_rule_init
    sg_models.SecurityGroupRule.description = _original_description

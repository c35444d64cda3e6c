"""The embedded AWS reads back what it was given, as AWS does, where moto drops it (the day-one rehearsal's second
plan, docs/terraform.md "Rehearsal": each of these made the real provider plan a change on every run that real AWS
would not show). Each answer follows the EC2 API Reference:

- CreateCustomerGateway's ``DeviceName``, ``BgpAsnExtended`` and ``CertificateArn`` come back in
  DescribeCustomerGateways (moto keeps only type, address and ASN, so the site's gateway was replaced each plan:
  ``device_name`` forces a new resource);
- a security group rule's ``Description`` comes back in DescribeSecurityGroupRules for a rule that names another
  group or a prefix list too (moto answers it only for CIDR rules, so those rules' descriptions changed each plan);
- CreateLaunchTemplate's own ``TagSpecifications`` (resource type launch-template) tag the template, not its
  version's data (moto added them to the data: each plan made a new version, and the groups followed it);
- an instance launched with a network interface specification lists that interface's groups in
  ``SecurityGroups`` (moto: none); and ModifyInstanceAttribute of an attribute moto does not know (the provider
  sets ``InstanceInitiatedShutdownBehavior`` after the launch) sets that attribute, where moto replaced the
  instance's groups with none (the SSH machines' ``vpc_security_group_ids`` changed each plan);
- a Lambda function's ``LoggingConfig`` comes back (moto drops it; AWS's default is Text to /aws/lambda/<name>);
- a Resolver endpoint's ``ResolverEndpointType`` and ``Protocols`` come back (defaults IPV4 and Do53);
- a VPN connection's ``Options`` come back (moto: none; AWS: the network CIDRs, 0.0.0.0/0 unless given, etc.).

``install()``/``uninstall()``: the server's process (localcluster/aws_server.py) and the tests that share one.
"""

from __future__ import annotations

import json

from moto.awslambda import models as lambda_models
from moto.backup import urls as backup_urls
from moto.backup.exceptions import ResourceNotFoundException
from moto.backup.responses import BackupResponse
from moto.ec2.models import instances as instance_models
from moto.ec2.models import security_groups as sg_models
from moto.ec2.responses.customer_gateways import CustomerGateways
from moto.ec2.responses.instances import InstanceResponse
from moto.ec2.responses.launch_templates import LaunchTemplates
from moto.ec2.responses.vpn_connections import VPNConnections
from moto.efs.exceptions import FileSystemNotFound
from moto.efs.responses import EFSResponse
from moto.route53resolver import models as resolver_models
from moto.route53resolver.responses import Route53ResolverResponse

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


_original_create_launch_template = LaunchTemplates.create_launch_template


def _create_launch_template(self):
    given = "TagSpecifications" in (self._get_param("LaunchTemplateData", {}) or {})
    result = _original_create_launch_template(self)
    template = self.ec2_backend.get_launch_template(result.result["LaunchTemplate"]["LaunchTemplateId"])
    for version in template.versions:
        specs = [
            t for t in version.data.get("TagSpecifications", []) if t.get("ResourceType") != "launch-template"
        ]
        if specs or given:
            version.data["TagSpecifications"] = specs
        else:
            version.data.pop("TagSpecifications", None)
    return result


_original_instance_init = instance_models.Instance.__init__


def _instance_init(self, *args, **kwargs) -> None:
    _original_instance_init(self, *args, **kwargs)
    if not self.security_groups and 0 in self.nics:
        self.security_groups = list(self.nics[0].group_set)


_original_groups_handler = InstanceResponse._security_grp_instance_attribute_handler


def _groups_handler(self) -> bool:
    """moto's last handler of ModifyInstanceAttribute: the groups when given, else the one ``<Name>.Value``."""
    if self._get_param("Groups") is not None:
        return _original_groups_handler(self)
    from moto.core.utils import camelcase_to_underscores

    for key, values in self.querystring.items():
        if key.endswith(".Value") and "." not in key[: -len(".Value")]:
            self.error_on_dryrun()
            self.ec2_backend.modify_instance_attribute(
                self._get_param("InstanceId"), camelcase_to_underscores(key[: -len(".Value")]), values[0]
            )
            return True
    return False


_original_lambda_init = lambda_models.LambdaFunction.__init__
_original_lambda_configuration = lambda_models.LambdaFunction.get_configuration
_original_lambda_update = lambda_models.LambdaFunction.update_configuration


def _lambda_init(self, *args, **kwargs) -> None:
    _original_lambda_init(self, *args, **kwargs)
    spec = kwargs.get("spec", args[1] if len(args) > 1 else {})
    self.logging_config = dict(spec.get("LoggingConfig") or {})


def _logging_config(self) -> dict:
    config = {"LogFormat": "Text", "LogGroup": f"/aws/lambda/{self.function_name}"}
    config |= {k: v for k, v in (getattr(self, "logging_config", None) or {}).items() if v}
    if config["LogFormat"] == "JSON":
        config = {"ApplicationLogLevel": "INFO", "SystemLogLevel": "INFO"} | config
    return config


def _lambda_configuration(self, *args, **kwargs) -> dict:
    return _original_lambda_configuration(self, *args, **kwargs) | {"LoggingConfig": _logging_config(self)}


def _lambda_update(self, config_updates: dict) -> dict:
    if "LoggingConfig" in config_updates:
        self.logging_config = dict(config_updates["LoggingConfig"] or {})
    return _original_lambda_update(self, config_updates)


_original_create_resolver_endpoint = Route53ResolverResponse.create_resolver_endpoint
_original_endpoint_description = resolver_models.ResolverEndpoint.description


def _create_resolver_endpoint(self) -> str:
    made = json.loads(_original_create_resolver_endpoint(self))["ResolverEndpoint"]
    endpoint = self.route53resolver_backend.resolver_endpoints[made["Id"]]
    endpoint.resolver_endpoint_type = self._get_param("ResolverEndpointType") or "IPV4"
    endpoint.protocols = self._get_param("Protocols") or ["Do53"]
    return json.dumps({"ResolverEndpoint": endpoint.description()})


def _endpoint_description(self) -> dict:
    return _original_endpoint_description(self) | {
        "ResolverEndpointType": getattr(self, "resolver_endpoint_type", "IPV4"),
        "Protocols": getattr(self, "protocols", ["Do53"]),
    }


_original_create_vpn_connection = VPNConnections.create_vpn_connection


def _create_vpn_connection(self):
    result = _original_create_vpn_connection(self)
    given = self._get_param("Options", {}) or {}
    result.result["VpnConnection"].options = {
        "EnableAcceleration": str(given.get("EnableAcceleration", False)).lower() == "true",
        "StaticRoutesOnly": str(given.get("StaticRoutesOnly", False)).lower() == "true",
        "LocalIpv4NetworkCidr": given.get("LocalIpv4NetworkCidr") or "0.0.0.0/0",
        "RemoteIpv4NetworkCidr": given.get("RemoteIpv4NetworkCidr") or "0.0.0.0/0",
        "OutsideIpAddressType": given.get("OutsideIpAddressType") or "PublicIpv4",
        "TunnelInsideIpVersion": given.get("TunnelInsideIpVersion") or "ipv4",
    }
    return result


PATCHES = [
    (CustomerGateways, "create_customer_gateway", _create_customer_gateway),
    (sg_models.SecurityGroupRule, "__init__", _rule_init),
    (sg_models.SecurityGroupRule, "description", property(_description)),
    (LaunchTemplates, "create_launch_template", _create_launch_template),
    (instance_models.Instance, "__init__", _instance_init),
    (InstanceResponse, "_security_grp_instance_attribute_handler", _groups_handler),
    (lambda_models.LambdaFunction, "__init__", _lambda_init),
    (lambda_models.LambdaFunction, "get_configuration", _lambda_configuration),
    (lambda_models.LambdaFunction, "update_configuration", _lambda_update),
    (Route53ResolverResponse, "create_resolver_endpoint", _create_resolver_endpoint),
    (resolver_models.ResolverEndpoint, "description", _endpoint_description),
    (VPNConnections, "create_vpn_connection", _create_vpn_connection),
]
_ORIGINALS = [(cls, name, cls.__dict__[name]) for cls, name, _ in PATCHES]

# AWS Backup's ListRecoveryPointsByBackupVault (GET /backup-vaults/{name}/recovery-points/), which moto does not
# route: `invoke down`'s inventory of what a teardown would lose asks it of every vault. The embedded AWS never
# runs a backup job, so every vault it has is empty; a vault it does not have is ResourceNotFoundException, as AWS
# answers.
RECOVERY_POINTS_PATH = (
    "{0}/backup-vaults/(?P<name>[^/]+)/recovery-points/$"  # the SDKs send the trailing slash
)


def _list_recovery_points_by_backup_vault(self) -> str:
    name = self.path.split("/backup-vaults/", 1)[1].split("/", 1)[0]
    if name not in self.backup_backend.vaults:
        raise ResourceNotFoundException(msg=f"Backup vault {name} does not exist")
    return json.dumps({"RecoveryPoints": []})


# EFS DeleteFileSystemPolicy (DELETE /2015-02-01/file-systems/{id}/policy), which moto routes but does not answer:
# Terraform's destroy of aws_efs_file_system_policy then waits for the policy to go until it times out (`invoke
# down` on the embedded AWS sat there).
def _delete_file_system_policy(self):
    file_system_id = self._get_param("FileSystemId")
    if file_system_id not in self.efs_backend.file_systems_by_id:
        raise FileSystemNotFound(file_system_id)
    self.efs_backend.file_systems_by_id[file_system_id].file_system_policy = None
    return "{}", {"Content-Type": "application/json"}


ADDED = [
    (BackupResponse, "list_recovery_points_by_backup_vault", _list_recovery_points_by_backup_vault),
    (EFSResponse, "delete_file_system_policy", _delete_file_system_policy),
]


def install() -> None:
    for cls, name, patched in PATCHES:
        setattr(cls, name, patched)
    backup_urls.url_paths[RECOVERY_POINTS_PATH] = BackupResponse.dispatch
    for cls, name, added in ADDED:
        setattr(cls, name, added)


def uninstall() -> None:
    for cls, name, original in _ORIGINALS:
        setattr(cls, name, original)
    backup_urls.url_paths.pop(RECOVERY_POINTS_PATH, None)
    for cls, name, _ in ADDED:
        if name in cls.__dict__:
            delattr(cls, name)

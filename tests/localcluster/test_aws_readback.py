"""The embedded AWS reads back what it was given (localcluster/aws_readback.py): each field plain moto drops
is dropped without the patch (so the test can fail) and answered as AWS answers it with it."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from localcluster import aws_readback


@pytest.fixture(params=[False, True], ids=["plain-moto", "embedded"])
def ec2(request, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    if request.param:
        aws_readback.install()
    try:
        with mock_aws():
            yield request.param, boto3.client("ec2", region_name="us-west-2")
    finally:
        aws_readback.uninstall()


def test_a_customer_gateway_keeps_its_device_name(ec2) -> None:
    patched, client = ec2
    made = client.create_customer_gateway(Type="ipsec.1", IpAddress="198.51.100.7", BgpAsn=65010,
                                          DeviceName="lab-strongswan")["CustomerGateway"]  # fmt: skip
    (read,) = client.describe_customer_gateways(CustomerGatewayIds=[made["CustomerGatewayId"]])[
        "CustomerGateways"
    ]
    assert read.get("DeviceName") == ("lab-strongswan" if patched else None)
    assert read["BgpAsn"] == "65010"


def test_a_rule_keeps_its_description_whatever_it_names(ec2) -> None:
    patched, client = ec2
    vpc = client.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    group, peer = (
        client.create_security_group(GroupName=n, Description=n, VpcId=vpc)["GroupId"] for n in "ab"
    )
    client.authorize_security_group_ingress(GroupId=group, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "10.1.0.0/16", "Description": "cidr"}]},
        {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "UserIdGroupPairs": [{"GroupId": peer, "Description": "group"}]},
        {"IpProtocol": "tcp", "FromPort": 2049, "ToPort": 2049, "PrefixListIds": [{"PrefixListId": "pl-0123", "Description": "prefix"}]},
    ])  # fmt: skip
    rules = client.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [group]}])
    by_port = {r["FromPort"]: r.get("Description") for r in rules["SecurityGroupRules"] if not r["IsEgress"]}
    assert by_port == {22: "cidr", 443: "group" if patched else None, 2049: "prefix" if patched else None}


def test_a_launch_templates_own_tags_stay_out_of_its_data(ec2) -> None:
    patched, client = ec2
    data = {
        "ImageId": "ami-12c6146b",
        "TagSpecifications": [{"ResourceType": "instance", "Tags": [{"Key": "a", "Value": "b"}]}],
    }
    made = client.create_launch_template(LaunchTemplateName="g", LaunchTemplateData=data, TagSpecifications=[
        {"ResourceType": "launch-template", "Tags": [{"Key": "managed-by", "Value": "lab"}]}])["LaunchTemplate"]  # fmt: skip
    (version,) = client.describe_launch_template_versions(LaunchTemplateId=made["LaunchTemplateId"])[
        "LaunchTemplateVersions"
    ]
    kinds = [t["ResourceType"] for t in version["LaunchTemplateData"]["TagSpecifications"]]
    assert kinds == (["instance"] if patched else ["instance", "launch-template"])
    assert client.describe_launch_templates()["LaunchTemplates"][0]["Tags"] == [
        {"Key": "managed-by", "Value": "lab"}
    ]


def test_an_instance_lists_its_interfaces_groups(ec2) -> None:
    patched, client = ec2
    vpc = client.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = client.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    group = client.create_security_group(GroupName="ssh", Description="ssh", VpcId=vpc)["GroupId"]
    image = client.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    made = client.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.large", NetworkInterfaces=[
        {"DeviceIndex": 0, "SubnetId": subnet, "Groups": [group], "AssociatePublicIpAddress": True}])["Instances"][0]  # fmt: skip
    read = client.describe_instances(InstanceIds=[made["InstanceId"]])["Reservations"][0]["Instances"][0]
    assert [g["GroupId"] for g in read["SecurityGroups"]] == ([group] if patched else [])


def test_a_vpn_connection_has_its_options(ec2) -> None:
    patched, client = ec2
    cgw = client.create_customer_gateway(Type="ipsec.1", IpAddress="198.51.100.7", BgpAsn=65010)[
        "CustomerGateway"
    ]
    vgw = client.create_vpn_gateway(Type="ipsec.1")["VpnGateway"]["VpnGatewayId"]
    client.create_vpn_connection(Type="ipsec.1", CustomerGatewayId=cgw["CustomerGatewayId"], VpnGatewayId=vgw,
                                 Options={"StaticRoutesOnly": False})  # fmt: skip
    options = client.describe_vpn_connections()["VpnConnections"][0].get("Options", {})
    assert options.get("LocalIpv4NetworkCidr") == ("0.0.0.0/0" if patched else None)
    assert options.get("RemoteIpv4NetworkCidr") == ("0.0.0.0/0" if patched else None)


def test_a_functions_logging_config_and_a_resolver_endpoints_type_come_back(ec2) -> None:
    import io
    import zipfile

    patched, client = ec2
    role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("f.py", "def h(event, context): pass")
    functions = boto3.client("lambda", region_name="us-west-2")
    functions.create_function(FunctionName="f", Runtime="python3.12", Role=role, Handler="f.h",
                              Code={"ZipFile": code.getvalue()},
                              LoggingConfig={"LogFormat": "Text", "LogGroup": "/lab/f"})  # fmt: skip
    got = functions.get_function(FunctionName="f")["Configuration"].get("LoggingConfig")
    assert got == ({"LogFormat": "Text", "LogGroup": "/lab/f"} if patched else None)
    vpc = client.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [client.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"us-west-2{z}")["Subnet"]["SubnetId"]
               for i, z in ((1, "a"), (2, "b"))]  # fmt: skip
    group = client.create_security_group(GroupName="r", Description="r", VpcId=vpc)["GroupId"]
    resolver = boto3.client("route53resolver", region_name="us-west-2")
    made = resolver.create_resolver_endpoint(CreatorRequestId="x", Name="n", SecurityGroupIds=[group], Direction="INBOUND",
                                             IpAddresses=[{"SubnetId": s} for s in subnets],
                                             ResolverEndpointType="IPV4", Protocols=["Do53"])["ResolverEndpoint"]  # fmt: skip
    read = resolver.get_resolver_endpoint(ResolverEndpointId=made["Id"])["ResolverEndpoint"]
    assert (read.get("ResolverEndpointType"), read.get("Protocols")) == (
        ("IPV4", ["Do53"]) if patched else (None, None)
    )


def test_an_attribute_moto_does_not_know_leaves_the_groups(ec2) -> None:
    """The provider sets InstanceInitiatedShutdownBehavior after RunInstances; moto's last handler took any such
    call for a change of groups to none."""
    patched, client = ec2
    vpc = client.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = client.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    group = client.create_security_group(GroupName="ssh", Description="ssh", VpcId=vpc)["GroupId"]
    image = client.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    made = client.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.large", SubnetId=subnet,
                                SecurityGroupIds=[group])["Instances"][0]  # fmt: skip
    client.modify_instance_attribute(
        InstanceId=made["InstanceId"], InstanceInitiatedShutdownBehavior={"Value": "stop"}
    )
    read = client.describe_instances(InstanceIds=[made["InstanceId"]])["Reservations"][0]["Instances"][0]
    assert [g["GroupId"] for g in read["SecurityGroups"]] == ([group] if patched else [])


@pytest.mark.parametrize("patched", [False, True], ids=["plain-moto", "embedded"])
def test_a_vaults_recovery_points_are_listed(patched) -> None:
    """`invoke down`'s inventory lists each vault's recovery points; moto does not route the call. The embedded
    AWS never runs a backup job: its vaults are empty, and a vault it does not have is not found. Through the
    server, as `invoke down` reaches it (its URL map differs from the in-process mock's: a trailing slash)."""
    import threading
    import uuid

    from botocore.exceptions import ClientError

    from localcluster import aws_server

    aws_server.install({})
    if patched:
        aws_readback.install()
    server = aws_server.serve(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        backup = boto3.client("backup", region_name="us-west-2", endpoint_url=f"http://127.0.0.1:{server.server_port}",
                              aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
        vault = f"lab-{uuid.uuid4().hex[:8]}"  # the server's moto outlives a test
        backup.create_backup_vault(BackupVaultName=vault)
        if not patched:
            with pytest.raises(ClientError, match="404"):
                backup.list_recovery_points_by_backup_vault(BackupVaultName=vault)
            return
        assert backup.list_recovery_points_by_backup_vault(BackupVaultName=vault)["RecoveryPoints"] == []
        with pytest.raises(backup.exceptions.ResourceNotFoundException):
            backup.list_recovery_points_by_backup_vault(BackupVaultName="nope")
    finally:
        server.shutdown()
        thread.join(5)
        aws_server.uninstall()


@pytest.mark.parametrize("patched", [False, True], ids=["plain-moto", "embedded"])
def test_a_file_system_policy_can_be_deleted(patched, monkeypatch) -> None:
    """Terraform's destroy of aws_efs_file_system_policy calls DeleteFileSystemPolicy, then waits for
    DescribeFileSystemPolicy to say PolicyNotFound; moto routes the call but has no answer for it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    if patched:
        aws_readback.install()
    try:
        with mock_aws():
            efs = boto3.client("efs", region_name="us-west-2")
            fs = efs.create_file_system(CreationToken="lab")["FileSystemId"]
            efs.put_file_system_policy(FileSystemId=fs, Policy='{"Version": "2012-10-17", "Statement": []}')
            if not patched:
                with pytest.raises(Exception):  # noqa: B017 - whatever moto raises for an unanswered action
                    efs.delete_file_system_policy(FileSystemId=fs)
                return
            efs.delete_file_system_policy(FileSystemId=fs)
            with pytest.raises(efs.exceptions.PolicyNotFound):
                efs.describe_file_system_policy(FileSystemId=fs)
            with pytest.raises(efs.exceptions.FileSystemNotFound):
                efs.delete_file_system_policy(FileSystemId="fs-00000000")
    finally:
        aws_readback.uninstall()

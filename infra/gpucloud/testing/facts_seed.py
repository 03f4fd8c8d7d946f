"""Seeding the moto account from the account facts: what they describe is created under the ids the
facts give, before the program runs, so the program sees the account's real ids."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from gpucloud.naming import AUTOSCALING_SERVICE
from gpucloud.testing.external_seed import seed_bucket, seed_repository, seed_security_group
from gpucloud.testing.facts_models import AccountFacts, AmiFacts, FactsError, PrometheusWorkspaceFacts, VpcFacts
from gpucloud.testing.named_facts import seed_named
from gpucloud.testing.registry import Account


@contextlib.contextmanager
def _moto_ids(module_name: str, function: str, value: str) -> Iterator[None]:
    """moto draws EC2 ids from module-level functions and takes no custom id for them: for one
    call, the id the facts give is drawn instead, so the program sees the account's real ids."""
    import importlib

    module = importlib.import_module(f"moto.ec2.models.{module_name}")
    original = getattr(module, function)
    setattr(module, function, lambda *args, **kwargs: value)
    try:
        yield
    finally:
        setattr(module, function, original)


def seed_account(account: Account, facts: AccountFacts) -> None:
    """Create what the facts describe in the moto account, under their ids."""
    ec2, iam = account.client("ec2"), account.client("iam")
    account.quotas.update(facts.quotas)
    if facts.service_linked_roles is None:
        _assume_service_linked_roles(account)
    for service in facts.service_linked_roles or ():
        iam.create_service_linked_role(AWSServiceName=service)
    for ami in facts.amis:
        _seed_image(account, ec2, ami)
        if ami.deprecation_time:
            account.image_deprecations[ami.id] = ami.deprecation_time
    for vpc in facts.vpcs:
        _seed_vpc(ec2, vpc)
    for reservation in facts.capacity_reservations:
        account.capacity_reservations[reservation.id] = reservation.model_dump()
    account.capacity_block_offerings.extend(offering.model_dump() for offering in facts.capacity_block_offerings)
    for workspace in facts.prometheus_workspaces:
        _seed_workspace(account, workspace)
    account.ecr_repositories_known = facts.ecr_repositories is not None
    for repository in facts.ecr_repositories or ():
        seed_repository(account, repository)
    account.security_groups_known = facts.security_groups is not None
    for group in facts.security_groups or ():
        seed_security_group(ec2, group.id, group.vpc_id)
    account.buckets_known = facts.buckets is not None
    for bucket in facts.buckets or ():
        seed_bucket(account, bucket.name, bucket.region)
    seed_named(account, facts.certificates, facts.parameters, facts.secrets)


def _assume_service_linked_roles(account: Account) -> None:
    """Without facts on the account's service-linked roles, the stack's own (Auto Scaling's) is
    assumed to exist, as it does from an account's first group on: KMS then takes the key policy
    naming it, and its lookup answers "not known", so the plan says it did not check it."""
    role = account.client("iam").create_service_linked_role(AWSServiceName=AUTOSCALING_SERVICE)["Role"]
    account.assumed_roles.add(role["RoleName"])


def _seed_workspace(account: Account, workspace: PrometheusWorkspaceFacts) -> None:
    """moto draws a workspace's id itself: the created workspace is filed again under the id (and
    with the status) the facts give."""
    from moto.amp.models import amp_backends

    created = account.client("amp").create_workspace(**({"alias": workspace.alias} if workspace.alias else {}))
    backend = amp_backends[account.account_id][account.region]
    found = backend.workspaces.pop(created["workspaceId"])
    found.workspace_id = workspace.id
    found.arn = found.arn.replace(created["workspaceId"], workspace.id)
    found.endpoint = found.endpoint.replace(created["workspaceId"], workspace.id)
    found.status = {"statusCode": workspace.status}
    backend.workspaces[workspace.id] = found


def _seed_image(account: Account, ec2, ami: AmiFacts) -> None:
    """moto's RegisterImage keeps no architecture; an image made from an instance of a catalog
    image of the same architecture does, and its root device name is then set to the fact's."""
    [source] = ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": [ami.architecture]}], MaxResults=5
    )["Images"][:1] or [None]
    if source is None:
        raise FactsError(f"ami {ami.id}: the engine has no {ami.architecture} image to model it on")
    instance = ec2.run_instances(ImageId=source["ImageId"], MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    with _moto_ids("amis", "random_ami_id", ami.id):
        ec2.create_image(InstanceId=instance, Name=ami.name)
    ec2.terminate_instances(InstanceIds=[instance])
    from moto.ec2.models import ec2_backends

    ec2_backends[account.account_id][account.region].amis[ami.id].root_device_name = ami.root_device_name


def _seed_vpc(ec2, vpc: VpcFacts) -> None:
    main_id = next((table.id for table in vpc.route_tables if table.main), None)
    with _moto_ids("vpcs", "random_vpc_id", vpc.id), contextlib.ExitStack() as ids:
        if main_id:
            ids.enter_context(_moto_ids("route_tables", "random_route_table_id", main_id))
        ec2.create_vpc(CidrBlock=vpc.cidr)
    for subnet in vpc.subnets:
        with _moto_ids("subnets", "random_subnet_id", subnet.id):
            ec2.create_subnet(VpcId=vpc.id, CidrBlock=subnet.cidr, AvailabilityZone=subnet.zone)
    [main] = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc.id]}, {"Name": "association.main", "Values": ["true"]}]
    )["RouteTables"]
    targets = {route.target for table in vpc.route_tables for route in table.routes}
    for endpoint in vpc.endpoints:
        with _moto_ids("vpcs", "random_vpc_ep_id", endpoint.id):
            ec2.create_vpc_endpoint(VpcId=vpc.id, ServiceName=endpoint.service, VpcEndpointType=endpoint.type)
    for target in sorted(targets):
        _seed_target(ec2, vpc, target)
    for table in vpc.route_tables:
        table_id = main["RouteTableId"]
        if not table.main:
            with _moto_ids("route_tables", "random_route_table_id", table.id):
                table_id = ec2.create_route_table(VpcId=vpc.id)["RouteTable"]["RouteTableId"]
            for subnet in table.subnets:
                ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnet)
        for route in table.routes:
            if route.target != "local":
                ec2.create_route(RouteTableId=table_id, DestinationCidrBlock=route.destination, **_target(route.target))


def _seed_target(ec2, vpc: VpcFacts, target: str) -> None:
    """The gateways routes point at, so that the routes can be created (their own settings are not facts)."""
    if target.startswith("igw-"):
        with _moto_ids("internet_gateways", "random_internet_gateway_id", target):
            ec2.create_internet_gateway()
        ec2.attach_internet_gateway(InternetGatewayId=target, VpcId=vpc.id)
    elif target.startswith("nat-") and vpc.subnets:
        address = ec2.allocate_address(Domain="vpc")["AllocationId"]
        with _moto_ids("nat_gateways", "random_nat_gateway_id", target):
            ec2.create_nat_gateway(SubnetId=vpc.subnets[0].id, AllocationId=address)
    elif target.startswith("eni-") and vpc.subnets:
        with _moto_ids("elastic_network_interfaces", "random_eni_id", target):
            ec2.create_network_interface(SubnetId=vpc.subnets[0].id, Description="NAT instance (account fact)")
    elif target.startswith("tgw-"):
        with _moto_ids("transit_gateway", "random_transit_gateway_id", target):
            ec2.create_transit_gateway()
    elif target.startswith("vpce-") and target not in {endpoint.id for endpoint in vpc.endpoints}:
        with _moto_ids("vpcs", "random_vpc_ep_id", target):
            ec2.create_vpc_endpoint(VpcId=vpc.id, ServiceName="com.amazonaws.vpce.firewall", VpcEndpointType="GatewayLoadBalancer")


def _target(target: str) -> dict[str, str]:
    for prefix, key in (("igw-", "GatewayId"), ("nat-", "NatGatewayId"), ("tgw-", "TransitGatewayId"),
                        ("vpce-", "VpcEndpointId"), ("pcx-", "VpcPeeringConnectionId"),
                        ("eni-", "NetworkInterfaceId")):
        if target.startswith(prefix):
            return {key: target}
    raise FactsError(f"route target {target} is not one the facts can describe")

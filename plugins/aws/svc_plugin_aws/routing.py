"""Which handler serves a resource type: the one declared table.

A type is native when it is in ``NATIVE`` (a boto3 handler under ``handlers/``, kept where it does better than
Cloud Control: faster, or covering what Cloud Control handles badly); every other type of the CloudFormation
registry goes through the generic Cloud Control handler. Nothing else in the plugin decides this.

``SVC_AWS_CLOUD_CONTROL_TYPES`` (a comma-separated list of native types, or ``*`` for all) sends native types
through Cloud Control instead: for comparing the two paths on the same forma, and as an escape hatch should a
native handler misbehave against a real account.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from types import MappingProxyType

from svc_plugin_aws.cloudcontrol.handler import CloudControlHandler
from svc_plugin_aws.handler import Handler
from svc_plugin_aws.handlers.dynamodb_table import Table
from svc_plugin_aws.handlers.ec2_internetgateway import InternetGateway
from svc_plugin_aws.handlers.ec2_routetable import RouteTable
from svc_plugin_aws.handlers.ec2_securitygroup import SecurityGroup
from svc_plugin_aws.handlers.ec2_securitygroupingress import SecurityGroupIngress
from svc_plugin_aws.handlers.ec2_subnet import Subnet
from svc_plugin_aws.handlers.ec2_vpc import VPC
from svc_plugin_aws.handlers.ecs_cluster import Cluster
from svc_plugin_aws.handlers.iam_group import Group
from svc_plugin_aws.handlers.iam_managedpolicy import ManagedPolicy
from svc_plugin_aws.handlers.iam_oidcprovider import OIDCProvider
from svc_plugin_aws.handlers.iam_role import Role
from svc_plugin_aws.handlers.iam_samlprovider import SAMLProvider
from svc_plugin_aws.handlers.iam_servercertificate import ServerCertificate
from svc_plugin_aws.handlers.logs_loggroup import LogGroup
from svc_plugin_aws.handlers.route53_hostedzone import HostedZone
from svc_plugin_aws.handlers.s3_bucket import Bucket
from svc_plugin_aws.handlers.secretsmanager_secret import Secret
from svc_plugin_aws.handlers.sns_topic import Topic
from svc_plugin_aws.handlers.sqs_queue import Queue

FORCE_CLOUD_CONTROL_VARIABLE = "SVC_AWS_CLOUD_CONTROL_TYPES"

NATIVE: Mapping[str, type[Handler]] = MappingProxyType({
    handler.type_name: handler for handler in (
        Bucket, VPC, Subnet, SecurityGroup, SecurityGroupIngress, InternetGateway, RouteTable, Queue, Topic,
        LogGroup, Role, ManagedPolicy, Group, OIDCProvider, SAMLProvider, ServerCertificate, Secret, Table,
        Cluster, HostedZone,
    )
})


def forced_to_cloud_control(environment: Mapping[str, str] | None = None) -> frozenset[str]:
    """The native types the environment sends through Cloud Control (``*``: all of them)."""
    names = {name.strip() for name in (environment or os.environ).get(FORCE_CLOUD_CONTROL_VARIABLE, "").split(",")}
    names.discard("")
    return frozenset(NATIVE) if "*" in names else frozenset(names)


class Routes:
    """The handler of each type, made on first use and shared by every call of the type."""

    def __init__(self, forced: frozenset[str] | None = None) -> None:
        self._forced = forced_to_cloud_control() if forced is None else forced
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()

    def handler(self, resource_type: str) -> Handler:
        found = self._handlers.get(resource_type)
        if found is None:
            with self._lock:
                found = self._handlers.get(resource_type)
                if found is None:
                    native = NATIVE.get(resource_type)
                    found = native() if native is not None and resource_type not in self._forced \
                        else CloudControlHandler(resource_type)
                    self._handlers[resource_type] = found
        return found

"""Conformance cases of the AWS plugin's Secrets Manager, DynamoDB, ECS and Route 53 types against moto.

Built like ``support.aws_identity_cases``; see there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.aws import boto_client
from support.aws_conformance import aws_case, tags
from svc.plugins.conformance import Case

Json = dict[str, Any]


def secret_value(run: str, version: int) -> str:
    """A secret value unique to the run, so a test can look for it anywhere it must not be."""
    return f"pw-{run}-v{version}"


def secretsmanager_secret(url: str, run: str) -> Case:
    sm = boto_client(url, "secretsmanager")

    def secret(name: str, description: str, version: int, team: str) -> str:
        return (f'new secret.Secret {{ label = "subject"; name = "{name}"; description = "{description}"; '
                f'secretString = "{secret_value(run, version)}"; '  # opaque by its type: no svc.value(…).opaque needed
                f'tags {{ new {{ key = "team"; value = "{team}" }} }} }}')

    def change(arn: str) -> Json:
        sm.update_secret(SecretId=arn, Description="by hand")
        return {"Description": "by hand"}

    return aws_case(url, "aws-secretsmanager-secret", "AWS::SecretsManager::Secret", ["secretsmanager/secret"], {
        "base": secret(f"{run}/db", "database", 1, "core"),
        "update": secret(f"{run}/db", "database v2", 2, "edge"),
        "replace": secret(f"{run}/db2", "database v2", 2, "edge"),
    }, {
        "base": {"Name": f"{run}/db", "Description": "database", "Tags": tags(team="core")},
        "update": {"Name": f"{run}/db", "Description": "database v2", "Tags": tags(team="edge")},
        "replace": {"Name": f"{run}/db2", "Description": "database v2"},
    }, change, lambda arn: sm.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True))


_KEYS = ('attributeDefinitions { new { attributeName = "pk"; attributeType = "S" } }; '
         'keySchema { new { attributeName = "pk"; keyType = "HASH" } }; billingMode = "PAY_PER_REQUEST"')


def dynamodb_table(url: str, run: str) -> Case:
    ddb = boto_client(url, "dynamodb")

    def table(name: str, more: str) -> str:
        return f'new table.Table {{ label = "subject"; tableName = "{name}"; {_KEYS}; {more} }}'

    updated = ('timeToLiveSpecification { attributeName = "expires" }; '
               'streamSpecification { streamViewType = "NEW_IMAGE" }; tags { new { key = "team"; value = "edge" } }')

    def change(name: str) -> Json:
        arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
        ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "oob", "Value": "yes"}])
        return {"Tags": tags(team="edge", oob="yes")}

    return aws_case(url, "aws-dynamodb-table", "AWS::DynamoDB::Table", ["dynamodb/table"], {
        "base": table(f"{run}-items", 'tags { new { key = "team"; value = "core" } }'),
        "update": table(f"{run}-items", updated),
        "replace": table(f"{run}-items2", updated),
    }, {
        "base": {"TableName": f"{run}-items", "BillingMode": "PAY_PER_REQUEST",
                 "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "Tags": tags(team="core")},
        "update": {"TimeToLiveSpecification": {"AttributeName": "expires", "Enabled": True},
                   "StreamSpecification": {"StreamViewType": "NEW_IMAGE"}, "Tags": tags(team="edge")},
        "replace": {"TableName": f"{run}-items2", "StreamSpecification": {"StreamViewType": "NEW_IMAGE"}},
    }, change, lambda name: ddb.delete_table(TableName=name))


def ecs_cluster(url: str, run: str) -> Case:
    ecs = boto_client(url, "ecs")

    def cluster(name: str, insights: str, more: str) -> str:
        return (f'new cluster.Cluster {{ label = "subject"; clusterName = "{name}"; '
                f'clusterSettings {{ new {{ name = "containerInsights"; value = "{insights}" }} }}; {more} }}')

    updated = 'capacityProviders { "FARGATE" }; tags { new { key = "team"; value = "edge" } }'

    def change(name: str) -> Json:
        arn = ecs.describe_clusters(clusters=[name])["clusters"][0]["clusterArn"]
        ecs.tag_resource(resourceArn=arn, tags=[{"key": "oob", "value": "yes"}])
        return {"Tags": tags(team="edge", oob="yes")}

    return aws_case(url, "aws-ecs-cluster", "AWS::ECS::Cluster", ["ecs/cluster"], {
        "base": cluster(f"{run}-apps", "enabled", 'tags { new { key = "team"; value = "core" } }'),
        "update": cluster(f"{run}-apps", "disabled", updated),
        "replace": cluster(f"{run}-apps2", "disabled", updated),
    }, {
        "base": {"ClusterName": f"{run}-apps", "ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}],
                 "Tags": tags(team="core")},
        "update": {"ClusterSettings": [{"Name": "containerInsights", "Value": "disabled"}],
                   "CapacityProviders": ["FARGATE"], "Tags": tags(team="edge")},
        "replace": {"ClusterName": f"{run}-apps2", "CapacityProviders": ["FARGATE"]},
    }, change, lambda name: ecs.delete_cluster(cluster=name))


def route53_hosted_zone(url: str, run: str) -> Case:
    r53 = boto_client(url, "route53")

    def zone(name: str, comment: str, team: str) -> str:
        return (f'new hostedzone.HostedZone {{ label = "subject"; name = "{name}"; '
                f'hostedZoneConfig {{ comment = "{comment}" }}; '
                f'hostedZoneTags {{ new {{ key = "team"; value = "{team}" }} }} }}')

    def change(zone_id: str) -> Json:
        r53.update_hosted_zone_comment(Id=zone_id, Comment="by hand")
        return {"HostedZoneConfig": {"Comment": "by hand"}}

    return aws_case(url, "aws-route53-hostedzone", "AWS::Route53::HostedZone", ["route53/hostedzone"], {
        "base": zone(f"{run}.example.com", "zone", "core"),
        "update": zone(f"{run}.example.com", "zone v2", "edge"),
        "replace": zone(f"{run}-2.example.com", "zone v2", "edge"),
    }, {
        "base": {"Name": f"{run}.example.com", "HostedZoneConfig": {"Comment": "zone"},
                 "HostedZoneTags": tags(team="core")},
        "update": {"HostedZoneConfig": {"Comment": "zone v2"}, "HostedZoneTags": tags(team="edge")},
        "replace": {"Name": f"{run}-2.example.com", "HostedZoneConfig": {"Comment": "zone v2"}},
    }, change, lambda zone_id: r53.delete_hosted_zone(Id=zone_id))


DATA_CASES: dict[str, Callable[[str, str], Case]] = {
    "secretsmanager-secret": secretsmanager_secret, "dynamodb-table": dynamodb_table, "ecs-cluster": ecs_cluster,
    "route53-hostedzone": route53_hosted_zone,
}

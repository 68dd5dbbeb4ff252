"""Conformance cases of the AWS plugin against moto: a ``svc.plugins.conformance.Case`` per resource type.

``aws_case`` fills in what every AWS case shares (namespace, target on the moto server, the ``@aws``
import); a type module gives its three Pkl variants, the properties they read back as, and how boto3
changes and deletes the resource behind svc's back. Cases that need a parent declare it as the case's ``setup``
(``local net = new vpc.VPC {…}`` and ``net``), and the subject (labelled ``subject``) refers to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.aws import NATIVE_DISCOVERY, boto_client, target_config, target_pkl
from svc.plugins.conformance import Case

Json = dict[str, Any]


def aws_case(url: str, case_id: str, resource_type: str, imports: list[str], resources: dict[str, str],
             expected: dict[str, Json], change: Callable[[str], Json], delete: Callable[[str], None],
             setup: str = "") -> Case:
    lines = ['import "@aws/aws.pkl"', *(f'import "@aws/{module}.pkl"' for module in imports)]
    return Case(id=case_id, namespace="AWS", resource_type=resource_type, imports="\n".join(lines) + "\n",
                target=target_pkl(url), target_config=target_config(url), resources=resources, expected=expected,
                change_out_of_band=change, delete_out_of_band=delete, stack=case_id, setup=setup,
                plugin_config=NATIVE_DISCOVERY)


def tags(**pairs: str) -> list[dict[str, str]]:
    """CloudFormation's tag list, sorted by key, as the plugin reads it back."""
    return [{"Key": key, "Value": value} for key, value in sorted(pairs.items())]


def s3_bucket(url: str, run: str) -> Case:
    s3 = boto_client(url, "s3")

    def change(name: str) -> Json:
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": "team", "Value": "core"},
                                                               {"Key": "oob", "Value": "yes"}]})
        return {"Tags": tags(team="core", oob="yes")}

    return aws_case(url, "aws-s3-bucket", "AWS::S3::Bucket", ["s3/bucket"], {
        "base": f'new bucket.Bucket {{ label = "subject"; bucketName = "{run}-one"; '
                'tags { new { key = "team"; value = "core" } } }',
        "update": f'new bucket.Bucket {{ label = "subject"; bucketName = "{run}-one"; '
                  'versioningConfiguration { status = "Enabled" }; tags { new { key = "team"; value = "edge" } } }',
        "replace": f'new bucket.Bucket {{ label = "subject"; bucketName = "{run}-two"; '
                   'versioningConfiguration { status = "Enabled" }; tags { new { key = "team"; value = "edge" } } }',
    }, {
        "base": {"BucketName": f"{run}-one", "Tags": tags(team="core")},
        "update": {"BucketName": f"{run}-one", "VersioningConfiguration": {"Status": "Enabled"},
                   "Tags": tags(team="edge")},
        "replace": {"BucketName": f"{run}-two", "VersioningConfiguration": {"Status": "Enabled"}},
    }, change, lambda name: s3.delete_bucket(Bucket=name))


def ec2_vpc(url: str, run: str) -> Case:
    ec2 = boto_client(url, "ec2")

    def change(vpc_id: str) -> Json:
        ec2.create_tags(Resources=[vpc_id], Tags=[{"Key": "oob", "Value": "yes"}])
        return {"Tags": tags(Name=run, oob="yes")}

    return aws_case(url, "aws-ec2-vpc", "AWS::EC2::VPC", ["ec2/vpc"], {
        "base": f'new vpc.VPC {{ label = "subject"; cidrBlock = "10.10.0.0/16"; '
                f'tags {{ new {{ key = "Name"; value = "{run}" }} }} }}',
        "update": f'new vpc.VPC {{ label = "subject"; cidrBlock = "10.10.0.0/16"; enableDnsHostnames = true; '
                  f'tags {{ new {{ key = "Name"; value = "{run}" }} }} }}',
        "replace": f'new vpc.VPC {{ label = "subject"; cidrBlock = "10.11.0.0/16"; enableDnsHostnames = true; '
                   f'tags {{ new {{ key = "Name"; value = "{run}" }} }} }}',
    }, {
        "base": {"CidrBlock": "10.10.0.0/16", "EnableDnsSupport": True, "EnableDnsHostnames": False,
                 "Tags": tags(Name=run)},
        "update": {"CidrBlock": "10.10.0.0/16", "EnableDnsHostnames": True},
        "replace": {"CidrBlock": "10.11.0.0/16", "EnableDnsHostnames": True},
    }, change, lambda vpc_id: ec2.delete_vpc(VpcId=vpc_id))


_NET = 'local net = new vpc.VPC { label = "net"; cidrBlock = "10.20.0.0/16" }\nnet\n'


def ec2_subnet(url: str, run: str) -> Case:
    ec2 = boto_client(url, "ec2")

    def change(subnet_id: str) -> Json:
        ec2.modify_subnet_attribute(SubnetId=subnet_id, MapPublicIpOnLaunch={"Value": False})
        return {"MapPublicIpOnLaunch": False}

    return aws_case(url, "aws-ec2-subnet", "AWS::EC2::Subnet", ["ec2/vpc", "ec2/subnet"], {
        "base": 'new subnet.Subnet { label = "subject"; vpcId = net.res.vpcId; cidrBlock = "10.20.1.0/24" }',
        "update": 'new subnet.Subnet { label = "subject"; vpcId = net.res.vpcId; cidrBlock = "10.20.1.0/24"; '
                         'mapPublicIpOnLaunch = true }',
        "replace": 'new subnet.Subnet { label = "subject"; vpcId = net.res.vpcId; '
                          'cidrBlock = "10.20.2.0/24"; mapPublicIpOnLaunch = true }',
    }, {
        "base": {"CidrBlock": "10.20.1.0/24", "MapPublicIpOnLaunch": False},
        "update": {"CidrBlock": "10.20.1.0/24", "MapPublicIpOnLaunch": True},
        "replace": {"CidrBlock": "10.20.2.0/24", "MapPublicIpOnLaunch": True},
    }, change, lambda subnet_id: ec2.delete_subnet(SubnetId=subnet_id), setup=_NET)


def ec2_security_group(url: str, run: str) -> Case:
    ec2 = boto_client(url, "ec2")

    def change(group_id: str) -> Json:
        ec2.create_tags(Resources=[group_id], Tags=[{"Key": "oob", "Value": "yes"}])
        return {"Tags": tags(team="edge", oob="yes")}

    return aws_case(url, "aws-ec2-securitygroup", "AWS::EC2::SecurityGroup", ["ec2/vpc", "ec2/securitygroup"], {
        "base": f'new securitygroup.SecurityGroup {{ label = "subject"; groupName = "{run}-web"; '
                       'groupDescription = "web servers"; vpcId = net.res.vpcId; '
                       'tags { new { key = "team"; value = "core" } } }',
        "update": f'new securitygroup.SecurityGroup {{ label = "subject"; groupName = "{run}-web"; '
                         'groupDescription = "web servers"; vpcId = net.res.vpcId; '
                         'tags { new { key = "team"; value = "edge" } } }',
        "replace": f'new securitygroup.SecurityGroup {{ label = "subject"; groupName = "{run}-web2"; '
                          'groupDescription = "web servers"; vpcId = net.res.vpcId; '
                          'tags { new { key = "team"; value = "edge" } } }',
    }, {
        "base": {"GroupName": f"{run}-web", "GroupDescription": "web servers", "Tags": tags(team="core")},
        "update": {"GroupName": f"{run}-web", "Tags": tags(team="edge")},
        "replace": {"GroupName": f"{run}-web2", "Tags": tags(team="edge")},
    }, change, lambda group_id: ec2.delete_security_group(GroupId=group_id), setup=_NET)


def ec2_security_group_ingress(url: str, run: str) -> Case:
    ec2 = boto_client(url, "ec2")
    group = (_NET + f'local web = new securitygroup.SecurityGroup {{ label = "web"; groupName = "{run}-rules"; '
             'groupDescription = "rules"; vpcId = net.res.vpcId }\nweb\n')

    def rule(port: int, description: str) -> str:
        return ('new securitygroupingress.SecurityGroupIngress { label = "subject"; groupId = web.res.groupId; '
                f'ipProtocol = "tcp"; fromPort = {port}; toPort = {port}; cidrIp = "10.0.0.0/8"; '
                f'description = "{description}" }}')

    def change(rule_id: str) -> Json:
        found = ec2.describe_security_group_rules(SecurityGroupRuleIds=[rule_id])["SecurityGroupRules"][0]
        ec2.modify_security_group_rules(GroupId=found["GroupId"], SecurityGroupRules=[{
            "SecurityGroupRuleId": rule_id, "SecurityGroupRule": {
                "IpProtocol": "tcp", "FromPort": found["FromPort"], "ToPort": found["ToPort"],
                "CidrIpv4": found["CidrIpv4"], "Description": "changed by hand"}}])
        return {"Description": "changed by hand"}

    def delete(rule_id: str) -> None:
        found = ec2.describe_security_group_rules(SecurityGroupRuleIds=[rule_id])["SecurityGroupRules"][0]
        ec2.revoke_security_group_ingress(GroupId=found["GroupId"], SecurityGroupRuleIds=[rule_id])

    return aws_case(url, "aws-ec2-securitygroupingress", "AWS::EC2::SecurityGroupIngress",
                    ["ec2/vpc", "ec2/securitygroup", "ec2/securitygroupingress"], {
                        "base": rule(443, "https"), "update": rule(443, "tls"), "replace": rule(8443, "tls"),
                    }, {
                        "base": {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8",
                                 "Description": "https"},
                        "update": {"FromPort": 443, "Description": "tls"},
                        "replace": {"FromPort": 8443, "Description": "tls"},
                    }, change, delete, setup=group)


def ec2_internet_gateway(url: str, run: str) -> Case:
    ec2 = boto_client(url, "ec2")

    def change(gateway_id: str) -> Json:
        ec2.create_tags(Resources=[gateway_id], Tags=[{"Key": "oob", "Value": "yes"}])
        return {"Tags": tags(Name="edge", oob="yes")}

    return aws_case(url, "aws-ec2-internetgateway", "AWS::EC2::InternetGateway", ["ec2/internetgateway"], {
        "base": 'new internetgateway.InternetGateway { label = "subject"; tags { new { key = "Name"; value = "gw" } } }',
        "update": 'new internetgateway.InternetGateway { label = "subject"; '
                  'tags { new { key = "Name"; value = "edge" } } }',
    }, {
        "base": {"Tags": tags(Name="gw")},
        "update": {"Tags": tags(Name="edge")},
    }, change, lambda gateway_id: ec2.delete_internet_gateway(InternetGatewayId=gateway_id))


def ec2_route_table(url: str, run: str) -> Case:
    ec2 = boto_client(url, "ec2")
    two = _NET + 'local net2 = new vpc.VPC { label = "net2"; cidrBlock = "10.21.0.0/16" }\nnet2\n'

    def change(table_id: str) -> Json:
        ec2.create_tags(Resources=[table_id], Tags=[{"Key": "oob", "Value": "yes"}])
        return {"Tags": tags(Name="edge", oob="yes")}

    return aws_case(url, "aws-ec2-routetable", "AWS::EC2::RouteTable", ["ec2/vpc", "ec2/routetable"], {
        "base": 'new routetable.RouteTable { label = "subject"; vpcId = net.res.vpcId; '
                      'tags { new { key = "Name"; value = "private" } } }',
        "update": 'new routetable.RouteTable { label = "subject"; vpcId = net.res.vpcId; '
                        'tags { new { key = "Name"; value = "edge" } } }',
        "replace": 'new routetable.RouteTable { label = "subject"; vpcId = net2.res.vpcId; '
                         'tags { new { key = "Name"; value = "edge" } } }',
    }, {
        "base": {"Tags": tags(Name="private")},
        "update": {"Tags": tags(Name="edge")},
        "replace": {"Tags": tags(Name="edge")},
    }, change, lambda table_id: ec2.delete_route_table(RouteTableId=table_id), setup=two)


def sqs_queue(url: str, run: str) -> Case:
    sqs = boto_client(url, "sqs")

    def change(queue_url: str) -> Json:
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"DelaySeconds": "5"})
        return {"DelaySeconds": 5}

    return aws_case(url, "aws-sqs-queue", "AWS::SQS::Queue", ["sqs/queue"], {
        "base": f'new queue.Queue {{ label = "subject"; queueName = "{run}-jobs"; visibilityTimeout = 45 }}',
        "update": f'new queue.Queue {{ label = "subject"; queueName = "{run}-jobs"; visibilityTimeout = 90; '
                  'tags { new { key = "team"; value = "core" } } }',
        "replace": f'new queue.Queue {{ label = "subject"; queueName = "{run}-tasks"; visibilityTimeout = 90 }}',
    }, {
        "base": {"QueueName": f"{run}-jobs", "VisibilityTimeout": 45, "DelaySeconds": 0, "FifoQueue": False},
        "update": {"VisibilityTimeout": 90, "Tags": tags(team="core")},
        "replace": {"QueueName": f"{run}-tasks", "VisibilityTimeout": 90},
    }, change, lambda queue_url: sqs.delete_queue(QueueUrl=queue_url))


def sns_topic(url: str, run: str) -> Case:
    sns = boto_client(url, "sns")

    def change(arn: str) -> Json:
        sns.set_topic_attributes(TopicArn=arn, AttributeName="DisplayName", AttributeValue="by hand")
        return {"DisplayName": "by hand"}

    return aws_case(url, "aws-sns-topic", "AWS::SNS::Topic", ["sns/topic"], {
        "base": f'new topic.Topic {{ label = "subject"; topicName = "{run}-events"; displayName = "Events" }}',
        "update": f'new topic.Topic {{ label = "subject"; topicName = "{run}-events"; displayName = "All events" }}',
        "replace": f'new topic.Topic {{ label = "subject"; topicName = "{run}-alerts"; displayName = "All events" }}',
    }, {
        "base": {"TopicName": f"{run}-events", "DisplayName": "Events"},
        "update": {"DisplayName": "All events"},
        "replace": {"TopicName": f"{run}-alerts", "DisplayName": "All events"},
    }, change, lambda arn: sns.delete_topic(TopicArn=arn))


def logs_log_group(url: str, run: str) -> Case:
    logs = boto_client(url, "logs")

    def change(name: str) -> Json:
        logs.put_retention_policy(logGroupName=name, retentionInDays=30)
        return {"RetentionInDays": 30}

    return aws_case(url, "aws-logs-loggroup", "AWS::Logs::LogGroup", ["logs/loggroup"], {
        "base": f'new loggroup.LogGroup {{ label = "subject"; logGroupName = "/{run}/app"; retentionInDays = 7 }}',
        "update": f'new loggroup.LogGroup {{ label = "subject"; logGroupName = "/{run}/app"; retentionInDays = 14 }}',
        "replace": f'new loggroup.LogGroup {{ label = "subject"; logGroupName = "/{run}/web"; retentionInDays = 14 }}',
    }, {
        "base": {"LogGroupName": f"/{run}/app", "RetentionInDays": 7},
        "update": {"RetentionInDays": 14},
        "replace": {"LogGroupName": f"/{run}/web", "RetentionInDays": 14},
    }, change, lambda name: logs.delete_log_group(logGroupName=name))


CASES: dict[str, Callable[[str, str], Case]] = {
    "s3-bucket": s3_bucket, "ec2-vpc": ec2_vpc, "ec2-subnet": ec2_subnet, "ec2-securitygroup": ec2_security_group,
    "ec2-securitygroupingress": ec2_security_group_ingress, "ec2-internetgateway": ec2_internet_gateway,
    "ec2-routetable": ec2_route_table, "sqs-queue": sqs_queue, "sns-topic": sns_topic,
    "logs-loggroup": logs_log_group,
}

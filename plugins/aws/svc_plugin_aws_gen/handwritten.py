"""The types whose Pkl modules are written by hand: the generator leaves them as they are.

They are the types with native boto3 handlers (``svc_plugin_aws/handlers/``); their modules keep their paths,
names and hints, so every forma that works today keeps working. Each is also where the generator would put it.
"""

from __future__ import annotations

HAND_WRITTEN: frozenset[str] = frozenset({
    "AWS::DynamoDB::Table",
    "AWS::EC2::InternetGateway",
    "AWS::EC2::RouteTable",
    "AWS::EC2::SecurityGroup",
    "AWS::EC2::SecurityGroupIngress",
    "AWS::EC2::Subnet",
    "AWS::EC2::VPC",
    "AWS::ECS::Cluster",
    "AWS::IAM::Group",
    "AWS::IAM::ManagedPolicy",
    "AWS::IAM::OIDCProvider",
    "AWS::IAM::Role",
    "AWS::IAM::SAMLProvider",
    "AWS::IAM::ServerCertificate",
    "AWS::Logs::LogGroup",
    "AWS::Route53::HostedZone",
    "AWS::S3::Bucket",
    "AWS::SecretsManager::Secret",
    "AWS::SNS::Topic",
    "AWS::SQS::Queue",
})

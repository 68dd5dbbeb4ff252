"""AWS: resource types named as in CloudFormation, on boto3, with credentials from the standard chain."""

from svc_plugin_aws.plugin import Plugin

__all__ = ["Plugin"]

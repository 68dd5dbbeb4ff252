"""Updating and rolling back a deployed agent on the container service (ECS): ``svc deploy …``."""

from svc.deploy.errors import DeployError

__all__ = ["DeployError"]

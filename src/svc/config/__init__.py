"""The agent's and the CLI's configuration (``svc:/Config.pkl``)."""

from svc.config.loader import (
    ConfigError,
    cli_config,
    default_cli_config_path,
    load_cli_config,
    load_config,
    load_defaults,
)
from svc.config.model import AgentConfig, CliConfig, ResourcePluginConfig, SvcConfig

__all__ = [
    "AgentConfig",
    "CliConfig",
    "ConfigError",
    "ResourcePluginConfig",
    "SvcConfig",
    "cli_config",
    "default_cli_config_path",
    "load_cli_config",
    "load_config",
    "load_defaults",
]

"""The agent's and the CLI's configuration (``svc:/Config.pkl``).

The agent's models (``AgentConfig``, ``ResourcePluginConfig``, ``SvcConfig``) are imported on first use: a CLI
command, which needs ``cli_config`` only, does not define them (``svc.config.cli_model``).
"""

from typing import TYPE_CHECKING, Any

from svc.config.cli_model import CliConfig
from svc.config.loader import (
    ConfigError,
    cli_config,
    default_cli_config_path,
    load_cli_config,
    load_config,
    load_defaults,
)

if TYPE_CHECKING:
    from svc.config.model import AgentConfig, ResourcePluginConfig, SvcConfig

_AGENT_MODELS = {"AgentConfig", "ResourcePluginConfig", "SvcConfig"}


def __getattr__(name: str) -> Any:
    if name in _AGENT_MODELS:
        from svc.config import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

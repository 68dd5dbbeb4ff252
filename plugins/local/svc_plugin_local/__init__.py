"""LOCAL: real resources with no cloud. Files and directories under a target's root directory."""

from svc_plugin_local.plugin import Plugin

__all__ = ["Plugin"]

"""Resource plugins: which are installed, and (later) how the agent runs them."""

from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP, InstalledPlugin, installed_plugins

__all__ = ["PLUGIN_ENTRY_POINT_GROUP", "InstalledPlugin", "installed_plugins"]

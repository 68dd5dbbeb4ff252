"""Resource plugins: which are installed (`installed`), the author's contract (`sdk`), and how the agent runs them
(`host` + `process` over `protocol`; `serve` on the plugin side; `runner` in process for tests)."""

from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP, InstalledPlugin, installed_plugins

__all__ = ["PLUGIN_ENTRY_POINT_GROUP", "InstalledPlugin", "installed_plugins"]

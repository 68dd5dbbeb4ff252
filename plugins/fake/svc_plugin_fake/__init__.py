"""FAKE: svc's controllable test cloud. The plugin class is ``Plugin``; its state is ``FakeCloud``."""

from svc_plugin_fake.cloud import KNOBS, FakeCloud
from svc_plugin_fake.plugin import Plugin

__all__ = ["KNOBS", "FakeCloud", "Plugin"]

"""Every resource type of the plugin: one module each, registered with ``@register`` when imported.

Importing this package imports every module in it, so adding a type is adding a module (and its Pkl
schema module under ``schema/``); nothing else lists the types.
"""

from __future__ import annotations

import importlib
import pkgutil

from svc_plugin_aws.handler import REGISTRY, Handler


def load_all() -> dict[str, Handler]:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY

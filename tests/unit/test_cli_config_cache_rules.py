"""Which config texts the CLI may keep the rendered ``cli`` block of (``svc.config.cli_cache.self_contained``): only
those whose value depends on svc's and the plugins' modules alone. Anything else is evaluated on every command."""

from __future__ import annotations

import pytest

from svc.config.cli_cache import self_contained

PLAIN = 'amends "svc:/Config.pkl"\nimport "plugins:/LOCAL.pkl"\ncli { api { port = 1234 } }\n'


def test_a_config_of_svc_and_plugin_modules_alone_may_be_kept() -> None:
    assert self_contained(PLAIN)
    assert self_contained('amends "svc:/Config.pkl"\n')


@pytest.mark.parametrize("text", [
    'amends "svc:/Config.pkl"\ncli { auth { type = "basic"; username = "u"; password = read("env:PW") } }\n',
    'amends "svc:/Config.pkl"\ncli { api { port = read?("prop:port")?.toInt() ?? 1 } }\n',
    'amends "svc:/Config.pkl"\nx = read*("env:*")\n',
    'amends "svc:/Config.pkl"\nx = `read`("env:HOME")\n',
    'amends "svc:/Config.pkl"\nx = read ("file:/etc/hostname")\n',
])
def test_a_config_that_reads_anything_is_evaluated_every_time(text: str) -> None:
    assert not self_contained(text)


@pytest.mark.parametrize("text", [
    'amends "svc:/Config.pkl"\nimport "settings.pkl"\n',  # a file next to it
    'amends "svc:/Config.pkl"\nimport "file:///etc/svc/shared.pkl"\n',
    'amends "package://example.com/svc-base@1.0.0#/Config.pkl"\n',
    'amends "svc:/Config.pkl"\nx = import("https://example.com/x.pkl")\n',
    'amends "svc:/Config.pkl"\nimport* "plugins:/*.pkl" as all\nimport* "*.pkl" as here\n',
    'amends "svc:/Config.pkl"\nimport #"settings.pkl"#\n',  # a string of another kind
    'amends "svc:/Config.pkl"\nimport "plugins:/\\u{41}WS.pkl"\n',  # an escape in the URI
])
def test_a_config_that_imports_from_elsewhere_is_evaluated_every_time(text: str) -> None:
    assert not self_contained(text)


def test_a_plugin_module_may_import_its_neighbours() -> None:
    """A plugin's Config.pkl is served under ``plugins:``; a relative import resolves there too."""
    text = 'import "svc:/Config.pkl"\nimport "shared.pkl"\nclass PluginConfig extends Config.Base {}\n'
    assert self_contained(text, relative_imports=True)
    assert not self_contained(text)

"""Loading a config file: evaluate it with the real Pkl, then build the typed objects."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from svc.config.model import SvcConfig
from svc.pkl import EvaluationRequest, PklError, bundled_modules, evaluate_json, shared_server


class ConfigError(Exception):
    """The config file is missing or invalid; the message says which file and what to fix."""


def default_cli_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "svc" / "svc.conf.pkl"


def _validated(rendered: object, path: Path | str) -> SvcConfig:
    if not isinstance(rendered, dict) or not {"agent", "cli"} <= rendered.keys():
        raise ConfigError(f'{path} does not amend the svc config; start it with: amends "svc:/Config.pkl"')
    try:
        return SvcConfig.model_validate(rendered)
    except ValidationError as exc:  # Pkl checked the types; this is a mismatch between module and models
        raise ConfigError(f"invalid config {path}: {exc}") from exc


def load_config(path: Path) -> SvcConfig:
    """Evaluates ``path`` (which amends ``svc:/Config.pkl``) into a :class:`SvcConfig`."""
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        rendered = evaluate_json(path)
    except PklError as exc:
        raise ConfigError(f"invalid config {path}:\n{exc}") from exc
    return _validated(rendered, path)


def load_defaults() -> SvcConfig:
    """``svc:/Config.pkl`` itself: every default, nothing amended."""
    request = EvaluationRequest(module_uri="svc:/Config.pkl", readers=[bundled_modules()])
    return _validated(json.loads(shared_server().evaluate(request)), "svc:/Config.pkl")


def load_cli_config(path: Path | None) -> SvcConfig:
    """The CLI's config: ``path`` if given, else ``~/.config/svc/svc.conf.pkl``, else the defaults."""
    if path is not None:
        return load_config(path)
    default = default_cli_config_path()
    return load_config(default) if default.is_file() else load_defaults()

"""Loading a config file: evaluate it with the real Pkl, then build the typed objects."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from svc.config import cli_cache
from svc.config.cli_model import ApiConfig, CliConfig, decode_cli_block

if TYPE_CHECKING:
    from svc.config.model import SvcConfig

# svc.pkl (the Pkl server's client and svc's module readers) is imported by the functions that evaluate: a command
# imports this module for the config's types and its errors, and `svc inventory --help` evaluates nothing.

RETRY_FOR_VARIABLE = "SVC_RETRY_FOR"  # overrides cli.api.retryFor, in seconds


class ConfigError(Exception):
    """The config file is missing or invalid; the message says which file and what to fix."""


def default_cli_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "svc" / "svc.conf.pkl"


def _checked(rendered: object, path: Path | str) -> dict[str, Any]:
    if not isinstance(rendered, dict) or not {"agent", "cli"} <= rendered.keys():
        raise ConfigError(f'{path} does not amend the svc config; start it with: amends "svc:/Config.pkl"')
    return rendered


def _validated(rendered: object, path: Path | str) -> SvcConfig:
    from pydantic import ValidationError

    from svc.config.model import SvcConfig  # the agent's models: defined only for a whole config

    try:
        return SvcConfig.model_validate(_checked(rendered, path))
    except ValidationError as exc:  # Pkl checked the types; this is a mismatch between module and models
        raise ConfigError(f"invalid config {path}: {exc}") from exc


def _rendered_file(path: Path, readers: Sequence[Any] | None = None) -> object:
    """``path`` (which amends ``svc:/Config.pkl``) evaluated to its JSON; ``readers``: its module readers (default:
    svc's)."""
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    from svc.pkl import PklError, evaluate_json

    try:
        return evaluate_json(path, readers=readers)
    except PklError as exc:
        raise ConfigError(f"invalid config {path}:\n{exc}") from exc


def _rendered_defaults(readers: Sequence[Any] | None = None) -> object:
    from svc.pkl import EvaluationRequest, bundled_modules, shared_server

    request = EvaluationRequest(module_uri="svc:/Config.pkl", readers=readers or [bundled_modules()])
    return json.loads(shared_server().evaluate(request))


def _rendered_for_cli(path: Path | None) -> tuple[object, Path | str]:
    """The CLI's config evaluated, and where it came from: ``path`` if given, else ``~/.config/svc/svc.conf.pkl``,
    else ``svc:/Config.pkl`` (the defaults)."""
    source = _cli_source(path)
    return (_rendered_defaults(), "svc:/Config.pkl") if source is None else (_rendered_file(source), source)


def _cli_source(path: Path | None) -> Path | None:
    """The CLI's config file: ``path`` if given, else ``~/.config/svc/svc.conf.pkl`` if there is one, else None
    (the defaults)."""
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path
    default = default_cli_config_path()
    return default if default.is_file() else None


def _module_readers() -> list[Any]:
    from svc.pkl import bundled_modules, plugin_modules

    return [bundled_modules(), plugin_modules()]


def _evaluated_cli_block(source: Path | None) -> dict[str, Any]:
    """The ``cli`` block of ``source`` (None: the defaults) as Pkl renders it now; kept for the next command when
    it may be (``cli_cache``)."""
    recorder = cli_cache.Recorder()
    readers = [recorder.wrap(reader) for reader in _module_readers()]
    rendered = _rendered_defaults(readers) if source is None else _rendered_file(source, readers)
    block = _checked(rendered, source or "svc:/Config.pkl")["cli"]
    cli_cache.write_block(source, recorder, block)
    return block


def load_config(path: Path) -> SvcConfig:
    """Evaluates ``path`` (which amends ``svc:/Config.pkl``) into a :class:`SvcConfig`."""
    return _validated(_rendered_file(path), path)


def load_defaults() -> SvcConfig:
    """``svc:/Config.pkl`` itself: every default, nothing amended."""
    return _validated(_rendered_defaults(), "svc:/Config.pkl")


def load_cli_config(path: Path | None) -> SvcConfig:
    """The CLI's config: ``path`` if given, else ``~/.config/svc/svc.conf.pkl``, else the defaults; then the
    agent's address and the retry budget from the environment (``SVC_API_URL``, ``SVC_API_PORT``,
    ``SVC_RETRY_FOR``: ``api_from_environment``)."""
    config = _validated(*_rendered_for_cli(path))
    api = api_from_environment(config.cli.api)
    return config if api is config.cli.api else config.model_copy(
        update={"cli": msgspec.structs.replace(config.cli, api=api)})


def cli_config(path: Path | None) -> CliConfig:
    """``load_cli_config(path).cli``, validating the ``cli`` block only: what a CLI command needs. The agent
    block is Pkl-checked as part of the file and validated by the agent that reads it; building its models cost
    every command a tenth of its CPU. The block comes from the cache (``cli_cache``) while the file and what it
    imports are unchanged: most commands then run no Pkl at all."""
    source = _cli_source(path)
    cli = None
    cached = cli_cache.read_block(source, _module_readers)
    if cached is not None:
        try:
            cli = decode_cli_block(cached)
        except ValueError:  # kept by a build of svc whose models differed: read the file again
            cli = None
    if cli is None:
        try:
            cli = decode_cli_block(_evaluated_cli_block(source))
        except ValueError as exc:  # as in _validated: a mismatch between module and models
            raise ConfigError(f"invalid config {source or 'svc:/Config.pkl'}: {exc}") from exc
    api = api_from_environment(cli.api)
    return cli if api is cli.api else msgspec.structs.replace(cli, api=api)


def api_from_environment(api: ApiConfig) -> ApiConfig:
    """``api`` with ``SVC_API_URL`` (a host, or an http(s) URL that may carry the port), ``SVC_API_PORT`` and
    ``SVC_RETRY_FOR`` applied over it: the CLI reaches another agent, or gives up sooner, without a config file
    edited. A port in the URL wins."""
    changes: dict[str, object] = {}
    if port := os.environ.get("SVC_API_PORT", "").strip():
        changes["port"] = _port(port)
    if url := os.environ.get("SVC_API_URL", "").strip():
        changes |= _address(url)
    if (retry_for := retry_for_from_environment()) is not None:  # 0 s is falsy, and means "do not retry"
        changes["retry_for"] = retry_for
    return msgspec.structs.replace(api, **changes) if changes else api


def retry_for_from_environment() -> timedelta | None:
    """``SVC_RETRY_FOR`` (seconds, ``0`` to fail at once), None when unset."""
    text = os.environ.get(RETRY_FOR_VARIABLE, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):  # also refuses nan, which float() accepts
        raise ConfigError(f"{RETRY_FOR_VARIABLE} must be a number of seconds (0 to stop retrying), not {text!r}")
    return timedelta(seconds=seconds)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ConfigError(f"SVC_API_PORT must be a port number (1-65535), not {text!r}")
    return int(text)


def _address(url: str) -> dict[str, object]:
    parts = urlsplit(url if "://" in url else f"//{url}")
    wrong = ConfigError(f"SVC_API_URL must be the agent's host or http(s) URL, e.g. agent.internal or "
                        f"https://agent.internal:49684, not {url!r}")
    if parts.scheme not in ("", "http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.username:
        raise wrong
    try:
        port = parts.port
    except ValueError:
        raise wrong from None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    address: dict[str, object] = {"url": f"{parts.scheme}://{host}" if parts.scheme else host}
    if port is not None:
        address["port"] = port
    return address

"""Plugins installed, updated and removed while the agent runs (``POST /plugins/install|uninstall|update``).

A plugin is a Python distribution, so pip does the work, on the agent's own environment (``sys.executable -m
pip``), from a package source named as ``svc upgrade`` names one (``svc.plugins.package_source``): the plugin
alone first (``--no-deps``) from that source only, then its other requirements from pip's usual configuration,
so no other index can answer for a plugin's name. Then the engine learns of it without a restart: its process is
started, the gateway serves its namespace and the catalog knows its types; a removed one is forgotten the same
way.

What is refused leaves the environment as it was:

* a distribution that is no svc plugin (no ``svc.plugins`` entry point, a manifest or schema that does not
  evaluate) is taken out again (or put back at the version it replaced): 422 ``NotASvcPlugin``;
* a plugin whose resources a running command is changing is neither removed nor updated: 409 ``PluginInUse``
  (its namespace leaves the catalog first, so no command can be admitted between the check and the removal).

One operation at a time: pip runs are serialized, as two pips on one environment would fight over its files.
pip runs in a subprocess of the event loop, so the API answers other requests meanwhile; its progress is logged.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from svc.engine.errors import NoPackageSource, NotASvcPlugin, PluginInstallFailed, PluginInUse, PluginNotFound
from svc.engine.installed_by_agent import InstalledByAgent
from svc.engine.planner import Catalog
from svc.engine.runs import Runs
from svc.engine.service import PackageRequest, PluginOperation, PluginOperations
from svc.plugins.installed import InstalledPlugin, normalized_name, plugin_distributions, plugins_of
from svc.plugins.manifest import ManifestError, read_manifest
from svc.plugins.package_source import (
    PackageSource,
    PackageSourceError,
    from_options,
    installed_from,
    recorded_source,
)
from svc.plugins.pip_runs import PipResult, outside_requirements, run_pip_async
from svc.schema.extract import SchemaExtractionError, extract_descriptors

log = logging.getLogger("svc.plugins")

# Starts one installed plugin's process and adds its namespace to the gateway and its types to the catalog;
# False when the agent config disables that plugin (it is installed, not started).
Loader = Callable[[InstalledPlugin], Awaitable[bool]]
Unloader = Callable[[str], Awaitable[None]]


def _installed_version(distribution: str) -> str | None:
    importlib.invalidate_caches()
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requires(distribution: str) -> list[str]:
    try:
        return importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return []


def _why_not_a_plugin(distribution: str, plugins: list[InstalledPlugin]) -> str | None:
    """Why the installed ``distribution`` is no usable svc plugin; None when it is one (Pkl: run in a thread)."""
    if not plugins:
        return f"{distribution} registers no svc.plugins entry point"
    for plugin in plugins:
        try:
            manifest = read_manifest(plugin)
            if not plugin.has_schema:
                return f"plugin {plugin.namespace} ships no schema/PklProject"
            extract_descriptors(plugin)
        except (ManifestError, SchemaExtractionError) as error:
            return str(error).splitlines()[0]
        declared = str(manifest.get("namespace", ""))
        if declared.upper() != plugin.namespace.upper():
            return (f"its manifest declares namespace {declared or '(none)'}, but its svc.plugins entry point is "
                    f"named {plugin.namespace}")
    return None


def resolve_source(index_url: str | None, find_links: list[str]) -> PackageSource:
    """The source a request names, else the one svc itself came from (``svc upgrade``'s rules 3 and 4);
    ``NoPackageSource`` when there is none."""
    named = from_options(index_url, find_links, "named in the request")
    if named is not None:
        return named
    try:
        found = recorded_source() or installed_from()
    except PackageSourceError as error:
        raise NoPackageSource(f"{error}; or name a package source: indexUrl / findLinks "
                              "(svc plugin … --index-url URL / --find-links DIR)") from None
    if found is None:
        raise NoPackageSource("the agent's svc was installed by name from a package index, and pip records no "
                              "index: name where plugins come from with indexUrl / findLinks (svc plugin … "
                              "--index-url URL / --find-links DIR, or cli.upgrade in the CLI config)")
    return found


class PluginManager:
    def __init__(self, catalog: Catalog, runs: Runs, load: Loader, unload: Unloader,
                 remembered: InstalledByAgent) -> None:
        self.catalog = catalog
        self.runs = runs
        self._load = load
        self._unload = unload
        self.remembered = remembered
        self._lock = asyncio.Lock()
        self._replacing = False  # the operation under the lock has stopped the plugins it replaces

    # -- the three operations -----------------------------------------------------------------------------

    async def install(self, packages: list[PackageRequest], index_url: str | None,
                      find_links: list[str]) -> PluginOperations:
        """Installs each package (an installed one at another version is updated), then starts its plugins."""
        source = resolve_source(index_url, find_links)
        done = PluginOperations()
        async with self._lock:
            for package in packages:
                done.operations.append(await self._install(package, source, done.warnings))
        return done

    async def update(self, packages: list[PackageRequest], index_url: str | None,
                     find_links: list[str]) -> PluginOperations:
        """Updates each named plugin distribution (none named: every installed one) to the newest or the given
        version, and restarts its plugins on the new code."""
        source = resolve_source(index_url, find_links)
        done = PluginOperations()
        async with self._lock:
            installed = plugin_distributions()
            for package in packages or [PackageRequest(name) for name in sorted(installed)]:
                distribution, _ = self._find(package.name, installed)
                done.operations.append(await self._install(PackageRequest(distribution, package.version), source,
                                                           done.warnings, upgrade=True))
        return done

    async def uninstall(self, names: list[str]) -> PluginOperations:
        """Stops each named plugin (by distribution name, plugin name or namespace) and uninstalls its
        distribution; refused whole when any is unknown or in use."""
        done = PluginOperations()
        async with self._lock:
            installed = plugin_distributions()
            found = [self._find(name, installed) for name in names]
            for distribution, plugins in found:
                self._refuse_if_in_use(distribution, plugins)
            for _, plugins in found:
                self._withdraw(plugins)  # before the first pause: no command is admitted on them from now on
            for distribution, plugins in found:
                done.operations.append(await self._uninstall(distribution, plugins))
        return done

    # -- steps ---------------------------------------------------------------------------------------------

    async def _install(self, package: PackageRequest, source: PackageSource, warnings: list[str], *,
                       upgrade: bool = False) -> PluginOperation:
        before = _installed_version(package.name)
        old_plugins = plugins_of(package.name) if before else []
        if before and not upgrade and package.version in (None, before):
            return PluginOperation(package.name, "noop", before, tuple(p.namespace for p in old_plugins))
        self._refuse_if_in_use(package.name, old_plugins)
        withdrawn = self._withdraw(old_plugins)  # no command is admitted on the old code meanwhile
        self._replacing = False
        try:
            return await self._replace(package, before, old_plugins, source, warnings, upgrade)
        finally:
            if not self._replacing:  # refused before the old processes stopped: they serve on
                for namespace, types in withdrawn.items():
                    self.catalog.add(namespace, types)

    async def _replace(self, package: PackageRequest, before: str | None, old_plugins: list[InstalledPlugin],
                       source: PackageSource, warnings: list[str], upgrade: bool) -> PluginOperation:
        log.info("Installing %s from %s", package.requirement(), source.describe())
        result = await self._pip_ours(["install", "--no-deps", *(["--upgrade"] if upgrade else []),
                                       *source.pip_arguments(), package.requirement()], source)
        if not result.ok:
            if result.missing():
                raise PluginNotFound(f"{result.missing()} was not found in {source.describe()}; check the name and "
                                     "version (svc plugin search lists what that source offers)",
                                     {"Name": package.name})
            raise PluginInstallFailed(f"pip could not install {package.requirement()}: {result.summary()}",
                                      {"Name": package.name, "Reason": result.summary()})
        after = _installed_version(package.name)
        if after == before:
            return PluginOperation(package.name, "noop", before, tuple(p.namespace for p in old_plugins))
        plugins = plugins_of(package.name)
        reason = await asyncio.to_thread(_why_not_a_plugin, package.name, plugins)
        if reason is not None:
            await self._put_back(package.name, before, source)
            raise NotASvcPlugin(f"{package.requirement()} is not a svc plugin: {reason}; it was "
                                + (f"put back to {before}" if before else "uninstalled again"),
                                {"Name": package.name, "Reason": reason})
        await self._install_requirements(package.name, warnings)
        self._replacing = True
        for plugin in old_plugins:
            await self._unload(plugin.namespace)
        for plugin in plugins:
            await self._start(plugin, package.name, before, source)
        log.info("Installed %s %s: plugins %s", package.name, after, ", ".join(p.namespace for p in plugins))
        return PluginOperation(package.name, "update" if before else "install", after,
                               tuple(plugin.namespace for plugin in plugins))

    async def _start(self, plugin: InstalledPlugin, distribution: str, before: str | None,
                     source: PackageSource) -> None:
        try:
            started = await self._load(plugin)
        except Exception as error:  # its process did not start: the environment goes back to how it was
            await self._put_back(distribution, before, source)
            for old in plugins_of(distribution) if before else []:
                await self._load(old)  # the version it replaced, as it ran before
            raise PluginInstallFailed(f"plugin {plugin.namespace} of {distribution} did not start: {error}; it was "
                                      + (f"put back to {before}" if before else "uninstalled again"),
                                      {"Name": distribution, "Reason": str(error)}) from error
        self.remembered.add(plugin.namespace)
        if not started:
            log.warning("plugin %s is installed but agent.resourcePlugins disables it", plugin.namespace)

    async def _uninstall(self, distribution: str, plugins: list[InstalledPlugin]) -> PluginOperation:
        version = _installed_version(distribution)
        for plugin in plugins:
            await self._unload(plugin.namespace)
        log.info("Uninstalling %s %s", distribution, version)
        result = await run_pip_async(["uninstall", "--yes", distribution], dict(os.environ))
        left = plugins_of(distribution)
        if not result.ok or left:
            for plugin in left:  # still installed: it goes on serving
                await self._load(plugin)
            reason = result.summary() if not result.ok else "pip left it installed (is it outside this environment?)"
            raise PluginInstallFailed(f"pip could not uninstall {distribution}: {reason}",
                                      {"Name": distribution, "Reason": reason})
        for plugin in plugins:
            self.remembered.remove(plugin.namespace)
        return PluginOperation(distribution, "remove", version, tuple(plugin.namespace for plugin in plugins))

    def _withdraw(self, plugins: list[InstalledPlugin]) -> dict[str, Mapping[str, Any]]:
        """Takes ``plugins`` out of the catalog (not the gateway: their running calls go on); their types."""
        withdrawn: dict[str, Mapping[str, Any]] = {}
        for plugin in plugins:
            withdrawn[plugin.namespace] = self.catalog.types_of(plugin.namespace)
            self.catalog.remove(plugin.namespace)
        return withdrawn

    def _refuse_if_in_use(self, distribution: str, plugins: list[InstalledPlugin]) -> None:
        for plugin in plugins:
            commands = self.runs.commands_using(plugin.namespace)
            if commands:
                raise PluginInUse(f"plugin {plugin.namespace} ({distribution}) is in use by running command(s) "
                                  f"{', '.join(commands)}; wait for them to end (svc command status) or cancel "
                                  "them, then try again",
                                  {"Name": distribution, "Namespace": plugin.namespace, "CommandIds": commands})

    def _find(self, name: str, installed: dict[str, list[InstalledPlugin]]) -> tuple[str, list[InstalledPlugin]]:
        """An installed plugin distribution by its name, a plugin's name (``aws``) or a namespace (``AWS``)."""
        wanted = normalized_name(name)
        if wanted in installed:
            return wanted, installed[wanted]
        for distribution, plugins in installed.items():
            if any(wanted in (plugin.namespace.lower(), plugin.dependency_name) for plugin in plugins):
                return distribution, plugins
        raise PluginNotFound(f"no installed plugin is named {name}; installed: "
                             f"{', '.join(sorted(installed)) or 'none'}", {"Name": name})

    # -- pip ------------------------------------------------------------------------------------------------

    async def _pip_ours(self, arguments: list[str], source: PackageSource) -> PipResult:
        """pip with ``source`` as its only source (pip's configured ones replaced, see ``pip_environment``)."""
        with tempfile.TemporaryDirectory(prefix="svc-plugin-") as empty_dir:
            return await run_pip_async(arguments, source.pip_environment(dict(os.environ), Path(empty_dir)))

    async def _put_back(self, distribution: str, before: str | None, source: PackageSource) -> None:
        if before is None:
            result = await run_pip_async(["uninstall", "--yes", distribution], dict(os.environ))
        else:
            result = await self._pip_ours(["install", "--no-deps", *source.pip_arguments(),
                                           f"{distribution}=={before}"], source)
        if not result.ok:
            log.error("could not put %s back as it was (%s): %s", distribution, before or "not installed",
                      result.summary())

    async def _install_requirements(self, distribution: str, warnings: list[str]) -> None:
        requirements = outside_requirements({distribution: _requires(distribution)})
        if not requirements:
            return
        log.info("Installing the requirements of %s: %s", distribution, ", ".join(requirements))
        result = await run_pip_async(["install", *requirements], dict(os.environ))
        if not result.ok:  # the plugin may still start (they may be optional); its start says if it cannot
            warnings.append(f"pip could not install the requirements of {distribution} "
                            f"({', '.join(requirements)}): {result.summary()}")

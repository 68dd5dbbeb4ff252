"""A plugin whose resources a running command is changing is not stopped under it: update and uninstall answer
409 ``PluginInUse`` (naming the commands) before pip runs, and the plugin serves on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import CALLER, TIMEOUT, fake_forma, item, run, shown
from svc.datastore import Datastore
from svc.engine.engine import Engine
from svc.engine.errors import PluginInUse
from svc.engine.installed_by_agent import InstalledByAgent
from svc.engine.plugin_manager import PluginManager
from svc.engine.service import ApplyRequest, PackageRequest
from svc.plugins.installed import InstalledPlugin

pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)


def test_a_plugin_in_use_is_neither_updated_nor_removed(datastore: Datastore, tmp_path: Path) -> None:
    cloud_path = tmp_path / "cloud.db"
    empty = tmp_path / "no-wheels"  # were the refusal missing, pip would find nothing here and change nothing
    empty.mkdir()

    async def must_not_load(plugin: InstalledPlugin) -> bool:
        raise AssertionError(f"{plugin.namespace} was restarted under a running command")

    async def must_not_unload(namespace: str) -> None:
        raise AssertionError(f"{namespace} was stopped under a running command")

    async def scenario(engine: Engine) -> None:
        manager = PluginManager(engine.catalog, engine.runs, must_not_load, must_not_unload,
                                InstalledByAgent(tmp_path / "plugins-installed.json"))
        FakeCloud(cloud_path).set_knob("hang", {"ops": ["create"]})
        response = await shown(engine).apply(ApplyRequest(fake_forma(cloud_path, [item("a", "1")]), "reconcile"),
                                             CALLER)
        while not engine.runs.commands_using("FAKE"):
            await asyncio.sleep(0.02)
        with pytest.raises(PluginInUse) as refused:
            await manager.update([PackageRequest("svc-plugin-fake")], None, [str(empty)])
        assert refused.value.status == 409
        assert refused.value.data == {"Name": "svc-plugin-fake", "Namespace": "FAKE",
                                      "CommandIds": [response.CommandId]}
        assert "wait for them to end (svc command status) or cancel them" in refused.value.message
        with pytest.raises(PluginInUse):
            await manager.uninstall(["fake"])
        assert "FAKE::Test::Item" in engine.catalog.types  # still served: new commands are admitted
        FakeCloud(cloud_path).clear_knobs()
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        assert view is not None and view.State == "Success"
        assert engine.runs.commands_using("FAKE") == []

    run(datastore, tmp_path, scenario)

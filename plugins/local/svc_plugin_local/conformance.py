"""LOCAL's conformance cases (``svc plugin test LOCAL``): a file and a directory under a root in the kit's scratch
directory, changed and deleted behind svc's back with plain file operations."""

from __future__ import annotations

import os
from pathlib import Path

from svc.plugins.conformance import Case

IMPORTS = 'import "@local/local.pkl" as lcl\nimport "@local/fs.pkl"\n'


def file_case(directory: Path) -> Case:
    root = directory / "root"

    def change(native_id: str) -> dict[str, str]:
        (root / native_id).write_text("edited by hand")
        return {"Content": "edited by hand"}

    return Case(
        id="local-file", namespace="LOCAL", resource_type="LOCAL::FS::File", imports=IMPORTS,
        target=f'new lcl.Config {{ root = "{root}" }}', target_config={"Type": "LOCAL", "Root": str(root)},
        resources={
            "base": 'new fs.File { label = "subject"; path = "etc/app.conf"; content = "port = 80"; mode = "0640" }',
            "update": 'new fs.File { label = "subject"; path = "etc/app.conf"; content = "port = 8080"; '
                      'mode = "0600" }',
            "replace": 'new fs.File { label = "subject"; path = "etc/app2.conf"; content = "port = 8080"; '
                       'mode = "0600" }',
        },
        expected={
            "base": {"Path": "etc/app.conf", "Content": "port = 80", "Mode": "0640"},
            "update": {"Path": "etc/app.conf", "Content": "port = 8080", "Mode": "0600"},
            "replace": {"Path": "etc/app2.conf", "Content": "port = 8080", "Mode": "0600"},
        },
        change_out_of_band=change, delete_out_of_band=lambda native_id: (root / native_id).unlink())


def directory_case(directory: Path) -> Case:
    root = directory / "root"

    def change(native_id: str) -> dict[str, str]:
        os.chmod(root / native_id, 0o755)
        return {"Mode": "0755"}

    return Case(
        id="local-directory", namespace="LOCAL", resource_type="LOCAL::FS::Directory", imports=IMPORTS,
        target=f'new lcl.Config {{ root = "{root}" }}', target_config={"Type": "LOCAL", "Root": str(root)},
        resources={
            "base": 'new fs.Directory { label = "subject"; path = "var/data"; mode = "0750" }',
            "update": 'new fs.Directory { label = "subject"; path = "var/data"; mode = "0700" }',
            "replace": 'new fs.Directory { label = "subject"; path = "var/data2"; mode = "0700" }',
        },
        expected={
            "base": {"Path": "var/data", "Mode": "0750"},
            "update": {"Path": "var/data", "Mode": "0700"},
            "replace": {"Path": "var/data2", "Mode": "0700"},
        },
        change_out_of_band=change, delete_out_of_band=lambda native_id: (root / native_id).rmdir())


def cases(directory: Path) -> list[Case]:
    return [file_case(directory), directory_case(directory)]

"""The Dockerfile and its CA-bundle variant, read as instructions (no Docker engine runs here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from deploy_support import DEPLOY, REPO

from svc import __version__

Instruction = tuple[str, str]


def instructions(path: Path) -> list[Instruction]:
    """(KEYWORD, arguments) per instruction, continuation lines joined, comments dropped."""
    logical, pending = [], ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, arguments = pending.strip().partition(" ")
        logical.append((keyword.upper(), " ".join(arguments.split())))
        pending = ""
    return logical


def stages(found: list[Instruction]) -> list[list[Instruction]]:
    result: list[list[Instruction]] = []
    for instruction in found:
        if instruction[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def build_args(found: list[Instruction]) -> dict[str, str]:
    return dict(arguments.split("=", 1) for keyword, arguments in found if keyword == "ARG" and "=" in arguments)


DOCKERFILE = instructions(REPO / "Dockerfile")
RDS_CA = instructions(DEPLOY / "Dockerfile.rds-ca")


def test_base_images_are_pinned_by_version() -> None:
    args = build_args(DOCKERFILE)
    images = [re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], arguments.split()[-3 if " AS " in arguments else -1])
              for keyword, arguments in DOCKERFILE if keyword == "FROM"]
    assert len(images) == 3
    for image in images:
        name, _, tag = image.partition(":")
        assert re.fullmatch(r"\d+\.\d+\.\d+-[a-z-]+", tag), f"{image} is not pinned to a version"


def test_svc_is_installed_at_the_version_of_this_tree() -> None:
    final = stages(DOCKERFILE)[-1]
    assert build_args(final)["SVC_VERSION"] == __version__
    installs = [arguments for keyword, arguments in final if keyword == "RUN" and "pip install" in arguments]
    assert len(installs) == 1 and '"svc==${SVC_VERSION}"' in installs[0]


def test_pkl_comes_from_package_lock_the_way_the_installer_takes_it() -> None:
    pkl = stages(DOCKERFILE)[0]
    assert ("COPY", "package.json package-lock.json ./") in pkl
    [run] = [arguments for keyword, arguments in pkl if keyword == "RUN"]
    assert run.startswith("npm ci --ignore-scripts")  # npm ci checks the lock file's sha512 integrity
    installer = (REPO / "scripts" / "install.sh").read_text()
    source = re.search(r"install -m 0755 (\S+/bin/pkl)", installer).group(1)  # type: ignore[union-attr]
    assert f"install -m 0755 {source} " in run
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert lock["packages"][f"node_modules/{source.split('/bin/')[0].removeprefix('node_modules/')}"]["integrity"]
    final = stages(DOCKERFILE)[-1]
    assert ("COPY", "--from=pkl /build/pkl /usr/local/bin/pkl") in final
    assert any(keyword == "ENV" and "SVC_PKL=/usr/local/bin/pkl" in arguments for keyword, arguments in final)


def test_runtime_runs_unprivileged_exposes_49684_and_checks_health() -> None:
    final = stages(DOCKERFILE)[-1]
    users = [arguments for keyword, arguments in final if keyword == "USER"]
    assert users == ["svc"]
    assert any(keyword == "RUN" and "useradd --system --uid 10001" in arguments and arguments.endswith(" svc")
               for keyword, arguments in final)
    keywords = [keyword for keyword, _ in final]
    # Nothing runs as root after the switch.
    assert "RUN" not in keywords[keywords.index("USER"):]
    assert ("EXPOSE", "49684") in final
    healthcheck = next(arguments for keyword, arguments in final if keyword == "HEALTHCHECK")
    assert healthcheck.endswith('CMD ["/usr/local/bin/svc-healthcheck"]')
    assert ("COPY", "--chmod=0755 deploy/healthcheck.py /usr/local/bin/svc-healthcheck") in final
    assert ("COPY", "--chmod=0755 deploy/entrypoint.sh /usr/local/bin/svc-entrypoint") in final
    assert ("CMD", '["/usr/local/bin/svc-entrypoint"]') in final
    assert "ENTRYPOINT" not in keywords  # platform command overrides must replace, not append


def test_build_context_leaves_out_local_environments() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".git", ".venv", "node_modules"} <= ignored


def test_ca_bundle_variant_adds_a_world_readable_bundle_then_drops_root() -> None:
    assert RDS_CA[0] == ("ARG", f"SVC_IMAGE=svc:{__version__}")
    assert RDS_CA[1] == ("FROM", "${SVC_IMAGE}")
    bundle = "/etc/svc/rds-global-bundle.pem"
    assert ("ADD", f"https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem {bundle}") in RDS_CA
    assert any(keyword == "RUN" and f"chmod 0644 {bundle}" in arguments for keyword, arguments in RDS_CA)
    # Back to the base image's unprivileged user as the last word.
    assert RDS_CA[-1] == ("USER", "svc")
    assert [keyword for keyword, _ in RDS_CA].count("USER") == 2


def test_the_agents_image_starts_no_cli_server() -> None:
    """An ``svc`` command run in the agent's container (docker exec) runs in its own process: no CLI server idles
    beside the agent within the task's memory."""
    final = stages(DOCKERFILE)[-1]
    assert any(keyword == "ENV" and "SVC_CLI_SERVER=off" in arguments for keyword, arguments in final)

"""Container image references: the pinned tag a deployment needs, and the svc version it names."""

from __future__ import annotations

import re

from svc.deploy.errors import DeployError

# Agent images are tagged by version (1.2.3, 1.2.3rc1, v1.2.3, 1.2.3-rds-ca for the CA-bundle variant).
_VERSION_TAG = re.compile(
    r"v?(?P<version>\d+(?:\.\d+)*(?:(?:a|b|rc|\.dev|\.post)\d+)?)(?:-(?P<variant>[A-Za-z0-9._-]+))?")


def image_tag(image: str) -> str | None:
    """The tag of ``image``, or None when it has none (a digest reference or a bare repository)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]  # a registry host may carry a port: registry:5000/svc
    return last.split(":", 1)[1] if ":" in last else None


def require_pinned(image: str) -> None:
    """Refuses references that do not pin one build: rollback and version checks depend on the tag."""
    if not image or any(ch.isspace() for ch in image):
        raise DeployError(f"invalid image reference {image!r}; expected e.g. registry/svc:1.2.3")
    if "@" in image:
        return  # a digest pins exactly one build
    tag = image_tag(image)
    if tag is None or tag == "latest":
        raise DeployError(f"image {image} does not pin a version; use a version tag such as "
                          f"{image.rsplit(':', 1)[0] if tag else image}:1.2.3 (never latest)")


def version_of(image: str) -> str | None:
    """The svc version an image tag names (``…/svc:1.2.3`` → ``1.2.3``), or None when it names none."""
    tag = image_tag(image)
    if tag is None:
        return None
    match = _VERSION_TAG.fullmatch(tag)
    return match.group("version") if match else None


def variant_of(image: str) -> str | None:
    """The image variant a version tag names (``…/svc:1.2.3-rds-ca`` → ``rds-ca``, ``…/svc:1.2.3`` → ``""``),
    or None when the tag names no version (a digest, a custom tag): then nothing is known of its variant."""
    tag = image_tag(image)
    match = _VERSION_TAG.fullmatch(tag) if tag is not None else None
    return (match.group("variant") or "") if match else None

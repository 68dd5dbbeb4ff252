"""Image references: which ones pin a build, and the svc version a tag names."""

from __future__ import annotations

import pytest

from svc.deploy import DeployError
from svc.deploy.images import require_pinned, variant_of, version_of


@pytest.mark.parametrize(("image", "version"), [
    ("registry.example.com/svc:1.2.3", "1.2.3"),
    ("123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/svc:v2.0.10", "2.0.10"),
    ("registry:5000/svc:1.2.3rc1", "1.2.3rc1"),           # a port is not a tag
    ("registry.example.com/svc:1.2.3-rds-ca", "1.2.3"),     # the CA-bundle variant
    ("svc:0.1.0.dev4", "0.1.0.dev4"),
    ("registry.example.com/svc:1.2.3@sha256:" + "a" * 64, "1.2.3"),
    ("registry.example.com/svc@sha256:" + "a" * 64, None),  # pinned, but names no version
    ("registry.example.com/svc:stable", None),
    ("registry:5000/svc", None),
])
def test_version_of(image: str, version: str | None) -> None:
    assert version_of(image) == version


@pytest.mark.parametrize(("image", "variant"), [
    ("registry:5000/svc:1.2.3", ""),
    ("registry.example.com/svc:v1.2.3-rds-ca", "rds-ca"),
    ("registry.example.com/svc:1.2.3-rds-ca@sha256:" + "a" * 64, "rds-ca"),
    ("registry.example.com/svc@sha256:" + "a" * 64, None),  # nothing known of it
    ("registry.example.com/svc:stable", None),
])
def test_variant_of(image: str, variant: str | None) -> None:
    assert variant_of(image) == variant


@pytest.mark.parametrize("image", ["svc:1.2.3", "registry:5000/svc:prod-2024", "svc@sha256:" + "b" * 64])
def test_pinned_references_pass(image: str) -> None:
    require_pinned(image)


@pytest.mark.parametrize(("image", "message"), [
    ("registry:5000/svc", "image registry:5000/svc does not pin a version; use a version tag such as "
                          "registry:5000/svc:1.2.3 (never latest)"),
    ("svc:latest", "image svc:latest does not pin a version; use a version tag such as svc:1.2.3 (never latest)"),
    ("svc :1.2.3", "invalid image reference 'svc :1.2.3'; expected e.g. registry/svc:1.2.3"),
    ("", "invalid image reference ''; expected e.g. registry/svc:1.2.3"),
])
def test_unpinned_references_are_refused(image: str, message: str) -> None:
    with pytest.raises(DeployError) as raised:
        require_pinned(image)
    assert str(raised.value) == message

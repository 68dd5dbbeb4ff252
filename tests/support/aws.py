"""Dummy AWS credentials for tests that talk to local stand-ins (moto, the rds-data stand-in)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

# Variables that would let the developer's own AWS setup (profile, region, retry policy) leak into a test.
_LEAKY = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_RETRY_MODE",
          "AWS_MAX_ATTEMPTS")


@contextmanager
def dummy_aws_credentials() -> Iterator[None]:
    """Credentials from the environment for the standard chain, and no user AWS config files."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.setenv("AWS_CONFIG_FILE", os.devnull)
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        for name in _LEAKY:
            patch.delenv(name, raising=False)
        yield

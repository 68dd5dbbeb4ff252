"""The basic-auth verifier: bcrypt checks, constant-time name matching, the verdict cache."""

from __future__ import annotations

import base64

import anyio
import pytest

from svc.api import auth
from svc.config import passwords
from svc.config.model import AuthorizedUser


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def authenticator() -> auth.BasicAuthenticator:
    users = [AuthorizedUser(username="ops", password=passwords.hash_password("pw", rounds=4)),
             AuthorizedUser(username="dev", password=passwords.hash_password("pw:with:colons", rounds=4))]
    return auth.BasicAuthenticator(users)


def check(authenticator: auth.BasicAuthenticator, value: str | None) -> str | None:
    return anyio.run(authenticator.authenticate, value)


def test_valid_and_invalid_credentials(authenticator) -> None:
    assert check(authenticator, header("ops", "pw")) == "ops"
    assert check(authenticator, header("dev", "pw:with:colons")) == "dev"
    assert check(authenticator, header("ops", "PW")) is None
    assert check(authenticator, header("nobody", "pw")) is None
    assert check(authenticator, None) is None
    assert check(authenticator, "Digest abc") is None


def test_verdicts_are_cached(authenticator, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    real = auth.bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(auth.bcrypt, "checkpw", counting)
    for _ in range(5):
        assert check(authenticator, header("ops", "pw")) == "ops"
        assert check(authenticator, header("ops", "bad")) is None
    assert len(calls) == 2


def test_cache_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    authenticator = auth.BasicAuthenticator(
        [AuthorizedUser(username="ops", password=passwords.hash_password("pw", rounds=4))], cache_seconds=0)
    calls = []
    real = auth.bcrypt.checkpw
    monkeypatch.setattr(auth.bcrypt, "checkpw", lambda p, h: calls.append(1) or real(p, h))
    check(authenticator, header("ops", "pw"))
    check(authenticator, header("ops", "pw"))
    assert len(calls) == 2


def test_unknown_users_still_pay_a_bcrypt_check(authenticator, monkeypatch: pytest.MonkeyPatch) -> None:
    """So that response times do not tell which user names exist."""
    calls = []
    real = auth.bcrypt.checkpw
    monkeypatch.setattr(auth.bcrypt, "checkpw", lambda p, h: calls.append(h) or real(p, h))
    check(authenticator, header("nobody", "pw"))
    assert calls == [auth._DUMMY_HASH]


@pytest.mark.parametrize(("value", "expected"), [
    ("$2b$12$" + "a" * 53, True),
    ("$2a$04$" + "./" * 26 + "a", True),
    ("hunter2", False),
    ("$2b$12$short", False),
    ("$1$md5$" + "a" * 53, False),
])
def test_bcrypt_hash_shape(value: str, expected: bool) -> None:
    assert passwords.is_bcrypt_hash(value) is expected

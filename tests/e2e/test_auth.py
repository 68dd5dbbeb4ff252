"""Basic authentication between the real CLI and a real agent."""

from __future__ import annotations

import httpx
import pytest

from support.processes import run_svc
from svc.config.passwords import hash_password

PASSWORD = "correct horse battery staple"
HASH = hash_password(PASSWORD, rounds=4)
AGENT_AUTH = f'auth {{ type = "basic"; authorizedUsers {{ new {{ username = "ops"; password = "{HASH}" }} }} }}'


@pytest.fixture
def secured(agent_factory):
    return agent_factory(AGENT_AUTH, f'auth {{ type = "basic"; username = "ops"; password = "{PASSWORD}" }}').start()


@pytest.mark.parametrize("path", ["/api/v1/stats", "/api/v1/openapi.json", "/api/v1/docs", "/api/v1/nothing-here"])
def test_every_endpoint_but_health_needs_credentials(secured, path: str) -> None:
    for auth in (None, ("ops", "wrong"), ("nobody", PASSWORD)):
        response = httpx.get(secured.url + path, auth=auth)
        assert response.status_code == 401, (path, auth)
        assert response.headers["www-authenticate"].startswith('Basic realm="svc"')
        assert response.json() == {"message": "unauthorized"}
    assert httpx.get(secured.url + "/api/v1/stats", auth=("ops", PASSWORD)).status_code == 200


def test_health_is_never_authenticated(secured) -> None:
    assert httpx.get(secured.url + "/api/v1/health").status_code == 200


def test_garbage_authorization_headers_get_401(secured) -> None:
    for header in ("Basic", "Basic !!!notbase64", "Bearer abc", "Basic b3Bz"):  # b3Bz = "ops", no colon
        response = httpx.get(secured.url + "/api/v1/stats", headers={"Authorization": header})
        assert response.status_code == 401, header


def test_cli_with_the_right_password(secured) -> None:
    result = run_svc("status", "agent", "--config", str(secured.config))
    assert result.returncode == 0, result.stderr


def test_cli_with_a_wrong_password(agent_factory, secured) -> None:
    wrong = agent_factory(cli_body='auth { type = "basic"; username = "ops"; password = "nope" }', name="wrong")
    wrong.config.write_text(wrong.config.read_text().replace(f"port = {wrong.port}", f"port = {secured.port}"))
    result = run_svc("status", "agent", "--config", str(wrong.config))
    assert result.returncode == 1
    assert "rejected the credentials (401 Unauthorized)" in result.stderr
    assert "nope" not in result.stderr


def test_cli_without_credentials(agent_factory, secured) -> None:
    bare = agent_factory(name="bare")
    bare.config.write_text(bare.config.read_text().replace(f"port = {bare.port}", f"port = {secured.port}"))
    result = run_svc("status", "agent", "--config", str(bare.config))
    assert result.returncode == 1
    assert "requires authentication" in result.stderr and "cli { auth" in result.stderr


def test_plaintext_password_refuses_to_start(agent_factory) -> None:
    agent = agent_factory('auth { type = "basic"; authorizedUsers { new { username = "ops"; password = "hunter2" } } }')
    result = run_svc("agent", "start", "--config", str(agent.config))
    assert result.returncode == 1
    assert result.stderr.startswith("Error: agent.auth.authorizedUsers[0] (ops): the password is not a bcrypt hash")
    assert "svc auth hash-password" in result.stderr
    assert "hunter2" not in result.stderr + result.stdout


def test_hash_password_command_output_is_accepted(agent_factory) -> None:
    result = run_svc("auth", "hash-password", "--password", "s3cret")
    assert result.returncode == 0
    hashed = result.stdout.strip()
    agent = agent_factory(
        f'auth {{ type = "basic"; authorizedUsers {{ new {{ username = "u"; password = "{hashed}" }} }} }}',
        'auth { type = "basic"; username = "u"; password = "s3cret" }',
    ).start()
    assert run_svc("status", "agent", "--config", str(agent.config)).returncode == 0

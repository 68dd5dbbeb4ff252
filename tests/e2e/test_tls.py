"""TLS on the agent: HTTPS only, and a CLI that verifies the certificate."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest
import trustme

from support.processes import run_svc


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def tls_agent(agent_factory, ca: trustme.CA, tmp_path: Path, hostname: str = "localhost", scheme: str = "https"):
    cert = ca.issue_cert(hostname)
    cert_file, key_file = tmp_path / f"{hostname}.crt", tmp_path / f"{hostname}.key"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    agent = agent_factory(server=f'tlsCert = "{cert_file}"; tlsKey = "{key_file}"', scheme=scheme)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    agent.env["SSL_CERT_FILE"] = str(ca_file)
    return agent, ca_file


def test_cli_verifies_with_the_private_ca(agent_factory, ca, tmp_path: Path) -> None:
    agent, ca_file = tls_agent(agent_factory, ca, tmp_path)
    agent.start(verify=ssl.create_default_context(cafile=str(ca_file)))
    result = run_svc("status", "agent", "--config", str(agent.config), env={"SSL_CERT_FILE": str(ca_file)})
    assert result.returncode == 0, result.stderr
    assert "https://localhost" in result.stdout


def test_cli_without_the_ca_fails_clearly(agent_factory, ca, tmp_path: Path) -> None:
    agent, ca_file = tls_agent(agent_factory, ca, tmp_path)
    agent.start(verify=ssl.create_default_context(cafile=str(ca_file)))
    result = run_svc("status", "agent", "--config", str(agent.config))
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: TLS verification of the agent at https://localhost:{agent.port} failed")
    assert "SSL_CERT_FILE" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_certificate_for_another_host_fails_clearly(agent_factory, ca, tmp_path: Path) -> None:
    agent, ca_file = tls_agent(agent_factory, ca, tmp_path, hostname="svc.example.com")
    agent.start(verify=False)
    result = run_svc("status", "agent", "--config", str(agent.config), env={"SSL_CERT_FILE": str(ca_file)})
    assert result.returncode == 1
    assert "TLS verification" in result.stderr and "ostname mismatch" in result.stderr


def test_the_agent_serves_https_only(agent_factory, ca, tmp_path: Path) -> None:
    agent, ca_file = tls_agent(agent_factory, ca, tmp_path)
    agent.start(verify=ssl.create_default_context(cafile=str(ca_file)))
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://localhost:{agent.port}/api/v1/health")
    plain = agent_factory(name="plain-cli")
    plain.config.write_text(plain.config.read_text().replace(f"port = {plain.port}", f"port = {agent.port}"))
    result = run_svc("status", "agent", "--config", str(plain.config))
    assert result.returncode == 1
    assert "https://" in result.stderr


def test_tls_key_without_cert_is_refused(agent_factory, tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    key.write_text("x")
    agent = agent_factory(server=f'tlsKey = "{key}"')
    result = run_svc("agent", "start", "--config", str(agent.config))
    assert result.returncode == 1
    assert "tlsCert and agent.server.tlsKey must be set together" in result.stderr


def test_missing_certificate_file_is_refused(agent_factory, tmp_path: Path) -> None:
    agent = agent_factory(server=f'tlsCert = "{tmp_path}/none.crt"; tlsKey = "{tmp_path}/none.key"')
    result = run_svc("agent", "start", "--config", str(agent.config))
    assert result.returncode == 1
    assert "agent.server.tlsCert: file" in result.stderr and "does not exist" in result.stderr

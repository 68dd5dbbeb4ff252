"""The agent's PostgreSQL connection over TLS: verify-full with the right CA, a clear error otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from support.pgcluster import PgCluster
from support.processes import run_svc


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PgCluster, Path, Path]]:
    ca, other_ca = trustme.CA(), trustme.CA()
    leaf = ca.issue_cert("localhost")
    cluster = PgCluster()
    cluster.enable_tls(b"".join(blob.bytes() for blob in leaf.cert_chain_pems), leaf.private_key_pem.bytes())
    cluster.start()
    cluster.create_database("svc")
    folder = tmp_path_factory.mktemp("cas")
    right, wrong = folder / "right-ca.pem", folder / "wrong-ca.pem"
    ca.cert_pem.write_to_path(str(right))
    other_ca.cert_pem.write_to_path(str(wrong))
    yield cluster, right, wrong
    cluster.destroy()


def test_verify_full_with_the_right_ca(agent_factory, tls_cluster) -> None:
    cluster, right, _ = tls_cluster
    agent = agent_factory(cluster.pkl_postgres_block(
        host="localhost", connectionParams=f"sslmode=verify-full&sslrootcert={right}"))
    agent.start()  # healthy means connected and migrated over verified TLS
    assert run_svc("status", "agent", "--config", str(agent.config)).returncode == 0


def start_error(agent_factory, block: str) -> str:
    result = run_svc("agent", "start", "--config", str(agent_factory(block).config), timeout=60)
    assert result.returncode == 1
    return result.stderr.strip().splitlines()[-1]


def test_verify_full_with_a_wrong_ca_fails_clearly(agent_factory, tls_cluster) -> None:
    cluster, _, wrong = tls_cluster
    error = start_error(agent_factory, cluster.pkl_postgres_block(
        host="localhost", connectionParams=f"sslmode=verify-full&sslrootcert={wrong}"))
    assert error.startswith("Error: cannot open the datastore: ")
    assert "certificate verify failed" in error
    assert "agent.datastore.postgres.connectionParams" in error


def test_verify_full_with_a_host_the_certificate_does_not_name(agent_factory, tls_cluster) -> None:
    cluster, right, _ = tls_cluster
    # The same server and CA, reached as 127.0.0.1: the certificate names only localhost.
    error = start_error(agent_factory, cluster.pkl_postgres_block(
        host="127.0.0.1", connectionParams=f"sslmode=verify-full&sslrootcert={right}"))
    assert "does not match host name" in error
    assert "agent.datastore.postgres.connectionParams" in error


def test_require_encrypts_without_verifying(agent_factory, tls_cluster) -> None:
    cluster, _, _ = tls_cluster
    # No sslrootcert: libpq would otherwise verify the chain even under sslmode=require.
    agent = agent_factory(cluster.pkl_postgres_block(host="127.0.0.1", connectionParams="sslmode=require"))
    agent.start()  # healthy: its pool holds the connections it migrated and answered health checks on
    assert run_svc("status", "agent", "--config", str(agent.config)).returncode == 0
    # The server's side (the cluster accepts plain TCP too, so only it can tell): every agent session is TLS.
    with cluster.connect() as session:
        rows = session.execute("SELECT s.ssl, s.version FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid "
                               "WHERE a.application_name LIKE 'svc-agent-%' AND a.datname = 'svc'").fetchall()
    assert rows, "the agent holds no session on the server"
    assert all(ssl and version for ssl, version in rows), rows

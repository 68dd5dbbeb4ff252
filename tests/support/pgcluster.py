"""A throwaway PostgreSQL cluster that a test can stop and start (outages, auth, TLS settings)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from support.processes import free_port, postgres_datastore_block

PG_BIN = Path(os.environ.get("SVC_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _owner_command(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class PgCluster:
    """``initdb`` into a temp dir; password (scram) auth over TCP for ``postgres``/``password``."""

    def __init__(self, password: str = "s3cret-pw") -> None:
        self.password = password
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="svc-pgcluster-"))
        self.data = self.root / "data"
        if os.geteuid() == 0:
            uid = pwd.getpwnam("postgres")
            os.chown(self.root, uid.pw_uid, uid.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(password + "\n")
        if os.geteuid() == 0:
            os.chown(pwfile, uid.pw_uid, uid.pw_gid)
        self._run([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                   "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "--no-sync"])

    def _run(self, args: list[str]) -> None:
        result = subprocess.run(_owner_command(args), capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {result.stdout}{result.stderr}")

    def enable_tls(self, cert_pem: bytes, key_pem: bytes) -> None:
        """Serves TLS with this certificate (takes effect at the next start)."""
        for name, content, mode in (("server.crt", cert_pem, 0o644), ("server.key", key_pem, 0o600)):
            path = self.root / name
            path.write_bytes(content)
            path.chmod(mode)
            if os.geteuid() == 0:
                uid = pwd.getpwnam("postgres")
                os.chown(path, uid.pw_uid, uid.pw_gid)
        self._tls = True

    def start(self) -> PgCluster:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        if getattr(self, "_tls", False):
            options += f" -c ssl=on -c ssl_cert_file={self.root}/server.crt -c ssl_key_file={self.root}/server.key"
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                   "-t", "60", "-o", options, "start"])
        return self

    def stop(self) -> None:
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def create_database(self, name: str) -> None:
        self._run([str(PG_BIN / "psql"), "-h", str(self.root), "-p", str(self.port), "-U", "postgres",
                   "-c", f"CREATE DATABASE {name}"])

    def connect(self, database: str = "postgres") -> psycopg.Connection[Any]:
        """A superuser session over the cluster's Unix socket (trusted, never TLS), to look at the server's side."""
        return psycopg.connect(host=str(self.root), port=self.port, user="postgres", dbname=database, autocommit=True)

    def destroy(self) -> None:
        subprocess.run(_owner_command([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def pkl_postgres_block(self, **overrides: object) -> str:
        """The body of ``agent.datastore`` for this cluster, with ``overrides`` of postgres fields."""
        fields: dict[str, object] = {"host": "127.0.0.1", "port": self.port, "user": "postgres",
                                     "password": self.password, "database": "svc"}
        fields.update(overrides)
        return postgres_datastore_block(fields)

"""The bcrypt hashes that stand for passwords in the agent config (``agent.auth.users``).

Here rather than in the API, so that the CLI (``svc hash-password``) and the agent's config check use
them without importing the HTTP server.
"""

from __future__ import annotations

import re

import bcrypt

BCRYPT_HASH = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")


def is_bcrypt_hash(value: str) -> bool:
    return BCRYPT_HASH.fullmatch(value) is not None


def hash_password(password: str, rounds: int = 12) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=rounds)).decode()

"""The resource readers behind svc's Pkl extension modules (``@svc/ext/*.pkl``), served to ``pkl server`` by svc:

- ``libext:///<library>/<function>?<arguments>``: random ids and passwords (``secrets``), bcrypt hashes
  (``bcrypt``), key pairs (``cryptography``); the answer is the result as JSON;
- ``tfvars:<path>``: a Terraform ``.tfvars`` file (literal values only), relative to the forma's directory,
  parsed by ``python-hcl2``; the answer is its variables as JSON.

A reader's exception becomes Pkl's error naming the URI; its message says what to fix.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from svc.pkl.readers import PathElement

# bcrypt, cryptography and python-hcl2 (with lark) are imported by the functions that use them: every Pkl
# evaluation gets these readers, and most (the CLI's own config, a forma without libext: or tfvars:) read nothing
# through them; importing the three cost a short CLI command a sixth of its start-up CPU.

_Arguments = Mapping[str, str]


class LibExtReader:
    """``libext:``: the functions of ``ext/random.pkl``, ``ext/bcrypt.pkl`` and ``ext/crypto.pkl``."""

    scheme = "libext"
    is_hierarchical = True
    is_globbable = False
    is_local = True

    def read(self, uri: str) -> bytes:
        parsed = urlparse(uri)
        name = parsed.path.strip("/")
        function = _FUNCTIONS.get(name)
        if function is None:
            raise FileNotFoundError(f"libext has no function {name!r}; it has {', '.join(sorted(_FUNCTIONS))}")
        arguments = {key: values[-1] for key, values in parse_qs(parsed.query, keep_blank_values=True).items()}
        return json.dumps(function(arguments)).encode()

    def list(self, uri: str) -> list[PathElement]:
        return []


def _int(arguments: _Arguments, name: str, default: int, low: int, high: int) -> int:
    raw = arguments.get(name) or ""
    if raw in ("", "null"):
        return default
    try:
        value = int(float(raw))
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def _random_id(arguments: _Arguments) -> int:
    """A random number of ``length`` decimal digits (the first one not 0)."""
    length = _int(arguments, "length", 10, 1, 18)
    return 10 ** (length - 1) + secrets.randbelow(9 * 10 ** (length - 1))


_SPECIAL = "!#$%&*()-_=+[]{}<>:?"


def _random_password(arguments: _Arguments) -> str:
    """``length`` characters with at least one lower-case letter, upper-case letter and digit (and one of
    ``_SPECIAL`` with ``useSpecial``), drawn with ``secrets``."""
    length = _int(arguments, "length", 16, 8, 1024)
    special = arguments.get("useSpecial", "false").lower() == "true"
    classes = [string.ascii_lowercase, string.ascii_uppercase, string.digits] + ([_SPECIAL] if special else [])
    alphabet = "".join(classes)
    while True:
        password = "".join(secrets.choice(alphabet) for _ in range(length))
        if all(any(c in chars for c in password) for chars in classes):
            return password


def _bcrypt_hash(arguments: _Arguments) -> str:
    password = arguments.get("password")
    if password is None:
        raise ValueError("hashPassword needs a password")
    encoded = password.encode()
    if len(encoded) > 72:
        raise ValueError("bcrypt hashes at most 72 bytes of a password; this one is longer")
    import bcrypt

    return bcrypt.hashpw(encoded, bcrypt.gensalt()).decode()


_CURVES = {"256": "SECP256R1", "384": "SECP384R1", "521": "SECP521R1"}  # classes of cryptography's ``ec``


def _key_pair(arguments: _Arguments) -> dict[str, str]:
    """A new key pair in PEM. ``pkcs1``: RSA of ``bits`` (2048 by default), both keys PKCS #1; ``sec1``: EC on
    the P-``params`` curve (256 by default), the private key SEC 1; ``pkcs8``: EC when ``params`` is given, else
    RSA, the private key PKCS #8. Public keys other than PKCS #1 are SubjectPublicKeyInfo."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    encoding = arguments.get("encoding", "")
    curve = arguments.get("params") or ""
    if curve in ("", "null"):
        curve = ""
    elif curve not in _CURVES:
        raise ValueError(f"params must be one of 256, 384, 521 (the P-256, P-384, P-521 curves), not {curve!r}")
    if encoding == "pkcs1" or (encoding == "pkcs8" and not curve):
        key: Any = rsa.generate_private_key(public_exponent=65537, key_size=_int(arguments, "bits", 2048, 2048, 8192))
    elif encoding in ("sec1", "pkcs8"):
        key = ec.generate_private_key(getattr(ec, _CURVES[curve or "256"])())
    else:
        raise ValueError(f"encoding must be pkcs1, pkcs8 or sec1, not {encoding!r}")
    private_format = (serialization.PrivateFormat.PKCS8 if encoding == "pkcs8"
                      else serialization.PrivateFormat.TraditionalOpenSSL)  # PKCS #1 for RSA, SEC 1 for EC
    public_format = (serialization.PublicFormat.PKCS1 if encoding == "pkcs1"
                     else serialization.PublicFormat.SubjectPublicKeyInfo)
    private = key.private_bytes(serialization.Encoding.PEM, private_format, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, public_format)
    return {"private": private.decode(), "public": public.decode()}


_FUNCTIONS: dict[str, Callable[[_Arguments], Any]] = {
    "random/id": _random_id,
    "random/password": _random_password,
    "bcrypt/hashPassword": _bcrypt_hash,
    "crypto/keyPair": _key_pair,
}


class TfvarsReader:
    """``tfvars:<path>``: a ``.tfvars`` file, relative to ``base`` (the forma's directory), as JSON."""

    scheme = "tfvars"
    is_hierarchical = False
    is_globbable = False
    is_local = True

    def __init__(self, base: Path) -> None:
        self._base = base

    def read(self, uri: str) -> bytes:
        name = unquote(uri.partition(":")[2])
        path = self._base / name
        if path.suffix != ".tfvars":
            raise ValueError(f"{name}: readTFVars reads .tfvars files only")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FileNotFoundError(f"cannot read {path}: {exc.strerror or exc}") from exc
        import hcl2
        from hcl2.utils import SerializationOptions

        # Strings keep their quotes (telling a literal from an expression), heredocs become plain strings.
        options = SerializationOptions(with_comments=False, explicit_blocks=False, preserve_heredocs=False,
                                       preserve_scientific_notation=False)
        try:
            parsed = hcl2.loads(text, serialization_options=options)
        except Exception as exc:  # the parser's own errors name the line and column
            raise ValueError(f"{path} is not valid HCL: {exc}") from exc
        return json.dumps(_literal(parsed, path, "")).encode()

    def list(self, uri: str) -> list[PathElement]:
        return []


_INTERPOLATION = re.compile(r"(?<![$%])[$%]\{")


def _literal(value: Any, path: Path, where: str) -> Any:
    """A parsed value with its strings decoded; an expression (a variable, a function call, a template with
    an interpolation) is refused: a ``.tfvars`` file read by svc holds literal values only."""
    if isinstance(value, dict):
        return {_string(key, path, where) if key.startswith('"') else key:
                _literal(item, path, f"{where}.{key.strip(chr(34))}".lstrip(".")) for key, item in value.items()}
    if isinstance(value, list):
        return [_literal(item, path, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, str):
        return _string(value, path, where)
    return value


def _string(text: str, path: Path, where: str) -> str:
    inner = text[1:-1] if len(text) >= 2 and text.startswith('"') and text.endswith('"') else None
    if inner is None or _INTERPOLATION.search(inner):
        raise ValueError(f"{path}: {where or 'a value'} is an expression ({text}); "
                         "svc reads literal values only (strings, numbers, booleans, null, lists and maps)")
    return json.loads('"' + inner.replace("$${", "${").replace("%%{", "%{") + '"')


def ext_readers(base: Path) -> list[LibExtReader | TfvarsReader]:
    """The readers of the extension modules for a file in the directory ``base`` (a forma, a config)."""
    return [LibExtReader(), TfvarsReader(base)]

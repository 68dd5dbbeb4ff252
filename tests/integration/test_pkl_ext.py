"""The extension modules (``@svc/ext/*.pkl``, ``@svc/debug/debug.pkl``) through real Pkl and svc's own readers
(``libext:``, ``tfvars:``): each value a forma gets from them, checked with the libraries that read it."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import bcrypt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from svc.config.loader import load_config
from svc.forma import FormaError, evaluate_forma

HEAD = """
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@svc/ext/random.pkl"
import "@svc/ext/bcrypt.pkl"
import "@svc/ext/crypto.pkl"
import "@svc/ext/terraform.pkl"
import "@svc/ext/URI.pkl"
import "@svc/debug/debug.pkl"

forma {
  new svc.Stack { label = "s" }
  new svc.Target { label = "t"; namespace = "SVC" }
"""


def consumers(write_pkl, values: dict[str, str], name: str = "main.pkl") -> dict[str, Any]:
    """Evaluates a forma of ``debug.Consumer``s, one per label, with the Pkl expression as its value."""
    body = "".join(f'  new debug.Consumer {{ label = "{label}"; value = {expression} }}\n'
                   for label, expression in values.items())
    forma = evaluate_forma(write_pkl(name, HEAD + body + "}\n")).to_json()
    assert {r["Type"] for r in forma["Resources"]} == {"Svc::Debug::Consumer"}
    return {r["Label"]: r["Properties"].get("value") for r in forma["Resources"]}


def test_random_ids_and_passwords(write_pkl) -> None:
    got = consumers(write_pkl, {
        "id": "random.id(6).toString()", "default-id": "random.id(null).toString()",
        "pw": "random.password(20, false)", "special": "random.password(12, true)",
        "again": "random.password(20, false)",  # the same call in one evaluation: the same value
        "secret": "random.secretPassword(24, true)",
    })
    assert len(got["id"]) == 6 and got["id"].isdigit() and got["id"][0] != "0"
    assert len(got["default-id"]) == 10 and got["default-id"].isdigit()
    assert len(got["pw"]) == 20 and set(got["pw"]) <= set(string.ascii_letters + string.digits)
    assert any(c.isdigit() for c in got["pw"]) and any(c.isupper() for c in got["pw"])
    assert len(got["special"]) == 12 and set(got["special"]) - set(string.ascii_letters + string.digits)
    assert got["again"] == got["pw"]
    secret = got["secret"]
    assert secret.keys() == {"$value", "$visibility", "$strategy"} and len(secret["$value"]) == 24
    assert (secret["$visibility"], secret["$strategy"]) == ("Opaque", "SetOnce")
    other = consumers(write_pkl, {"pw": "random.password(20, false)"}, "other.pkl")
    assert other["pw"] != got["pw"]  # drawn anew at every evaluation


def test_bcrypt_hashes_verify(write_pkl) -> None:
    got = consumers(write_pkl, {"hash": 'bcrypt.hashPassword("pä ss&w=rd%/?#")'})
    assert got["hash"].startswith("$2b$") and bcrypt.checkpw("pä ss&w=rd%/?#".encode(), got["hash"].encode())


def test_key_pairs_in_each_encoding(write_pkl) -> None:
    got = consumers(write_pkl, {
        "rsa1": 'crypto.keyPair("pkcs1", 3072, null).toDynamic()',
        "ec1": 'crypto.keyPair("sec1", null, "384").toDynamic()',
        "ec-default": 'crypto.keyPair("sec1", null, null).toDynamic()',
        "rsa8": 'crypto.keyPair("pkcs8", null, null).toDynamic()',
        "ec8": 'crypto.keyPair("pkcs8", null, "521").toDynamic()',
    })
    rsa1 = got["rsa1"]
    assert rsa1["private"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert rsa1["public"].startswith("-----BEGIN RSA PUBLIC KEY-----")
    key = serialization.load_pem_private_key(rsa1["private"].encode(), None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 3072
    assert serialization.load_pem_public_key(rsa1["public"].encode()).public_numbers() == key.public_key().public_numbers()
    assert got["ec1"]["private"].startswith("-----BEGIN EC PRIVATE KEY-----")
    for label, curve in (("ec1", ec.SECP384R1), ("ec-default", ec.SECP256R1), ("ec8", ec.SECP521R1)):
        key = serialization.load_pem_private_key(got[label]["private"].encode(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, curve), label
        assert got[label]["public"].startswith("-----BEGIN PUBLIC KEY-----")
    assert got["rsa8"]["private"].startswith("-----BEGIN PRIVATE KEY-----")
    assert isinstance(serialization.load_pem_private_key(got["rsa8"]["private"].encode(), None), rsa.RSAPrivateKey)
    assert got["ec8"]["private"].startswith("-----BEGIN PRIVATE KEY-----")


def test_a_key_pair_of_an_unknown_curve_is_a_type_error(write_pkl) -> None:
    with pytest.raises(FormaError, match='"256"|"384"|"521"'):
        consumers(write_pkl, {"ec": 'crypto.keyPair("sec1", null, "192").toDynamic()'})


TFVARS = '''
# a comment
region  = "eu-west-1"
count   = 3
ratio   = 0.5
enabled = true
nothing = null
zones   = ["a", "b"]
tags    = { Name = "web", "team.name" = "core", nested = { list = [1, { x = "y" }] } }
escaped = "say \\"hi\\"\\n$${not.interpolated}"
banner  = <<EOT
hello
EOT
'''


def test_tfvars_literals_relative_to_the_forma(write_pkl, tmp_path: Path) -> None:
    (tmp_path / "vars").mkdir()
    (tmp_path / "vars" / "prod.tfvars").write_text(TFVARS)
    forma_dir = tmp_path / "formas"
    forma_dir.mkdir()
    (forma_dir / "prod.tfvars").write_text(TFVARS)
    got = consumers(write_pkl, {"all": 'terraform.readTFVars("prod.tfvars")',
                                "region": 'terraform.readTFVars("prod.tfvars").region',
                                "parent": 'terraform.readTFVars("../vars/prod.tfvars").count.toString()'},
                    "formas/main.pkl")
    assert got["all"] == {
        "region": "eu-west-1", "count": 3, "ratio": 0.5, "enabled": True, "zones": ["a", "b"],
        "tags": {"Name": "web", "team.name": "core", "nested": {"list": [1, {"x": "y"}]}},
        "escaped": 'say "hi"\n${not.interpolated}', "banner": "hello",
    }  # `nothing = null` is left out, as every null is
    assert got["region"] == "eu-west-1" and got["parent"] == "3"


@pytest.mark.parametrize(("line", "what"), [
    ("x = var.region", "x is an expression (${var.region})"),
    ('x = "${var.env}-web"', 'x is an expression ("${var.env}-web")'),
    ('x = { y = upper("a") }', 'x.y is an expression (${upper("a")})'),
])
def test_tfvars_expressions_are_refused_naming_the_variable(write_pkl, tmp_path: Path, line: str, what: str) -> None:
    (tmp_path / "bad.tfvars").write_text(line + "\n")
    with pytest.raises(FormaError) as caught:
        consumers(write_pkl, {"v": 'terraform.readTFVars("bad.tfvars")'})
    assert what in str(caught.value) and "literal values only" in str(caught.value)


def test_tfvars_reads_tfvars_files_only(write_pkl, tmp_path: Path) -> None:
    (tmp_path / "vars.json").write_text("{}")
    with pytest.raises(FormaError, match=r"vars.json: readTFVars reads .tfvars files only"):
        consumers(write_pkl, {"v": 'terraform.readTFVars("vars.json")'})


def test_uri_parse_resolve_and_percent_encoding(write_pkl) -> None:
    base = 'URI.parse("http://a/b/c/d;p?q")'
    got = consumers(write_pkl, {
        "parts": 'URI.parse("https://me@example.com:8443/a/b?x=1#top").toDynamic()',
        "up": f'{base}.resolve("../../g").toString()', "dots": f'{base}.resolve("./g/.").toString()',
        "net": f'{base}.resolve("//g").toString()', "query": f'{base}.resolve("?y").toString()',
        "fragment": f'{base}.resolve("g#s").toString()', "above-root": f'{base}.resolve("../../../g").toString()',
        "component": 'URI.encodeComponent("a b/é?&=")', "encode": 'URI.encode("https://x/a b?q=é")',
        "decode": 'URI.decode("a%20b%2F%C3%A9%3F")',
    })
    assert got["parts"] == {"scheme": "https", "userInfo": "me", "host": "example.com", "port": 8443,
                            "path": "/a/b", "query": "x=1", "fragment": "top"}
    # RFC 3986 §5.4's examples.
    assert (got["up"], got["dots"], got["net"]) == ("http://a/g", "http://a/b/c/g/", "http://g")
    assert (got["query"], got["fragment"], got["above-root"]) == ("http://a/b/c/d;p?y", "http://a/b/c/g#s", "http://a/g")
    assert got["component"] == "a%20b%2F%C3%A9%3F%26%3D" and got["encode"] == "https://x/a%20b?q=%C3%A9"
    assert got["decode"] == "a b/é?"


def test_an_unknown_libext_function_is_named(write_pkl) -> None:
    with pytest.raises(FormaError, match=r"libext has no function 'random/uuid'"):
        consumers(write_pkl, {"v": 'read("libext:///random/uuid").text'})


def test_a_config_uses_the_extension_modules(write_pkl, tmp_path: Path) -> None:
    """As in the original product, a config may use them too (imported through ``svc:``)."""
    (tmp_path / "users.tfvars").write_text('admin = "ops"\n')
    path = write_pkl("config.pkl", """
        amends "svc:/Config.pkl"
        import "svc:/ext/bcrypt.pkl"
        import "svc:/ext/terraform.pkl"
        agent {
          auth {
            type = "basic"
            authorizedUsers { new { username = terraform.readTFVars("users.tfvars").admin; password = bcrypt.hashPassword("s3cret") } }
          }
        }
    """)
    [user] = load_config(path).agent.auth.authorized_users
    assert user.username == "ops" and bcrypt.checkpw(b"s3cret", user.password.encode())


def test_a_password_bcrypt_cannot_hash_is_refused_without_showing_it(write_pkl) -> None:
    with pytest.raises(FormaError) as caught:
        consumers(write_pkl, {"hash": 'bcrypt.hashPassword("hunter2-" + "x".repeat(70))'})
    assert "longer than 72 bytes" in str(caught.value) and "hunter2" not in str(caught.value)

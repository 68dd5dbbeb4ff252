"""``POST /api/v1/commands`` refuses malformed submissions with a 400 that names the problem, before any
planning, and stores nothing. A real agent process; the multipart bodies are built by hand."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from support.processes import Agent

HEADERS = {"Client-ID": "2d5Jq0m7pGZ1dZPkcU2Jx6QpYcT"}
VALID_FORMA = {"Description": {}, "Stacks": [{"Label": "app"}],
               "Targets": [{"Label": "t", "Namespace": "FAKE", "Config": {}}],
               "Resources": [{"Label": "n", "Type": "FAKE::Net::Network", "Stack": "app", "Target": "t",
                              "Schema": {"Identifier": "Name"}, "Properties": {"Name": "n"}}]}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Agent:
    """One agent for the module: every request here must leave it (and its datastore) untouched."""
    import os

    from support.processes import free_port

    root = tmp_path_factory.mktemp("submit")
    port = free_port()
    config = root / "agent.pkl"
    config.write_text(f'amends "svc:/Config.pkl"\nagent {{\n  server {{ bindAddress = "127.0.0.1"; port = {port} }}\n'
                      f'  datastore {{ sqlite {{ filePath = "{root / "svc.db"}" }} }}\n}}\n')
    env = {"HOME": str(root), "XDG_DATA_HOME": str(root / "data"), "XDG_CONFIG_HOME": str(root / "config"),
           "SVC_PID_FILE": str(root / "agent.pid")}
    agent = Agent(config=config, port=port, log=root / "agent.log", env={**os.environ, **env})
    agent.start()
    yield agent
    agent.stop()


def post(agent: Agent, fields: dict[str, str], file: bytes | None = None,
         headers: dict[str, str] | None = None) -> httpx.Response:
    files: dict[str, tuple[str | None, bytes] | tuple[str, bytes, str]] = {
        name: (None, value.encode()) for name, value in fields.items()}
    if file is not None:
        files["file"] = ("forma.json", file, "application/json")
    return httpx.post(f"{agent.url}/api/v1/commands", files=files, headers=HEADERS if headers is None else headers)


def message(response: httpx.Response) -> str:
    return response.json()["message"]


def stored(agent: Agent) -> dict[str, object]:
    stats = httpx.get(f"{agent.url}/api/v1/stats").json()
    return {key: stats[key] for key in ("Commands", "Stacks", "Resources", "Targets", "Clients")}


EMPTY = {"Commands": {}, "Stacks": 0, "Resources": {}, "Targets": {}, "Clients": 0}
APPLY = {"command": "apply", "mode": "reconcile"}


@pytest.mark.parametrize(("fields", "file", "expected"), [
    (APPLY, b"{not json", "the file forma.json is not valid JSON: Expecting property name enclosed in double "
                          "quotes at line 1 column 2"),
    (APPLY, b"", "the file forma.json is empty"),
    (APPLY, b"  \n", "the file forma.json is empty"),
    (APPLY, b"\xff\xfe", "the file forma.json is not UTF-8 text"),
    (APPLY, b"[1, 2]", "the file forma.json must hold a JSON object with Description, Properties, Stacks, "
                       "Targets, Policies, Resources, not an array"),
    (APPLY, b'{"Resources": [], "Resorces": []}', "unknown top-level field(s) Resorces"),
    (APPLY, json.dumps({"Resources": [{"Label": "web", "Type": "FAKE::Net::Network", "Stack": "s", "Target": "t",
                                       "Schema": {"Identifier": "Name"}, "Properties": []}]}).encode(),
     "Resources[0] (label 'web').Properties: Input should be a valid dictionary"),
    (APPLY, b'{"Resources": "all"}', "Resources: Input should be a valid"),
    (APPLY, b"[" * 100_000 + b"]" * 100_000, "the file forma.json is nested too deeply"),
    # JSON the fast parser refuses and the standard library reads (an integer beyond 64 bits, NaN): read.
    (APPLY, b"[123456789012345678901234567890, NaN]", "must hold a JSON object with Description, Properties, "
                                                      "Stacks, Targets, Policies, Resources, not an array"),
    (APPLY, None, "the file form field is required for apply"),
    ({"command": "apply"}, json.dumps(VALID_FORMA).encode(), "the mode form field is required for apply and must be "
                                                             "reconcile or patch"),
    ({"command": "apply", "mode": "merge"}, json.dumps(VALID_FORMA).encode(), "not 'merge'"),
    ({**APPLY, "simulate": "maybe"}, json.dumps(VALID_FORMA).encode(), "simulate form field must be true or false"),
    ({**APPLY, "query": "stack:app"}, json.dumps(VALID_FORMA).encode(), "the query form field belongs to destroy"),
    ({}, json.dumps(VALID_FORMA).encode(), "the command form field is required: apply or destroy"),
    ({"command": "deploy"}, None, "the command form field must be apply or destroy, not 'deploy'"),
    ({"command": "destroy"}, None, "destroy needs the query form field or the file form field"),
    ({"command": "destroy", "query": "stack:a"}, json.dumps(VALID_FORMA).encode(), "either a query or a file"),
    ({"command": "destroy", "query": "stack:a", "on-dependents": "ignore"}, None,
     "on-dependents form field must be abort or cascade, not 'ignore'"),
    ({"command": "destroy", "query": "stack:a", "force": "true"}, None, "force form field belongs to apply"),
    ({"command": "destroy", "query": "stack:a", "simulate": "true", "seal-secrets": "true"}, None,
     "a destroy by query has none"),
    ({"command": "destroy", "seal-secrets": "true"}, json.dumps(VALID_FORMA).encode(), "send it with simulate=true"),
    ({**APPLY, "colour": "red"}, json.dumps(VALID_FORMA).encode(), "unknown form field(s) colour"),
], ids=lambda value: None)
def test_malformed_submissions_are_400_and_store_nothing(agent: Agent, fields: dict[str, str], file: bytes | None,
                                                         expected: str) -> None:
    response = post(agent, fields, file)
    assert response.status_code == 400, response.text
    assert expected in message(response)
    assert stored(agent) == EMPTY


def test_destroy_query_is_checked_against_the_destroy_fields(agent: Agent) -> None:
    response = post(agent, {"command": "destroy", "query": "managed:false"})
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "InvalidQueryError"
    assert "the managed field cannot be used in destroy queries" in body["data"]["Reason"]
    assert stored(agent) == EMPTY


def test_client_id_content_type_and_body_shape(agent: Agent) -> None:
    missing = post(agent, APPLY, json.dumps(VALID_FORMA).encode(), headers={})
    assert missing.status_code == 400 and message(missing) == "Client-ID header is required"
    as_json = httpx.post(f"{agent.url}/api/v1/commands", json={"command": "apply"}, headers=HEADERS)
    assert as_json.status_code == 400 and "takes multipart/form-data" in message(as_json)
    broken = httpx.post(f"{agent.url}/api/v1/commands", content=b"--x\r\ngarbage",
                        headers={**HEADERS, "Content-Type": "multipart/form-data; boundary=x"})
    assert broken.status_code == 400
    two_files = httpx.post(f"{agent.url}/api/v1/commands", headers=HEADERS,
                           files=[("command", (None, b"apply")), ("mode", (None, b"patch")),
                                  ("file", ("a.json", b"{}", "application/json")),
                                  ("file", ("b.json", b"{}", "application/json"))])
    assert two_files.status_code == 400
    assert stored(agent) == EMPTY


def test_the_agent_keeps_serving_after_bad_input(agent: Agent, tmp_path: Path) -> None:
    for body in (b"\x00" * 1000, b"{" * 10, b'{"Resources": [null]}'):
        assert post(agent, APPLY, body).status_code == 400
    assert httpx.get(f"{agent.url}/api/v1/health").status_code == 200


def test_cli_destroy_takes_a_file_or_a_query(home: Path, tmp_path: Path) -> None:
    from support.processes import run_svc

    neither = run_svc("destroy")
    assert neither.returncode == 1
    assert neither.stderr.strip() == "Error: give destroy either a forma file or --query, not both and not neither"
    forma = tmp_path / "main.pkl"
    forma.write_text('amends "@svc/forma.pkl"\n')
    both = run_svc("destroy", str(forma), "--query", "stack:a")
    assert both.returncode == 1 and "not both" in both.stderr
    mode = run_svc("apply", str(forma), "--mode", "merge")
    assert mode.returncode == 1 and "Invalid value for '--mode'" in mode.stderr, mode.stderr

"""``svc eval`` and ``svc project init`` end to end: the real CLI in a subprocess, real Pkl."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from support.processes import on_demand_agent, run_svc

FORMAS = Path(__file__).parent.parent / "fixtures" / "formas"

HEAD = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fixture/fixture.pkl"
import "@fixture/network/vpc.pkl"
import "@fixture/network/subnet.pkl"
import "@fixture/storage/bucket.pkl"

forma {
  new svc.Stack { label = "app" }
  new svc.Target { label = "eu"; config = new fixture.Config { region = "eu-west-1" } }
"""


@pytest.fixture
def workdir(home: Path, fixture_plugin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_forma(directory: Path, resources: str, name: str = "main.pkl") -> Path:
    path = directory / name
    path.write_text(HEAD + resources + "}\n")
    return path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_machine_output_of_the_fixture_forma_is_the_expected_json(workdir: Path) -> None:
    """No PklProject anywhere: @svc and @fixture come with svc, and nothing is fetched (the package
    host, pkg.svc.invalid, cannot even be resolved)."""
    result = run_svc("eval", str(FORMAS / "everything.pkl"), "--output-consumer", "machine")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1  # one compact document
    assert json.loads(result.stdout) == json.loads((FORMAS / "everything.json").read_text())


def test_human_output_is_pretty_json_or_yaml(workdir: Path) -> None:
    path = write_forma(workdir, '  new vpc.Vpc { label = "net"; cidrBlock = "10.0.0.0/16" }\n')
    pretty = run_svc("eval", str(path))
    assert pretty.returncode == 0, pretty.stderr
    assert '\n  "Resources": [' in pretty.stdout
    document = yaml.safe_load(run_svc("eval", str(path), "--output-schema", "yaml").stdout)
    assert document["Resources"][0]["Properties"] == {"CidrBlock": "10.0.0.0/16"}


def test_property_flags_are_typed_and_required_without_default(workdir: Path) -> None:
    path = workdir / "props.pkl"
    path.write_text('''\
extends "@svc/forma.pkl"
import "@svc/svc.pkl"

properties: Props

class Props {
  /// The deployment name.
  name: String
  replicas: Int = 1
  @svc.Flag { name = "dry-run" }
  dryRun: Boolean = false
}

forma {
  new svc.Stack { label = "\\(properties.name)-\\(properties.replicas)-\\(properties.dryRun)-\\(svc.cmd())-\\(svc.mode())" }
}
''')
    missing = run_svc("eval", str(path))
    assert (missing.returncode, missing.stderr) == (1, "Error: Missing option '--name'.\n")
    bad = run_svc("eval", str(path), "--name", "x", "--replicas", "many")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: Invalid value for '--replicas': 'many'")
    ok = run_svc("eval", str(path), "--name", "web", "--replicas", "3", "--dry-run", "--mode", "patch",
                 "--output-consumer", "machine")
    assert ok.returncode == 0, ok.stderr
    forma = json.loads(ok.stdout)
    assert forma["Stacks"][0]["Label"] == "web-3-true-eval-patch"
    assert forma["Properties"]["name"] == {"Flag": "name", "Type": "String", "Value": "web",
                                           "Description": "The deployment name."}
    assert forma["Properties"]["dryRun"] == {"Flag": "dry-run", "Type": "Boolean", "Default": False, "Value": True}


PROPS_FORMA = '''\
extends "@svc/forma.pkl"
import "@svc/svc.pkl"

properties: Props

class Props {
  /// The environment to deploy.
  env: String
  /// How many copies.
  replicas: Int = 2
  @svc.Flag { name = "dry-run" }
  dryRun: Boolean = false
}

forma {
  new svc.Stack { label = properties.env }
}
'''

# Plain, predictable help: no colours, a fixed width.
PLAIN = {"COLUMNS": "100", "FORCE_COLOR": "", "PY_COLORS": "", "GITHUB_ACTIONS": "", "TERMINAL_WIDTH": ""}


def properties_panel(help_text: str) -> list[list[str]]:
    """The rows of the help's "Properties" panel, split into their columns."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "─ Properties ─" in line)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("╰"):
            break
        rows.append(re.split(r"\s{2,}", line.strip("│ ")))
    return rows


@pytest.mark.parametrize("command", [["eval"], ["apply", "--mode", "patch"], ["destroy"]])
def test_help_lists_the_formas_properties(workdir: Path, command: list[str]) -> None:
    (workdir / "props.pkl").write_text(PROPS_FORMA)
    result = run_svc(*command, "props.pkl", "--help", env=PLAIN)
    assert result.returncode == 0, result.stderr
    assert "Usage: svc " + command[0] in result.stdout
    assert properties_panel(result.stdout) == [
        ["*", "--env", "<String>", "The environment to deploy. [required]"],
        ["--replicas", "<Int>", "How many copies. [default: 2]"],
        ["--dry-run/--no-dry-run", "<Boolean>", "[default: false]"],
    ]


def test_help_without_a_forma_has_no_properties(workdir: Path) -> None:
    (workdir / "props.pkl").write_text(PROPS_FORMA)
    for args in (["eval", "--help"], ["destroy", "--query", "stack:x", "--help"],
                 ["apply", "--config", "props.pkl", "--help"]):  # an option's value is not the forma
        result = run_svc(*args, env=PLAIN)
        assert result.returncode == 0, result.stderr
        assert "Properties" not in result.stdout and "--config" in result.stdout


def test_a_broken_forma_makes_help_a_one_line_error(workdir: Path) -> None:
    (workdir / "broken.pkl").write_text('extends "@svc/forma.pkl"\nproperties: Props\nclass Props { n: Nope }\n')
    result = run_svc("eval", "broken.pkl", "--help", env=PLAIN)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "Error: broken.pkl:3: Cannot find type `Nope`.\n"


def test_eval_takes_config_like_every_command(workdir: Path) -> None:
    (workdir / "props.pkl").write_text(PROPS_FORMA)
    (workdir / "svc.conf.pkl").write_text('amends "svc:/Config.pkl"\n')
    result = run_svc("eval", "props.pkl", "--env", "prod", "--config", "svc.conf.pkl", "--output-consumer", "machine")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["Stacks"][0]["Label"] == "prod"
    missing = run_svc("eval", "props.pkl", "--env", "prod", "--config", "nope.pkl")
    assert (missing.returncode, missing.stderr) == (
        1, "Error: Invalid value for '--config': File 'nope.pkl' does not exist.\nRun 'svc eval --help' for usage.\n")


@pytest.mark.parametrize(("resources", "marker", "message"), [
    ('  new vpc.Vpc {\n    label = "net"\n  }\n', "new vpc.Vpc",
     'resource "net" (FIXTURE::Network::Vpc): required field `cidrBlock` is not set'),
    ('  new vpc.Vpc { label = "net"; cidrBlock = "10.0.0.0/16"; stack = "nope" }\n', "new vpc.Vpc",
     'resource "net" (FIXTURE::Network::Vpc): field `stack`: stack "nope" is not declared in the forma'),
    ('  new vpc.Vpc { label = "net"; cidrBlock = "10.0.0.0/16"; target = "us" }\n', "new vpc.Vpc",
     'resource "net" (FIXTURE::Network::Vpc): field `target`: target "us" is not declared in the forma'),
    # A duplicate label: at the resource that repeats it.
    ('  new vpc.Vpc { label = "net"; cidrBlock = "10.0.0.0/16" }\n  new vpc.Vpc { label = "net"; cidrBlock = "10.1.0.0/16" }\n',
     "10.1.0.0", 'resource "net" (FIXTURE::Network::Vpc): label "net" is already used by another resource of this type'),
    # Required fields inside the plugin's sub-resources: the forma's line, not the plugin's class.
    ('  new bucket.Bucket {\n    label = "b"; name = "b"; apiKey = "k"\n    rules { new { id = "r1" } new { prefix = "p" } }\n  }\n',
     "new bucket.Bucket", 'resource "b" (FIXTURE::Storage::Bucket): required field `rules[1].id` is not set'),
    ('  new bucket.Bucket {\n    label = "b"; name = "b"; apiKey = "k"\n    lifecycle { transition {} }\n  }\n',
     "new bucket.Bucket", 'resource "b" (FIXTURE::Storage::Bucket): required field `lifecycle.transition.storageClass` '
     'is not set'),
    ('  new bucket.Bucket {\n    label = "b"; name = "b"; apiKey = "k"\n'
     '    root { name = "top"; children { new { name = "a" } new { children { new {} } } } }\n  }\n',
     "new bucket.Bucket", 'resource "b" (FIXTURE::Storage::Bucket): required field `root.children[1].name` is not set'),
])
def test_validation_names_resource_field_and_line(workdir: Path, resources: str, marker: str, message: str) -> None:
    path = write_forma(workdir, resources)
    result = run_svc("eval", str(path))
    assert result.returncode == 1
    assert result.stderr == f"Error: main.pkl:{line_of(path, marker)}: {message}\n"
    assert result.stdout == ""


def test_a_bad_type_string_names_the_resource_and_line(workdir: Path) -> None:
    path = workdir / "bad.pkl"
    path.write_text('''\
extends "@svc/forma.pkl"
import "@svc/svc.pkl"
@svc.ResourceHint { type = "FIXTURE::Vpc"; identifier = "$.Id" }
class Odd extends svc.Resource {}
forma {
  new svc.Stack { label = "app" }
  new svc.Target { label = "eu"; namespace = "FIXTURE" }
  new Odd { label = "odd" }
}
''')
    result = run_svc("eval", str(path))
    assert result.stderr == 'Error: bad.pkl:8: resource "odd": type "FIXTURE::Vpc" is not NAMESPACE::SERVICE::RESOURCE\n'


def test_a_resource_without_any_stack_is_refused(workdir: Path) -> None:
    path = workdir / "nostack.pkl"
    path.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@fixture/network/vpc.pkl"\n'
                    'forma {\n  new svc.Target { label = "eu"; namespace = "FIXTURE" }\n'
                    '  new vpc.Vpc { label = "net"; cidrBlock = "10.0.0.0/16" }\n}\n')
    result = run_svc("eval", str(path))
    assert result.stderr == ('Error: nostack.pkl:6: resource "net" (FIXTURE::Network::Vpc): '
                             'no stack; declare a svc.Stack in the forma or set `stack`\n')


def test_secrets_stay_out_of_error_messages(workdir: Path) -> None:
    path = workdir / "secret.pkl"
    path.write_text('''\
extends "@svc/forma.pkl"
import "@svc/svc.pkl"
@svc.ResourceHint { type = "FIXTURE::Db::User"; identifier = "$.Id" }
class User extends svc.Resource {
  @svc.FieldHint {} password: (String(length > 20) | svc.SecretValue)
}
forma {
  new svc.Stack { label = "app" }
  new svc.Target { label = "eu"; namespace = "FIXTURE" }
  new User { label = "u"; password = read("env:DB_PASSWORD") }
}
''')
    result = run_svc("eval", str(path), env={"DB_PASSWORD": "hunter2-short"})
    assert result.returncode == 1
    assert "hunter2" not in result.stderr


def test_not_a_forma_and_missing_file(workdir: Path) -> None:
    other = workdir / "other.pkl"
    other.write_text("x = 1\n")
    assert run_svc("eval", str(other)).stderr == f'Error: {other} is not a forma; start it with: amends "@svc/forma.pkl"\n'
    missing = run_svc("eval", str(workdir / "none.pkl"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_project_init_writes_a_project_that_evaluates_offline(workdir: Path) -> None:
    result = run_svc("project", "init", "proj")
    assert result.returncode == 0, result.stderr
    project = (workdir / "proj" / "PklProject").read_text()
    # Nothing names a path of this machine (svc's installation, the plugins'): a team commits the file as it is.
    assert "import(" not in project and "/" not in project.replace("///", ""), project
    assert "@fixture" in project  # it says which packages svc supplies
    assert (workdir / "proj" / "PklProject.deps.json").is_file()
    evaluated = run_svc("eval", str(workdir / "proj" / "main.pkl"), "--name", "demo", "--output-consumer", "machine")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["Stacks"] == [
        {"Label": "demo-stack", "Description": "Stack for my resources"}]  # no policies: left out
    again = run_svc("project", "init", "proj")
    assert again.returncode == 1 and "already exists; pass --yes to overwrite" in again.stderr


def test_a_project_forma_uses_plugin_packages_and_is_resolved_when_stale(workdir: Path) -> None:
    assert run_svc("project", "init", "proj").returncode == 0
    deps = workdir / "proj" / "PklProject.deps.json"
    deps.unlink()
    write_forma(workdir / "proj", '  new vpc.Vpc { label = "net"; cidrBlock = "10.0.0.0/16" }\n', "infra.pkl")
    result = run_svc("eval", str(workdir / "proj" / "infra.pkl"), "--output-consumer", "machine")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["Resources"][0]["Type"] == "FIXTURE::Network::Vpc"
    assert deps.is_file()  # pkl project resolve ran again


def test_project_init_writes_a_forma_that_applies_as_written(workdir: Path, home: Path) -> None:
    """The first forma of a project applies unchanged on an agent that runs LOCAL (the quick start's): its file is
    written, and applying it again changes nothing."""
    (workdir / "agent").mkdir()
    agent = on_demand_agent(workdir / "agent", "new LOCAL.PluginConfig {}", imports=("LOCAL",)).start()
    try:
        assert run_svc("project", "init", "proj").returncode == 0
        forma = str(workdir / "proj" / "main.pkl")
        applied = run_svc("apply", forma, "--config", str(agent.config), "--yes", "--wait")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert (home / "svc-my-name" / "README.txt").read_text() == "Managed by svc: my-name\n"
        again = run_svc("apply", forma, "--config", str(agent.config), "--yes", "--wait")
        assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    finally:
        agent.stop()

"""A resource class of svc's own packages lists its properties in its own ``res`` (``svc.resolvableOfProperty``,
built when read), and that ``res`` is the reflective one (``svc.resolvablesOf``) member for member: the same
names, the same resolvable classes (scalar, listing, mapping), the same envelopes (label, type, stack, wire key).

Through real Pkl, every resource class of the AWS package (generated and hand-written), of LOCAL and of FAKE, in
one evaluation (about a second). The AWS and LOCAL classes are all closed: no subclass can declare a property their
``res`` does not list. FAKE's closed classes list theirs too; its open ones (``FAKE::Secret::Consumer``, and
``FAKE::Dns::Record`` with a resolvable of its own) keep the reflective or their own ``res``, as a class that may be
extended must. The reflective ``res`` itself stays under test here (every listed one is held to it) and wherever the
suite evaluates the fixture plugins of ``tests/fixtures``, shaped as third-party plugins, whose classes list none
(``formas/everything.pkl`` reads their ``res``).
"""

from __future__ import annotations

import re

import pytest

from support.packages_eval import evaluate_with_packages
from svc.pkl.server import PklError
from svc.plugins import installed_plugins

RESOURCE_CLASS = re.compile(r"^(open )?class (\w+) extends svc\.Resource \{", re.M)

CHECKS = """
import "pkl:reflect"
import "@svc/svc.pkl"
{imports}

local function shape(r: Any): Map<String, Any> =
  if (r is svc.Resolvable) r.envelope().put("$class", reflect.Class(r.getClass()).name)
  else Map("$notResolvable", r.toString())

local function view(res: Dynamic): Map<String, Map<String, Any>> = res.toMap().mapValues((_, r) -> shape(r))

local function verdict(resource: svc.Resource): Dynamic = let (listed = view(resource.res))
  new Dynamic {
    declared = reflect.Class(resource.getClass()).properties.containsKey("res")
    same = listed == view(svc.resolvablesOf(resource))
    names = listed.keys.toListing()
  }

results = new Mapping {
{entries}
}

output { renderer = new JsonRenderer {} }
"""


def resource_classes() -> list[tuple[str, str]]:
    """(import URI, class name) of every closed resource class in the AWS, LOCAL and FAKE packages
    (AWS and LOCAL have no open one)."""
    found = []
    for plugin in installed_plugins():
        if plugin.namespace not in ("AWS", "LOCAL", "FAKE"):
            continue
        for module in sorted(plugin.schema_dir.rglob("*.pkl")):
            uri = f"@{plugin.namespace.lower()}/{module.relative_to(plugin.schema_dir).as_posix()}"
            for opened, name in RESOURCE_CLASS.findall(module.read_text()):
                if opened and plugin.namespace == "FAKE":
                    continue
                assert not opened, f"{uri}#{name} is open: a subclass could declare a property its res does not list"
                found.append((uri, name))
    return found


def checks(classes: list[tuple[str, str]]) -> str:
    aliases = {uri: f"m{n}" for n, uri in enumerate(sorted({uri for uri, _ in classes}))}
    imports = "\n".join(f'import "{uri}" as {alias}' for uri, alias in aliases.items())
    entries = "\n".join(f'  ["{uri}#{name}"] = verdict(new {aliases[uri]}.{name} {{ label = "l"; stack = "s" }})'
                        for uri, name in classes)
    return CHECKS.replace("{imports}", imports).replace("{entries}", entries)


@pytest.fixture(scope="module")
def classes() -> list[tuple[str, str]]:
    return resource_classes()


@pytest.fixture(scope="module")
def results(classes: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    module = tmp_path_factory.mktemp("res") / "checks.pkl"
    module.write_text(checks(classes))
    return evaluate_with_packages(module.as_uri())["results"]


def test_every_closed_resource_class_of_aws_local_and_fake_lists_its_own_res(classes: list[tuple[str, str]],
                                                                             results: dict[str, dict]) -> None:
    names = {f"{u}#{n}" for u, n in classes}
    assert len(names) > 1700 and {"@local/fs.pkl#File", "@aws/ec2/vpc.pkl#VPC", "@fake/test/item.pkl#Item",
                                    "@fake/compute/server.pkl#Server"} <= names
    reflective = sorted(key for key, verdict in results.items() if not verdict["declared"])
    assert not reflective, f"these classes build their whole res by reflection: {reflective[:10]}"


def test_each_listed_res_is_the_reflective_one_member_for_member(results: dict[str, dict]) -> None:
    differing = sorted(key for key, verdict in results.items() if not verdict["same"])
    assert not differing, f"res differs from svc.resolvablesOf in {differing[:10]}"
    function = results["@aws/lambda/function.pkl#Function"]["names"]
    assert {"arn", "functionName", "role", "tags", "vpcConfig"} <= set(function)
    assert set(results["@local/fs.pkl#File"]["names"]) == {"path", "content", "mode"}
    assert set(results["@fake/test/item.pkl#Item"]["names"]) == {"value", "ref", "token", "id"}


def test_a_listed_res_builds_only_the_member_read(write_pkl) -> None:
    """Reading one member builds that one: a member that cannot be built (a property the class does not have)
    fails only when it is read, and says so."""
    module = write_pkl("lazy.pkl", """
        import "@svc/svc.pkl"

        @svc.ResourceHint { type = "TEST::Lazy::Thing"; identifier = "$.Path" }
        class Thing extends svc.Resource {
          path: String?
          hidden res: Dynamic = new Dynamic {
            path = svc.resolvableOfProperty(outer, "path")
            missing = svc.resolvableOfProperty(outer, "noSuchProperty")
          }
        }

        local thing = new Thing { label = "t"; stack = "s"; path = "a.txt" }
        path = thing.res.path.envelope()
        missing = if (read?("prop:missing") != null) thing.res.missing.envelope() else null
        output { renderer = new JsonRenderer {} }
    """)
    assert evaluate_with_packages(module.as_uri())["path"] == {
        "$res": True, "$label": "t", "$type": "TEST::Lazy::Thing", "$stack": "s", "$property": "path",
        "$visibility": "Clear"}
    with pytest.raises(PklError, match="no property `noSuchProperty` in class"):
        evaluate_with_packages(module.as_uri(), properties={"missing": "yes"})

"""Resource models as the Cloud Control API shows and addresses them: identifiers, read views, read-only values."""

from __future__ import annotations

import copy
import json
import secrets
import uuid
from typing import Any

from .registry import Json, TypeSchema
from .validation import first_model_error
from .values import Unsatisfiable, ValueMaker

ACCOUNT = "123456789012"
REGION = "us-east-1"
# Services whose ARNs name no region (arn:aws:iam::123456789012:role/…): other schemas' patterns require it.
_GLOBAL_SERVICES = frozenset({"iam", "route53", "cloudfront", "organizations"})
# Types whose service makes up a UUID as the identifier, which other types' patterns expect (an EFS file
# system's KmsKeyId is a key's UUID, or an ARN ending in one).
_UUID_IDENTIFIERS = frozenset({"AWS::KMS::Key"})
# How the resource part of a type's ARN reads, where it is not ``<resource>/<name>``: other types' patterns check
# it (a Lambda permission's FunctionName is a name or an ARN with ``function:<name>``).
_ARN_RESOURCES = {"AWS::Lambda::Function": "function:{}", "AWS::SNS::Topic": "{}", "AWS::SQS::Queue": "{}",
                  "AWS::StepFunctions::StateMachine": "stateMachine:{}", "AWS::SecretsManager::Secret": "secret:{}"}
# The prefixes of the ids EC2 and EFS make up (sg-0a1b…), where they are not the type's first four letters.
_ID_PREFIXES = {"AWS::EC2::SecurityGroup": "sg", "AWS::EC2::Subnet": "subnet", "AWS::EC2::InternetGateway": "igw", "AWS::EC2::RouteTable": "rtb",
                "AWS::EC2::LaunchTemplate": "lt", "AWS::EC2::NatGateway": "nat", "AWS::EC2::NetworkAcl": "acl",
                "AWS::EC2::Instance": "i", "AWS::EC2::Volume": "vol", "AWS::EC2::NetworkInterface": "eni",
                "AWS::EFS::FileSystem": "fs", "AWS::EFS::MountTarget": "fsmt", "AWS::EFS::AccessPoint": "fsap"}


def identifier_of(schema: TypeSchema, model: Json) -> str | None:
    """The primary identifier as Cloud Control writes it: the values joined by ``|`` in the schema's order;
    None while a part is missing."""
    parts = [model.get(name) for name in schema.primary_identifier]
    if any(part is None for part in parts):
        return None
    return "|".join(part if isinstance(part, str) else json.dumps(part) for part in parts)


def parse_identifier(schema: TypeSchema, identifier: str) -> str:
    """An identifier as a caller may give it (``a|b``, or a JSON object of the primary identifier's
    properties) in the ``a|b`` form the stand-in keys resources by."""
    if identifier.startswith("{"):
        try:
            given = json.loads(identifier)
        except ValueError:
            return identifier
        if isinstance(given, dict):
            return identifier_of(schema, given) or identifier
    return identifier


def without_paths(model: Json, paths: tuple[str, ...]) -> Json:
    """A copy of ``model`` without the values at the schema paths (``/properties/A/B``, ``*`` for any element)."""
    kept = copy.deepcopy(model)
    for path in paths:
        parts = path.split("/")[2:]
        if parts:
            _remove(kept, parts)
    return kept


def with_values_at(model: Json, source: Json, paths: tuple[str, ...]) -> Json:
    """A copy of ``model`` with ``source``'s values at the schema paths (no ``*`` ones) where ``source`` has one and
    ``model`` has the object to hold it."""
    merged = copy.deepcopy(model)
    for path in paths:
        parts = path.split("/")[2:]
        if not parts or "*" in parts:
            continue
        value: Any = source
        target: Any = merged
        for index, part in enumerate(parts):
            if not isinstance(value, dict) or part not in value:
                break
            value = value[part]
            if index < len(parts) - 1:
                if not isinstance(target, dict) or not isinstance(target.get(part), dict):
                    break
                target = target[part]
        else:
            target[parts[-1]] = copy.deepcopy(value)
    return merged


def _remove(node: Any, parts: list[str]) -> None:
    head, rest = parts[0], parts[1:]
    if head == "*" and isinstance(node, list):
        children = node
    elif isinstance(node, dict) and head in node:
        if not rest:
            del node[head]
            return
        children = [node[head]]
    else:
        return
    for child in children:
        if rest:
            _remove(child, rest)


def read_view(schema: TypeSchema, model: Json) -> Json:
    """What GetResource shows: the model without its write-only properties."""
    return without_paths(model, schema.write_only_paths)


def touches(pointer: str, schema_paths: frozenset[str] | tuple[str, ...]) -> str | None:
    """The schema path (``/properties/A``) a patch operation's ``path`` (``/A/0/B``) falls under or above,
    if any: changing a value inside a create-only property, or a whole object holding one, changes it."""
    segments = [part for part in pointer.split("/")[1:]]
    for path in schema_paths:
        declared = path.split("/")[2:]
        width = min(len(segments), len(declared))
        if all(a == b or b == "*" for a, b in zip(segments[:width], declared[:width], strict=True)):
            return path
    return None


def with_read_only_values(schema: TypeSchema, model: Json, taken: set[str]) -> Json:
    """``model`` with a plausible value for each top-level read-only property (an ARN for ``…Arn``, an id for
    ``…Id``) and each part of the primary identifier the caller left out (an optional name the service makes up,
    as for an IAM role without ``RoleName``), valid for its schema, the identifier not in ``taken``."""
    maker = ValueMaker(schema)
    # Identifier parts first: the ARN made next can then name the resource.
    missing_identifier = [name for name in schema.primary_identifier if name not in model]
    generated = [*missing_identifier, *sorted(schema.read_only - set(missing_identifier))]
    for attempt in range(64):
        filled = dict(model)
        for name in generated:
            if name in schema.properties:
                filled[name] = _read_only_value(schema, maker, name, filled, attempt)
        if identifier_of(schema, filled) not in taken:
            return _with_nested_read_only_values(schema, maker, filled, attempt)
    raise Unsatisfiable(f"{schema.type_name}: no free identifier could be generated")


def _with_nested_read_only_values(schema: TypeSchema, maker: ValueMaker, model: Json, attempt: int) -> Json:
    """``model`` with values at the nested read-only paths (``/properties/Endpoint/Address``), so that references
    such as ``Endpoint.Address`` resolve; unchanged where that would break the schema. Paths through array
    elements (``*``) are left alone."""
    filled = copy.deepcopy(model)
    for path in schema.read_only_paths:
        parts = path.split("/")[2:]
        if len(parts) < 2 or "*" in parts or parts[0] not in schema.properties:
            continue
        # The service makes the objects on the way only inside a property that is all its own (Endpoint); in one
        # the caller gave, it fills in what is there (MasterUserSecret.SecretArn when MasterUserSecret was given).
        owned = parts[0] in schema.read_only
        node, subschema = filled, {"properties": schema.properties}
        for part in parts[:-1]:
            subschema = maker.resolved(subschema).get("properties", {}).get(part)
            if subschema is None or (part not in node and not owned) or not isinstance(node.setdefault(part, {}),
                                                                                         dict):
                break
            node = node[part]
        else:
            leaf = maker.resolved(subschema).get("properties", {}).get(parts[-1])
            if leaf is not None:
                node[parts[-1]] = _plausible_value(schema, maker, leaf, parts[-1], model, attempt)
    return filled if first_model_error(schema, filled) is None else model


def _read_only_value(schema: TypeSchema, maker: ValueMaker, name: str, model: Json, attempt: int) -> Any:
    return _plausible_value(schema, maker, schema.properties[name], name, model, attempt)


def _plausible_value(schema: TypeSchema, maker: ValueMaker, subschema: Json, name: str, model: Json,
                     attempt: int) -> Any:
    _, service, resource = schema.type_name.lower().split("::")
    unique = secrets.token_hex(8)
    # The resource's own name makes the ARN readable, but only on the first attempt: a clash needs another.
    named = next((v for k, v in model.items() if k.endswith(("Name", "Identifier")) and isinstance(v, str)), None) \
        if attempt == 0 else None
    # Else the ARN ends in the identifier made up before it (a key's ARN in its UUID), as AWS's do.
    identifier = identifier_of(schema, model)
    candidates: list[Any] = []
    if name in schema.primary_identifier and schema.type_name in _UUID_IDENTIFIERS:
        candidates.append(str(uuid.uuid4()))
    if name.lower().endswith("arn"):
        region = "" if service in _GLOBAL_SERVICES else REGION
        part = _ARN_RESOURCES.get(schema.type_name, resource + "/{}").format(named or identifier or unique)
        candidates.append(f"arn:aws:{service}:{region}:{ACCOUNT}:{part}")
    if name.endswith(("Address", "Endpoint", "Host", "DnsName", "DNSName")):
        candidates.append(f"{resource}-{unique}.{service}.{REGION}.amazonaws.com")
    if name.endswith("Port"):
        candidates += [443, "443"]
    if name.endswith(("Url", "URL", "Uri")):
        candidates.append(f"https://{resource}-{unique}.{service}.{REGION}.amazonaws.com")
    candidates += [f"{_ID_PREFIXES.get(schema.type_name, resource[:4])}-{unique}", unique, str(int(unique, 16) % 10**12).zfill(12), named]
    for candidate in candidates:
        if candidate is not None and maker.is_valid(subschema, candidate):
            return candidate
    return maker.value_for(subschema, name=name, variant=attempt)

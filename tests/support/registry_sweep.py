"""Registry types in real formas, for the agent-level sweep (issue 26, acceptance 1).

Each type gets the stand-in's minimal valid properties (``cloudcontrol.examples``) and, where the schema allows,
a second value for a mutable property and one for a create-only property. A batch of types becomes three Pkl
formas, one resource per type labelled after it: as created, with the mutable property changed, and with the
create-only one changed too. The Pkl is written by ``svc extract``'s own generator from the wire form of the
resources, so the property names, sub-resource classes and literals are the ones the installed modules declare
(hand-written or generated), not a second guess at them.

Which types: a deterministic sample (every ``_SAMPLE_STEP``-th in-scope type by name) plus the 20 native ones;
every type with create and read handlers with ``SVC_AGENT_SWEEP=all``; chosen ones with
``SVC_AGENT_SWEEP=AWS::S3::Bucket,AWS::EC2::Instance``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from svc_plugin_aws.routing import NATIVE

from support.cloudcontrol.examples import Change, Example, Unsatisfiable, example_for
from support.cloudcontrol.registry import registry
from svc.forma.extract import generate
from svc.forma.extract_catalog import Catalog, load_catalog

SWEEP_VARIABLE = "SVC_AGENT_SWEEP"
_SAMPLE_STEP = 9
_SAMPLE_START = 4  # other picks than the other sweeps (every 17th type from the first, and from the ninth)
TARGET_LABEL = "aws"

# Where a hand-written module (a native type's) asks more than the registry schema says: properties it requires
# (``properties``), and changes its types accept (``mutable``, ``create_only``: a property and its second value).
_SAML_METADATA = "<EntityDescriptor entityID='https://idp.example.com'>{}</EntityDescriptor>"
_HAND_WRITTEN: dict[str, dict[str, Any]] = {
    "AWS::DynamoDB::Table": {
        "properties": {"AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                       "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]},
        "mutable": ("BillingMode", "PAY_PER_REQUEST"), "create_only": ("TableName", "sweep-table")},
    "AWS::IAM::OIDCProvider": {
        "properties": {"Url": "https://oidc.example.com"}, "create_only": ("Url", "https://oidc.example.org")},
    "AWS::IAM::SAMLProvider": {
        "properties": {"SamlMetadataDocument": _SAML_METADATA.format("a" * 1000)},
        "mutable": ("SamlMetadataDocument", _SAML_METADATA.format("b" * 1000))},
    "AWS::IAM::ServerCertificate": {
        "properties": {"CertificateBody": "-----BEGIN CERTIFICATE-----a-----END CERTIFICATE-----",
                       "PrivateKey": "-----BEGIN PRIVATE KEY-----a-----END PRIVATE KEY-----"},
        "mutable": ("Path", "/sweep/"),
        "create_only": ("CertificateBody", "-----BEGIN CERTIFICATE-----b-----END CERTIFICATE-----")},
    "AWS::Route53::HostedZone": {
        "properties": {"Name": "sweep.example.com"}, "create_only": ("Name", "sweep.example.org")},
    "AWS::S3::Bucket": {
        "mutable": ("VersioningConfiguration", {"Status": "Enabled"}), "create_only": ("BucketName", "sweep-bucket")},
}


class Stage(StrEnum):
    """Which forma of a batch: what each resource holds at that point of the sweep."""

    CREATED = "created"
    UPDATED = "updated"  # the mutable property changed
    REPLACED = "replaced"  # and the create-only one


def sweep_type_names(environment: Mapping[str, str] | None = None) -> list[str]:
    """The in-scope types the sweep covers: all with ``SVC_AGENT_SWEEP=all``, else the sample and the natives."""
    names = registry().in_scope_type_names()
    chosen = (environment or os.environ).get(SWEEP_VARIABLE, "").strip()
    if chosen == "all":
        return names
    if chosen:  # a comma-separated list of types: to look again at the ones a run reported
        return sorted({name.strip() for name in chosen.split(",") if name.strip()})
    return sorted({*names[_SAMPLE_START::_SAMPLE_STEP], *NATIVE})


def label_of(type_name: str) -> str:
    """``AWS::EC2::Instance`` → ``ec2-instance``: unique per type, readable in the agent's output."""
    return "-".join(type_name.split("::")[1:]).lower()


@dataclass(frozen=True)
class SweepType:
    type_name: str
    label: str
    example: Example

    def properties(self, stage: Stage) -> dict[str, Any]:
        properties = dict(self.example.properties)
        if stage is not Stage.CREATED and self.example.mutable is not None:
            properties[self.example.mutable.name] = self.example.mutable.after
        if stage is Stage.REPLACED and self.example.create_only is not None:
            properties[self.example.create_only.name] = self.example.create_only.after
        return properties


@dataclass
class Failure:
    type_name: str
    phase: str
    message: str

    def __str__(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else "(no message)"
        return f"{self.type_name} [{self.phase}]: {first[:400]}"


@dataclass
class Ledger:
    """What the sweep found: failures by type and phase, and the seconds each phase took in all."""

    failures: list[Failure] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def fail(self, type_name: str, phase: str, message: str) -> None:
        self.failures.append(Failure(type_name, phase, message))

    def failed(self, type_name: str) -> bool:
        return any(f.type_name == type_name for f in self.failures)

    def timed(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds


def catalog_for(type_names: Iterable[str]) -> Catalog:
    """The installed AWS classes these types' formas are written with (one Pkl request)."""
    return load_catalog({"AWS"}, set(type_names))


def sweep_types(type_names: Iterable[str], catalog: Catalog, ledger: Ledger) -> list[SweepType]:
    """The types with their examples, changing only properties their module declares; a type without a module or
    that the examples cannot satisfy is a failure of the ``example`` phase."""
    found = []
    for name in type_names:
        module_class = catalog.resource_class(name)
        if module_class is None:
            ledger.fail(name, "example", "no module of the AWS package declares the type")
            continue
        settable = {f.key for f in module_class.fields if f.name is not None}
        try:
            example = example_for(registry().schema(name), settable)
        except Unsatisfiable as exc:
            ledger.fail(name, "example", str(exc))
            continue
        found.append(SweepType(name, label_of(name), _hand_written(example)))
    return found


def _hand_written(example: Example) -> Example:
    """The example with what the type's hand-written module asks for (``_HAND_WRITTEN``)."""
    override = _HAND_WRITTEN.get(example.type_name)
    if override is None:
        return example
    properties = {**example.properties, **override.get("properties", {})}

    def change(key: str, default: Change | None) -> Change | None:
        if key not in override:
            return default
        name, after = override[key]
        return Change(name, properties.get(name), after)

    return Example(example.type_name, properties, change("mutable", example.mutable),
                   change("create_only", example.create_only))


def forma_text(types: Iterable[SweepType], stage: Stage, stack: str, catalog: Catalog) -> str:
    """A Pkl forma of one stack on one ``us-east-1`` target holding each type's resource at ``stage``."""
    forma = {
        "Stacks": [{"Label": stack}],
        "Targets": [{"Label": TARGET_LABEL, "Namespace": "AWS", "Config": {"Type": "AWS", "Region": "us-east-1"}}],
        "Resources": [{"Type": t.type_name, "Label": t.label, "Stack": stack, "Target": TARGET_LABEL,
                       "Properties": t.properties(stage)} for t in types],
    }
    return generate(forma, catalog).text

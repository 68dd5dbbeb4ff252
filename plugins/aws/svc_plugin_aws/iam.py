"""What the IAM handlers share: policy documents, the inline and managed policies of a role or group, and
the tags of taggable IAM entities.

Roles and groups spell the same operations with their kind in the name (``attach_role_policy``,
``attach_group_policy``) and key their entity by ``RoleName`` / ``GroupName``; ``Principal`` hides that.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws.errors import is_not_found, message_of


def document_text(document: Any) -> str:
    """An IAM policy document as JSON text. boto3 hands documents over parsed; other clients (and AWS's raw
    answer) give URL-encoded text."""
    if isinstance(document, str):
        text = urllib.parse.unquote(document) if document.lstrip().startswith("%7B") else document
        return json.dumps(json.loads(text), separators=(",", ":"))
    return json.dumps(document, separators=(",", ":"))


def document_object(document: Any) -> Json:
    """An IAM policy document as a JSON object, from text or an object."""
    return json.loads(document_text(document)) if isinstance(document, str) else dict(document)


def send(document: Any) -> str:
    """The form IAM takes: JSON text (compact, as the forma rendered it when it is text already)."""
    return document if isinstance(document, str) else json.dumps(document, separators=(",", ":"))


@contextmanager
def attaching(what: str) -> Iterator[None]:
    """An attachment naming a policy or entity that does not exist is a mistake in the forma, not a resource
    that is gone (which the agent would retry and, on delete, count as done)."""
    try:
        yield
    except ClientError as error:
        if is_not_found(error):
            raise PluginError(ErrorCode.INVALID_REQUEST, f"cannot attach {what}: {message_of(error)}") from None
        raise


@dataclass(frozen=True)
class Principal:
    """A role or group, by kind (``"role"``/``"group"``) and name."""

    iam: Any
    kind: str
    name: str

    @property
    def _key(self) -> dict[str, str]:
        return {f"{self.kind.capitalize()}Name": self.name}

    def _call(self, action: str) -> Callable[..., Any]:
        return getattr(self.iam, action.format(kind=self.kind))

    # -- managed policies ---------------------------------------------------------------------------------------

    def managed_policy_arns(self) -> list[str]:
        pages = self.iam.get_paginator(f"list_attached_{self.kind}_policies").paginate(**self._key)
        return sorted(policy["PolicyArn"] for page in pages for policy in page.get("AttachedPolicies", []))

    def set_managed_policies(self, wanted: list[str] | None) -> None:
        current = set(self.managed_policy_arns())
        desired = set(wanted or [])
        for arn in sorted(desired - current):
            with attaching(f"managed policy {arn} to {self.kind} {self.name}"):
                self._call("attach_{kind}_policy")(PolicyArn=arn, **self._key)
        for arn in sorted(current - desired):
            self._call("detach_{kind}_policy")(PolicyArn=arn, **self._key)

    # -- inline policies ----------------------------------------------------------------------------------------

    def inline_policies(self) -> list[Json]:
        pages = self.iam.get_paginator(f"list_{self.kind}_policies").paginate(**self._key)
        names = sorted(name for page in pages for name in page.get("PolicyNames", []))
        return [{"PolicyName": name, "PolicyDocument": document_object(
            self._call("get_{kind}_policy")(PolicyName=name, **self._key)["PolicyDocument"])} for name in names]

    def set_inline_policies(self, wanted: list[Json] | None) -> None:
        current = {policy["PolicyName"]: policy["PolicyDocument"] for policy in self.inline_policies()}
        desired = {policy["PolicyName"]: document_object(policy["PolicyDocument"]) for policy in wanted or []}
        for name, document in desired.items():
            if current.get(name) != document:
                self._call("put_{kind}_policy")(PolicyName=name, PolicyDocument=send(document), **self._key)
        for name in sorted(set(current) - set(desired)):
            self._call("delete_{kind}_policy")(PolicyName=name, **self._key)

    # -- both, as the properties ``ManagedPolicyArns`` and ``Policies`` --------------------------------------------

    def policy_properties(self) -> Json:
        """Both kinds of policy as read back (None where there are none)."""
        return {"ManagedPolicyArns": self.managed_policy_arns() or None, "Policies": self.inline_policies() or None}

    def set_policy_properties(self, properties: Json, wanted: Callable[[str], bool] = lambda _: True) -> None:
        """Makes the policies what ``properties`` say: inline, then managed, each only if ``wanted`` names it."""
        if wanted("Policies"):
            self.set_inline_policies(properties.get("Policies"))
        if wanted("ManagedPolicyArns"):
            self.set_managed_policies(properties.get("ManagedPolicyArns"))

    def strip(self) -> None:
        """Detaches every managed policy and deletes every inline one: IAM deletes no entity that has any."""
        self.set_managed_policies([])
        self.set_inline_policies([])


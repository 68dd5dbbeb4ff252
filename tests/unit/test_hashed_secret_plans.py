"""A secret written as its hash (``svc.hashedSecret``, as ``svc extract`` writes one) in the planner: it
keeps the secret a resource has, and a create, which would have to send it, is refused."""

from __future__ import annotations

import pytest

from support.planning import BUCKET, CATALOG, forma, inventory, new_id, resource, stored
from svc.engine import errors
from svc.engine.planner import PlanRequest, plan
from svc.model import values
from svc.model.opaque import OpaqueFields

SECRET = "s3cret"
HASHED = {"$value": values.digest(SECRET), "$visibility": "Opaque", "$strategy": "Update", "$hashed": True}


def _apply(properties: dict, *stored_resources) -> object:
    f = forma(resource("data", "T::Storage::Bucket", properties))
    return plan(PlanRequest("apply", "reconcile", f), inventory(*stored_resources), CATALOG, new_id)


def test_a_hash_equal_to_the_stored_one_changes_nothing() -> None:
    current = stored("K1", "T::Storage::Bucket", "data",
                     values.hash_secrets({"Name": "data", "ApiKey": SECRET}, OpaqueFields.of_paths(["ApiKey"])))
    assert BUCKET.hints["ApiKey"].opaque
    changeset = _apply({"Name": "data", "ApiKey": HASHED}, current)
    assert changeset.resources == []


def test_a_create_from_a_hash_is_refused_with_what_to_do() -> None:
    with pytest.raises(errors.InvalidForma, match=r"ApiKey holds only a secret's hash.*supply the plaintext"):
        _apply({"Name": "data", "ApiKey": HASHED})

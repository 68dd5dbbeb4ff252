"""The pure planner: evaluated forma + stored state in, changeset out (no I/O)."""

from svc.engine.planner.changeset import Changeset, PolicyChange, ResourceChange, StackChange, TargetChange
from svc.engine.planner.inventory import UNMANAGED_STACK, Inventory, Modification, snapshot
from svc.engine.planner.plan import PlanRequest, plan
from svc.engine.planner.policies import StoredPolicies
from svc.engine.planner.validate import Catalog

__all__ = ["UNMANAGED_STACK", "Catalog", "Changeset", "Inventory", "Modification", "PlanRequest", "PolicyChange",
           "ResourceChange", "StackChange", "StoredPolicies", "TargetChange", "plan", "snapshot"]

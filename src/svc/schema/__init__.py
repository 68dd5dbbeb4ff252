"""Resource type descriptors: their model, and their extraction from a plugin's Pkl schema package."""

from svc.schema.model import EdgeKind, FieldHint, ParentMapping, ResourceDescriptor, Schema

__all__ = ["EdgeKind", "FieldHint", "ParentMapping", "ResourceDescriptor", "Schema"]

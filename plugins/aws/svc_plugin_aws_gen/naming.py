"""Pkl names for registry names: lowerCamelCase properties, PascalCase classes, safe from Pkl's own words."""

from __future__ import annotations

import re

# Pkl's keywords and reserved words: a property so named is written in backticks.
PKL_KEYWORDS = frozenset("""
    abstract amends as case class const delete else extends external false fixed for function hidden if import
    in is let local module new nothing null open out outer override protected read record super switch this
    throw trace true typealias unknown vararg when
""".split())

# Members that svc.Resource declares: a registry property of the same name takes the `aws` prefix.
RESOURCE_MEMBERS = frozenset({"label", "group", "target", "stack", "alias", "managed", "res"})

# Class names a module must not shadow: pkl:base's, and the module's own imports.
RESERVED_CLASS_NAMES = frozenset("""
    Any Annotation Boolean Bytes Class DataSize Deprecated Duration Dynamic Float Function Function0 Function1
    Function2 Function3 Function4 Function5 Int Int8 Int16 Int32 UInt UInt8 UInt16 UInt32 IntSeq List Listing Map
    Mapping Module ModuleInfo Null Number Object Pair Regex RegexMatch Resource Set SourceCode String Typed
    TypeAlias Unlisted AlsoKnownAs Since Comparable Char Uint svc aws
""".split())

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|$)|[A-Z]?[a-z]+|\d+|[A-Z]+")


def property_name(wire: str) -> str:
    """``SSEAlgorithm`` → ``sseAlgorithm``, ``VPCId`` → ``vpcId``, ``Tags`` → ``tags``: the leading capitals
    of an acronym are lowered, the word after it keeps its capital."""
    leading = re.match(r"[A-Z]+", wire)
    if leading is None:
        name = wire
    elif len(leading.group()) == len(wire) or len(leading.group()) == 1:
        name = wire[: len(leading.group())].lower() + wire[len(leading.group()):]
    elif wire[len(leading.group())].isalpha():
        cut = len(leading.group()) - 1  # `SSEAlgorithm`: the `A` starts the next word
        name = wire[:cut].lower() + wire[cut:]
    else:
        name = wire[: len(leading.group())].lower() + wire[len(leading.group()):]
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if name[0].isdigit():
        name = "_" + name
    return name


def resource_member_name(wire: str) -> str:
    """A top-level property's Pkl name: its :func:`property_name`, prefixed when svc.Resource has that member."""
    name = property_name(wire)
    return "aws" + wire[0].upper() + wire[1:] if name in RESOURCE_MEMBERS else name


def quoted(name: str) -> str:
    """The name as Pkl source: in backticks when it is a keyword."""
    return f"`{name}`" if name in PKL_KEYWORDS else name


def class_name(name: str) -> str:
    """A PascalCase class name for a definition or a property path."""
    words = [part for part in re.split(r"[^A-Za-z0-9]+", name) if part]
    pascal = "".join(word[0].upper() + word[1:] for word in words) or "Value"
    if pascal[0].isdigit():
        pascal = "N" + pascal
    return pascal


def module_path(type_name: str) -> str:
    """``AWS::EC2::Instance`` → ``ec2/instance.pkl``."""
    _, service, resource = type_name.split("::")
    return f"{service.lower()}/{resource.lower()}.pkl"

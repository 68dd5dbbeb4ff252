"""The types whose Pkl modules are written by hand: the generator leaves them as they are.

They are the native types, those with a boto3 handler of their own (``svc_plugin_aws.routing.NATIVE``, the one
handler-choice table); their modules keep their paths, names and hints, so every forma that works today keeps
working. Each is also where the generator would put it.
"""

from __future__ import annotations

from svc_plugin_aws.routing import NATIVE

HAND_WRITTEN: frozenset[str] = frozenset(NATIVE)

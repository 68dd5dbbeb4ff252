"""Physical names for resources whose name the forma leaves out, the way CloudFormation makes them:
the label, then a random suffix, within the service's length and character rules."""

from __future__ import annotations

import re
import secrets


def generated(label: str, *, max_length: int, lower: bool = False, allowed: str = r"A-Za-z0-9-") -> str:
    suffix = secrets.token_hex(6)
    base = label.lower() if lower else label
    base = re.sub(f"[^{allowed}]+", "-", base).strip("-.") or "svc"
    base = base[: max_length - len(suffix) - 1].rstrip("-.")
    return f"{base}-{suffix}"

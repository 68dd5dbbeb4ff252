"""The agent's request token as Cloud Control's ``ClientToken``, the same for the same token.

Cloud Control accepts ``[-A-Za-z0-9+/=]+`` of at most 128 characters; the agent's tokens (``<command>-<resource>-
<op>.<attempt>``) have a dot. A token that fits is sent as it is (readable in CloudTrail); any other is hashed.
"""

from __future__ import annotations

import hashlib
import re

_FITS = re.compile(r"[-A-Za-z0-9+/=]{1,128}")


def client_token(request_token: str) -> str:
    if _FITS.fullmatch(request_token):
        return request_token
    return "svc-" + hashlib.sha256(request_token.encode()).hexdigest()

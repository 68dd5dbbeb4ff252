"""The API's JSON responses, encoded with orjson (``svc.jsontext``).

A big command's plan (the answer to its submission) and status are rendered on the agent's event loop while
the command runs; the standard library's encoder spent milliseconds there that the command's plugin calls
waited for.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse as _StandardJSONResponse

from svc import jsontext


class JSONResponse(_StandardJSONResponse):
    def render(self, content: Any) -> bytes:
        return jsontext.dump_bytes(content)

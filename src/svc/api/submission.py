"""``POST /api/v1/commands``: the multipart form read into an apply or destroy request.

Everything a client can get wrong about the upload itself (content type, fields, the ``file`` part's
JSON and its shape) is refused here with a 400 naming the field, before the engine sees the request,
so nothing is stored. What only the engine can judge (unknown types and targets, cycles…) it refuses.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from fastapi import Request
from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from svc import jsontext
from svc.api.problems import HttpProblem, bad_request
from svc.datastore import DESTROY_FIELDS, InvalidQueryError, parse_query
from svc.engine.service import ApplyRequest, DestroyRequest
from svc.model.forma import LISTED_SCHEMAS, Forma

FORM_FIELDS = ("command", "mode", "simulate", "force", "query", "on-dependents", "file", "expected-plan",
               "seal-secrets")
FORMA_KEYS = ("Description", "Properties", "Stacks", "Targets", "Policies", "Resources")
MAX_FORMA_BYTES = 256 * 1024 * 1024  # a 10,000-resource forma is tens of MiB; this only stops abuse
_TRUE = frozenset({"true", "1", "t", "yes"})
_FALSE = frozenset({"false", "0", "f", "no", ""})
_HOW = "send the forma JSON that `svc eval --output-consumer machine` prints"


async def read_submission(request: Request) -> ApplyRequest | DestroyRequest:
    form = await _form(request)
    try:
        unknown = sorted(set(form.keys()) - set(FORM_FIELDS))
        if unknown:
            raise bad_request(f"unknown form field(s) {', '.join(unknown)}; the fields are {', '.join(FORM_FIELDS)}")
        command = _text(form, "command")
        if command == "apply":
            return await _apply(form)
        if command == "destroy":
            return await _destroy(form)
        if command is None:
            raise bad_request("the command form field is required: apply or destroy")
        raise bad_request(f"the command form field must be apply or destroy, not {command!r}")
    finally:
        await form.close()


async def _form(request: Request) -> FormData:
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise bad_request("POST /commands takes multipart/form-data (fields command, mode, simulate, force, query, "
                          f"on-dependents and the file part forma.json), not {content_type or 'no content type'}")
    try:
        return await request.form(max_files=1, max_fields=len(FORM_FIELDS))
    except StarletteHTTPException as error:  # Starlette reports a malformed body this way
        raise bad_request(f"malformed multipart body: {error.detail}") from None


async def _apply(form: FormData) -> ApplyRequest:
    # Other clients may send every field on every command: only a value that changes the meaning is refused.
    if (_text(form, "query") or "").strip():
        raise bad_request("the query form field belongs to destroy; apply takes the forma in the file field")
    mode = _text(form, "mode")
    if mode not in ("reconcile", "patch"):
        raise bad_request("the mode form field is required for apply and must be reconcile or patch"
                          + ("" if mode is None else f", not {mode!r}"))
    content = await _forma_content(form)
    if content is None:
        raise bad_request(f"the file form field is required for apply: {_HOW}")
    forma = await _parsed(content)
    simulate = _flag(form, "simulate")
    seal_secrets = _seal_secrets(form, simulate)
    return ApplyRequest(forma=forma, mode=mode, simulate=simulate, force=_flag(form, "force"),
                        expected_plan=_expected_plan(form), seal_secrets=seal_secrets, sealed=may_hold_sealed(content))


def may_hold_sealed(content: bytes) -> bool:
    """Whether the forma JSON may hold a sealed secret (``{"$sealed": …}``, a saved plan's): not when the text
    has no such key, written out or with an escape in it. Opening the secrets walks every resource's properties
    (0.3 s at 100,000 resources, before the command can start); a forma Pkl rendered has none."""
    return b'"$sealed"' in content or b"\\u" in content


async def _destroy(form: FormData) -> DestroyRequest:
    if _flag(form, "force"):
        raise bad_request("the force form field belongs to apply; destroy has on-dependents instead")
    on_dependents = _text(form, "on-dependents") or "abort"
    if on_dependents not in ("abort", "cascade"):
        raise bad_request(f"the on-dependents form field must be abort or cascade, not {on_dependents!r}")
    query = (_text(form, "query") or "").strip()
    forma = await _forma(form)
    if query and forma is not None:
        raise bad_request("give destroy either a query or a file, not both")
    if not query and forma is None:
        raise bad_request(f"destroy needs the query form field or the file form field ({_HOW})")
    if query:
        try:
            parse_query(query, DESTROY_FIELDS)
        except InvalidQueryError as error:
            raise HttpProblem(400, {"error": "InvalidQueryError", "data": {"Reason": str(error)},
                                    "message": str(error)}) from None
    mode: Literal["abort", "cascade"] = "cascade" if on_dependents == "cascade" else "abort"
    simulate = _flag(form, "simulate")
    seal_secrets = _seal_secrets(form, simulate)
    if seal_secrets and forma is None:
        raise bad_request("the seal-secrets form field asks for the forma to save with the plan; a destroy by query "
                          "has none")
    return DestroyRequest(forma=forma, query=query or None, simulate=simulate, on_dependents=mode,
                          expected_plan=_expected_plan(form), seal_secrets=seal_secrets)


def _seal_secrets(form: FormData, simulate: bool) -> bool:
    seal_secrets = _flag(form, "seal-secrets")
    if seal_secrets and not simulate:
        raise bad_request("the seal-secrets form field asks a simulation for the forma to save with its plan; "
                          "send it with simulate=true")
    return seal_secrets


def _expected_plan(form: FormData) -> dict[str, str] | None:
    """The ``expected-plan`` field: the ``Fingerprint`` of a simulation's answer, as JSON (an object of strings)."""
    text = _text(form, "expected-plan")
    if text is None:
        return None
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        document = None
    if not isinstance(document, dict) or not all(isinstance(v, str) for v in document.values()):
        raise bad_request("the expected-plan form field must be the Fingerprint a simulation answered (a JSON "
                          "object of strings)")
    return document


def _text(form: FormData, field: str) -> str | None:
    values = form.getlist(field)
    if len(values) > 1:
        raise bad_request(f"the {field} form field is given {len(values)} times; give it once")
    if not values:
        return None
    value = values[0]
    if not isinstance(value, str):
        raise bad_request(f"the {field} form field must be a plain value, not a file")
    return value


def _flag(form: FormData, field: str) -> bool:
    value = (_text(form, field) or "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise bad_request(f"the {field} form field must be true or false, not {value!r}")


async def _forma(form: FormData) -> Forma | None:
    content = await _forma_content(form)
    return await _parsed(content) if content is not None else None


async def _parsed(content: bytes) -> Forma:
    # On a worker thread: parsing and validating 100,000 resources takes ~0.7 s, during which the event loop would
    # answer nothing (other commands' plugin answers, status polls).
    return await asyncio.to_thread(parse_forma, content)


async def _forma_content(form: FormData) -> bytes | None:
    values = form.getlist("file")
    if not values:
        return None
    if len(values) > 1:
        raise bad_request("the file form field is given more than once; send one forma.json")
    part = values[0]
    if isinstance(part, UploadFile):
        if part.size is not None and part.size > MAX_FORMA_BYTES:
            raise HttpProblem(413, {"message": f"forma.json is larger than {MAX_FORMA_BYTES // 2**20} MiB"})
        content = await part.read()
    else:  # a client that sent the JSON as a plain field: the same content, so accept it
        content = part.encode()
    return content


def parse_forma(content: bytes) -> Forma:
    """The uploaded forma JSON, validated against the forma's shape; a 400 naming the problem otherwise."""
    if not content.strip():
        raise bad_request(f"the file forma.json is empty: {_HOW}")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise bad_request("the file forma.json is not UTF-8 text") from None
    try:
        # orjson first (a fifth of the standard library's time: a 1,000-resource upload took 25 ms); what it
        # refuses is read again by ``json``, which also takes NaN and integers beyond 64 bits and whose messages
        # say where the text is wrong.
        document = jsontext.loads(text)
    except ValueError:
        document = _parsed_by_the_standard_library(text)
    if not isinstance(document, dict):
        raise bad_request(f"the file forma.json must hold a JSON object with {', '.join(FORMA_KEYS)}, "
                          f"not {_json_type(document)}")
    unknown = sorted(set(document) - {*FORMA_KEYS, LISTED_SCHEMAS})  # the CLI sends the latter (Forma.to_wire)
    if unknown:
        raise bad_request(f"the file forma.json has unknown top-level field(s) {', '.join(unknown)}; "
                          f"a forma has {', '.join(FORMA_KEYS)}")
    try:
        return Forma.model_validate(document)
    except ValidationError as error:
        raise bad_request(f"the file forma.json does not have the shape of a forma: {_describe(error, document)}"
                          ) from None


def _parsed_by_the_standard_library(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise bad_request(f"the file forma.json is not valid JSON: {error.msg} at line {error.lineno} "
                          f"column {error.colno}; {_HOW}") from None
    except RecursionError:
        raise bad_request("the file forma.json is nested too deeply") from None


def _describe(error: ValidationError, document: dict[str, Any]) -> str:
    problems = []
    for item in error.errors()[:3]:
        where = _location(item["loc"], document)
        problems.append(f"{where}: {item['msg']}" if where else item["msg"])
    more = error.error_count() - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def _location(loc: tuple[Any, ...], document: dict[str, Any]) -> str:
    """``("Resources", 2, "Type")`` → ``Resources[2] (label "web").Type``: the label finds it in the forma."""
    out = ""
    node: Any = document
    for index, step in enumerate(loc):
        if isinstance(step, int):
            out += f"[{step}]"
            node = node[step] if isinstance(node, list) and step < len(node) else None
            label = node.get("Label") if isinstance(node, dict) and index < len(loc) - 1 else None
            if isinstance(label, str):
                out += f" (label {label!r})"
        else:
            out += f".{step}" if out else str(step)
            node = node.get(step) if isinstance(node, dict) else None
    return out


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null"

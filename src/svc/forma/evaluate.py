"""Evaluating a forma: its CLI properties, or the whole forma with their values."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from svc import jsontext
from svc.forma.descriptor_cache import CACHED_CLASSES, DescriptorCache
from svc.forma.errors import FormaError, from_pkl_error
from svc.forma.evaluation_cache import COMMAND_PROPERTY, EvaluationCache, Sources, cache_enabled
from svc.model import wire
from svc.model.forma_document import LISTED_SCHEMAS, Property
from svc.pkl import EvaluationRequest, PklError, bundled_modules, shared_server
from svc.pkl.ext import ext_readers
from svc.pkl.packages import PackageEnvironment
from svc.pkl.projects import PklProjectError, environment_for
from svc.pkl.slices import joined, output_in_slices

if TYPE_CHECKING:
    from svc.model.forma import Forma

PROPERTIES_MODE = "properties"
SCHEMA_KEYS = "SchemaKeys"  # each listed descriptor's class, for the descriptor cache (``@svc/forma.pkl``)
_NOT_A_FORMA = '{path} is not a forma; start it with: amends "@svc/forma.pkl"'


@dataclass(frozen=True)
class RenderedForma:
    """A forma as Pkl rendered it, every descriptor in place: the forma JSON in the shape the agent reads (each
    resource class's descriptor listed once in ``Schemas``, each resource naming its own by ``SchemaIndex``).

    A command sends it as it is, and the agent validates what it is sent (``svc.api.submission``); the model is
    built only where the CLI reads the resources (``validated``: ``svc eval``). At 100,000 resources validating
    it in the CLI, then rendering the model back to JSON for the upload, took 1.3 s before the command went out,
    and the agent did the same again."""

    path: Path
    document: dict[str, Any]

    @cached_property
    def properties(self) -> dict[str, Property]:
        """The forma's CLI properties, by name: each becomes the flag ``--<flag>``."""
        return _properties(self.path, self.document)

    def to_wire(self) -> dict[str, Any]:
        """The forma JSON a command sends (``Forma.to_wire``'s shape)."""
        return {key: value for key, value in self.document.items() if key != SCHEMA_KEYS}

    def validated(self) -> Forma:
        """The forma as the model the agent plans from (``document`` is left as it was)."""
        from pydantic import ValidationError  # only ``svc eval`` reads the model: a plan or apply sends the JSON

        from svc.model.forma import Forma

        try:
            return Forma.model_validate(self.to_wire())
        except ValidationError as exc:  # Pkl rendered the forma; a mismatch here is svc's own bug
            raise FormaError(f"{self.path}: the evaluated forma does not have the expected shape: {exc}") from exc


def evaluate_document(path: Path, properties: Mapping[str, str]) -> dict[str, Any]:
    """The JSON document the forma at ``path`` renders, with ``properties`` as its ``prop:`` values."""
    return _render(path, _environment(path), properties)


def _environment(path: Path) -> PackageEnvironment:
    if not path.is_file():
        raise FormaError(f"forma file {path} does not exist")
    try:
        return environment_for(path)
    except PklProjectError as exc:
        raise FormaError(str(exc)) from exc


def _render(path: Path, environment: PackageEnvironment, properties: Mapping[str, str],
            sources: Sources | None = None) -> dict[str, Any]:
    """``sources``: what the forma is made of, read before (``EvaluationCache.sources``): Pkl evaluates the text
    read then, in an evaluator kept from an earlier evaluation of the same other files where it can."""
    forma_text, key = (sources.forma_text, sources.evaluator_key) if sources is not None else (None, None)
    request = EvaluationRequest(
        module_uri=path.resolve().as_uri(),
        readers=[bundled_modules(), *environment.readers],
        resource_readers=ext_readers(path.resolve().parent),
        properties=dict(properties),
        project=environment.project,
        module_text=forma_text if key is not None else None,
        reuse_key=key,
    )
    try:
        answer = shared_server().converse(request, output_in_slices("Resources"))
    except PklError as exc:
        raise from_pkl_error(exc) from exc
    try:
        document = joined(answer)
    except (ValueError, TypeError) as exc:
        raise FormaError(_NOT_A_FORMA.format(path=path)) from exc
    if not isinstance(document, dict):
        raise FormaError(_NOT_A_FORMA.format(path=path))
    return document


def forma_properties(path: Path) -> dict[str, Property]:
    """The forma's CLI properties, by name: each becomes the flag ``--<flag>``."""
    return _properties(path, evaluate_document(path, {COMMAND_PROPERTY: "eval", "$mode": PROPERTIES_MODE}))


def _properties(path: Path, document: dict[str, Any]) -> dict[str, Property]:
    try:
        return wire.decode(dict[str, Property], document.get("Properties", {}))  # type: ignore[no-any-return]
    except (wire.WireError, AttributeError) as exc:
        raise FormaError(_NOT_A_FORMA.format(path=path)) from exc


def evaluate_forma(
    path: Path, *, command: str = "eval", mode: str = "reconcile", flags: Mapping[str, str] | None = None
) -> Forma:
    """Evaluates and validates the forma at ``path`` (``render_forma``, then ``RenderedForma.validated``)."""
    return render_forma(path, command=command, mode=mode, flags=flags).validated()


def render_forma(
    path: Path, *, command: str = "eval", mode: str = "reconcile", flags: Mapping[str, str] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> RenderedForma:
    """Evaluates the forma at ``path``; ``flags`` are the CLI property values. A forma evaluated before with the
    same values, whose files have not changed since, is not evaluated again (``evaluation_cache``). ``meanwhile``
    is called as Pkl is about to evaluate (never when a kept evaluation serves): what the caller can do while Pkl
    works."""
    if not path.is_file():
        raise FormaError(f"forma file {path} does not exist")
    properties = {**(flags or {}), COMMAND_PROPERTY: command, "$mode": mode}
    cache = EvaluationCache(path, properties) if cache_enabled() else None
    outdated = cache is None or cache.outdated_by_forma()
    if outdated:
        shared_server().start()  # Pkl boots while the files are hashed
    # An edited forma's kept evaluation is not read: reading it (the forma JSON of 40 AWS types is 0.5 MB) only to
    # find the forma's digest changed took ~1.5 ms of each edit's evaluation.
    document = cache.lookup() if cache is not None and not outdated else None
    if document is not None:
        return RenderedForma(path, document)
    environment = _environment(path)
    sources = cache.sources(environment.project) if cache is not None else None
    descriptors = DescriptorCache.open(environment.project)
    if meanwhile is not None:
        meanwhile()
    document = _render(path, environment, {**properties, CACHED_CLASSES: "\n".join(descriptors.offered())}, sources)
    if "Resources" not in document or not isinstance(document.get(LISTED_SCHEMAS, []), list):
        raise FormaError(_NOT_A_FORMA.format(path=path))
    _with_kept_descriptors(document, descriptors)
    descriptors.save()
    if cache is not None and sources is not None:
        cache.store_meanwhile(document, sources)
    return RenderedForma(path, document)


def _with_kept_descriptors(document: dict[str, Any], descriptors: DescriptorCache) -> None:
    """``@svc/forma.pkl`` lists each resource class's descriptor once (``Schemas``): null for a class whose
    descriptor ``descriptors`` kept, which is put in its place; the others are kept for the next evaluation."""
    keys = document.get(SCHEMA_KEYS) or ()
    schemas = document.get(LISTED_SCHEMAS) or ()
    for index, (key, schema) in enumerate(zip(keys, schemas, strict=True)):
        if schema is None:
            schemas[index] = jsontext.loads(descriptors.schema(key))
        else:
            descriptors.keep(key, schema)

"""The shapes every layer shares: wire shapes, datastore records, value envelopes, schemas, formas, states.

A leaf: it needs only pydantic and the standard library and imports no other ``svc`` package, so that
every layer may import it (DESIGN.md, "Architecture") and importing it costs no SQL driver, HTTP server or
Pkl evaluator.
"""

"""What the CLI server imports before it forks its workers (``svc.cli.server.preload``): what a command imports on
its way is imported once, not by every worker (a module imported in a worker costs every command its import: ~1 ms
for ``importlib.readers``, which reading the config's bundled modules needs)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def test_reading_the_kept_config_imports_nothing_more_after_the_preload(tmp_path: Path) -> None:
    config = tmp_path / "svc.conf.pkl"
    config.write_text('amends "svc:/Config.pkl"\ncli { api { url = "http://localhost"; port = 49999 } }\n')
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from svc.cli import server
        from svc.config.loader import cli_config
        server.preload()
        before = set(sys.modules)
        assert cli_config(Path({str(config)!r})).api.port == 49999
        print(sorted(set(sys.modules) - before))
    """)
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr  # the config read with Pkl, and kept
    kept = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.strip() == "[]"


def test_the_forma_model_is_built_before_the_workers_fork() -> None:
    """``svc eval`` validates the rendered forma with the forma model, whose validator and serializer pydantic builds on
    first use (``defer_build``): built in each worker, they cost every ``svc eval`` ~5 ms."""
    script = textwrap.dedent("""
        import pydantic_core
        from svc.cli import server
        from svc.model.forma import Forma
        server.preload()
        print(isinstance(Forma.__pydantic_validator__, pydantic_core.SchemaValidator),
              isinstance(Forma.__pydantic_serializer__, pydantic_core.SchemaSerializer))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]

"""Builds the native ``svc`` launcher (``native/launcher.c``) for the installation whose Python runs this script, and
puts it in place of the console script pip wrote: a command then reaches a warm CLI server without starting Python
(10 to 15 ms sooner). The console script itself moves to ``libexec/svc/svc``, which the launcher becomes for every
command it does not hand off. Without a C compiler, or if the build fails, pip's console script stays: svc works
the same, each command starting Python first.

Run by ``scripts/install.sh`` after pip; again whenever pip rewrote ``bin/svc`` or the source, the interpreter or
the import path changed (the launcher carries the key of the servers it may use: ``svc.handoff.identity``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "native" / "launcher.c"
COMPILE = ["-std=c11", "-O2", "-Wall", "-Wextra"]
# What the console script runs, as pip writes it; in libexec/svc so that its name is still ``svc`` (Click names the
# program after it) and no module beside it shadows one of svc's.
CONSOLE_SCRIPT = """#!{python}
import sys
from svc.launcher import run
if __name__ == "__main__":
    sys.exit(run())
"""


def c_string(text: str) -> str:
    """``text`` as a C string literal: its UTF-8 bytes, all but plain printable ASCII in octal."""
    return '"' + "".join(chr(byte) if 32 <= byte < 127 and chr(byte) not in '"\\?' else f"\\{byte:03o}"
                         for byte in os.fsencode(text)) + '"'


def server_key(python: str) -> tuple[str, str]:
    """The identity of this installation's servers and their socket's name, as its console script computes them in
    an environment without ``PYTHON*`` variables (the launcher leaves any other to the console script)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}
    program = ("import os, sys; from svc.handoff import identity, server_base; key = identity(); "
               "sys.stdout.write(key + '\\0' + os.path.basename(server_base('/', key)) + '.sock')")
    written = subprocess.run([python, "-c", program], env=environment, capture_output=True, text=True, check=True)
    key, socket_name = written.stdout.split("\0")
    return key, socket_name


def definitions(key: str, socket_name: str, fallback: Path) -> str:
    """The installation's part of the launcher: what ``native/launcher.c`` asks to be defined."""
    return (f"#define SVC_KEY {c_string(key)}\n#define SVC_SOCKET_NAME {c_string(socket_name)}\n"
            f"#define SVC_FALLBACK {c_string(str(fallback))}\n")


def compile_launcher(compiler: str, defined: str, *options: str) -> bytes:
    """The launcher built with ``defined`` (``definitions``), as an executable's bytes."""
    with tempfile.TemporaryDirectory() as scratch:
        header = Path(scratch, "installation.h")
        header.write_text(defined)
        built = Path(scratch, "svc")
        subprocess.run([compiler, *COMPILE, *options, "-include", str(header), "-o", str(built), str(SOURCE)],
                       check=True)
        return built.read_bytes()


def build(venv: Path, compiler: str) -> str:
    """Builds and installs the launcher when anything it is made of changed; says what it did."""
    python = str(venv / "bin" / "python")
    fallback = venv / "libexec" / "svc" / "svc"
    defined = definitions(*server_key(python), fallback)
    script = CONSOLE_SCRIPT.format(python=python)
    launcher = venv / "bin" / "svc"
    stamp = venv / ".svc-install" / "launcher"
    recipe = hashlib.sha256("\0".join([SOURCE.read_text(), defined, script, compiler, *COMPILE]).encode())
    if stamp.is_file() and stamp.read_text() == f"{recipe.hexdigest()} {_digest(launcher)}" and fallback.is_file():
        return "installed already"
    fallback.parent.mkdir(parents=True, exist_ok=True)
    _replace(fallback, script.encode())
    _replace(launcher, compile_launcher(compiler, defined))
    stamp.write_text(f"{recipe.hexdigest()} {_digest(launcher)}")
    return "built"


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _replace(path: Path, content: bytes) -> None:
    """Written beside ``path`` and renamed over it: a command started meanwhile finds the old file or the new one
    (and two installs at once each rename a whole file of their own)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    partial.write_bytes(content)
    partial.chmod(0o755)
    partial.replace(path)


def main() -> int:
    venv = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sys.executable).parent.parent
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print("==> no C compiler (cc): svc starts through Python's console script, ~10 ms more a command")
        return 0
    try:
        print(f"==> native svc launcher: {build(venv, compiler)}")
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"==> native svc launcher not built ({error}): svc starts through Python's console script")
    return 0


if __name__ == "__main__":
    sys.exit(main())

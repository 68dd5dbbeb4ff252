"""The ``svc`` command line."""

from __future__ import annotations

import functools
import gc
import os
import sys
from typing import Annotated, Any

import typer

from svc import __version__
from svc.cli.lazy import LazyCommand, lazy_group

# Each command's module is imported only when that command runs (``svc.cli.lazy``): ``svc --version``, ``--help``
# and the short commands start without the HTTP client, Pkl, the forma model or pip. The summaries are what
# ``svc --help`` lists; ``tests/unit/test_cli_start.py`` checks them against the commands' own help.


def _upgrade(app: typer.Typer) -> None:
    from svc.cli.upgrade import upgrade

    app.command("upgrade")(upgrade)


def _eval(app: typer.Typer) -> None:
    from svc.cli.forma_commands import PROPERTY_FLAGS, FormaCommand, eval_command

    app.command("eval", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(eval_command)


def _plan(app: typer.Typer) -> None:
    from svc.cli.forma_commands import PROPERTY_FLAGS, FormaCommand
    from svc.cli.plan_commands import plan_command

    app.command("plan", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(plan_command)


def _apply_and_destroy(app: typer.Typer) -> None:
    from svc.cli.apply_commands import apply_command, destroy_command
    from svc.cli.forma_commands import PROPERTY_FLAGS, FormaCommand

    app.command("apply", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(apply_command)
    app.command("destroy", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(destroy_command)


def _command_and_cancel(app: typer.Typer) -> None:
    from svc.cli.command_commands import cancel_command, command_app

    app.command("cancel")(cancel_command)
    app.add_typer(command_app, name="command")


def _extract(app: typer.Typer) -> None:
    from svc.cli.extract_commands import extract_command

    app.command("extract")(extract_command)


def _jobs(app: typer.Typer) -> None:
    from svc.cli.job_commands import discover_command, sync_command, ttl_app

    app.command("sync")(sync_command)
    app.command("discover")(discover_command)
    app.add_typer(ttl_app, name="ttl")


def _drift_and_reconcile(app: typer.Typer) -> None:
    from svc.cli.drift_commands import drift_command, reconcile_command

    app.command("drift")(drift_command)
    app.command("reconcile")(reconcile_command)


def _agent_and_status(app: typer.Typer) -> None:
    from svc.cli.agent_commands import agent_app, status_app

    app.add_typer(agent_app, name="agent")
    app.add_typer(status_app, name="status")


def _deploy(app: typer.Typer) -> None:
    from svc.cli.deploy_commands import deploy_app

    app.add_typer(deploy_app, name="deploy")


def _project(app: typer.Typer) -> None:
    from svc.cli.forma_commands import project_app

    app.add_typer(project_app, name="project")


def _inventory(app: typer.Typer) -> None:
    from svc.cli.inventory_commands import inventory_app

    app.add_typer(inventory_app, name="inventory")


def _plugin(app: typer.Typer) -> None:
    from svc.cli.plugin_commands import plugin_app

    app.add_typer(plugin_app, name="plugin")


COMMANDS = {
    "upgrade": LazyCommand("Install svc VERSION, and the plugins released with it, into this environment (the CLI "
                           "must match the agent).", _upgrade),
    "eval": LazyCommand("Evaluate a forma and print the forma JSON that apply would send; the forma's properties "
                        "are flags.", _eval),
    "plan": LazyCommand("Show what applying a forma, or destroying it (--destroy), would change, as a diff; change "
                        "nothing.", _plan),
    "apply": LazyCommand("Apply a forma: simulate, show the plan, confirm, then follow the changes until done. Given "
                         "a saved plan\n(svc plan -o), apply exactly it, or nothing if the inventory moved since it "
                         "was made.", _apply_and_destroy),
    "destroy": LazyCommand("Destroy the resources of a forma, or those matching --query.", _apply_and_destroy),
    "cancel": LazyCommand("Cancel in-progress commands: those matching --query, else this client's latest.",
                          _command_and_cancel),
    "extract": LazyCommand("Write the resources matching a query as a forma that applies with no changes.", _extract),
    "sync": LazyCommand("Synchronize now and print the resources whose stored state changed outside svc.", _jobs),
    "drift": LazyCommand("Show what changed outside svc since each stack's last reconcile, as old → new.",
                         _drift_and_reconcile),
    "discover": LazyCommand("Run discovery now and print the resources it found that are new.", _jobs),
    "reconcile": LazyCommand("Run the stack's auto-reconcile now, reverting what changed outside svc, and follow it.",
                             _drift_and_reconcile),
    "agent": LazyCommand("Run and inspect the agent.", _agent_and_status),
    "status": LazyCommand("Check the agent.", _agent_and_status),
    "deploy": LazyCommand("Update or roll back the agent's container service (ECS; credentials from the standard AWS "
                          "chain).", _deploy),
    "project": LazyCommand("Create and manage Pkl projects of formas.", _project),
    "command": LazyCommand("Follow the commands the agent runs.", _command_and_cancel),
    "inventory": LazyCommand("What the agent manages and has discovered.", _inventory),
    "plugin": LazyCommand("Resource plugins: list the installed ones; install, update, uninstall and search through "
                          "the agent; init and test your own.", _plugin),
    "ttl": LazyCommand("Stack TTL policies.", _jobs),
}

app = typer.Typer(
    name="svc",
    help="svc: infrastructure as code, kept true to reality by an agent.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    cls=lazy_group(COMMANDS),
)

auth_app = typer.Typer(help="Authentication helpers.", no_args_is_help=True)
app.add_typer(auth_app, name="auth")


@auth_app.command("hash-password")
def hash_password_command(
    password: Annotated[str, typer.Option(prompt=True, hide_input=True, confirmation_prompt=True,
                                          help="The password to hash (prompted when not given).")],
) -> None:
    """Print the bcrypt hash of a password, for agent.auth.authorizedUsers."""
    from svc.config.passwords import hash_password

    typer.echo(hash_password(password))


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"svc version {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-v", callback=_version_callback, is_eager=True,
                                          help="Print the version and exit.")] = False,
    api_url: Annotated[str | None, typer.Option(
        "--api-url", metavar="URL", help="The agent to talk to (host or http(s)://host:port); overrides "
        "SVC_API_URL and the config's cli.api.")] = None,
) -> None:
    if api_url:
        os.environ["SVC_API_URL"] = api_url  # one way to override the address: the config loader reads it


def _is_user_error(exc: Exception) -> bool:
    """A failure the user fixes (bad input, config, agent answer, Pkl): printed as one line, no traceback. The
    error classes are imported here, not at start: a command that raised one has imported its module already."""
    from svc.agent import AgentError
    from svc.cli.errors import CliError
    from svc.config import ConfigError
    from svc.pkl import PklBinaryError, PklServerError

    return isinstance(exc, (CliError, ConfigError, AgentError, PklBinaryError, PklServerError))


@functools.cache
def click_command() -> Any:
    """The Click command Typer makes of ``app`` (its lazy commands loaded as they run): made once per process, so
    that the CLI server (``svc.cli.server``) makes it, with every command loaded, for all the commands it runs."""
    return typer.main.get_command(app)


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; every failure is one ``Error: …`` on stderr and exit code 1."""
    command = click_command()
    try:
        code = command.main(args=argv, prog_name="svc", standalone_mode=False)
    except typer.Abort:
        typer.echo("Error: aborted", err=True)
        return 1
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument, bad value
        typer.echo(f"Error: {getattr(exc, 'format_message', exc.__str__)()}", err=True)
        if (ctx := getattr(exc, "ctx", None)) is not None:
            typer.echo(f"Run '{ctx.command_path} --help' for usage.", err=True)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not _is_user_error(exc):
            raise
        typer.echo(f"Error: {exc}", err=True)
        return 1
    finally:
        _stop_pkl_server()
    return code if isinstance(code, int) else 0


def _stop_pkl_server() -> None:
    """Ends the Pkl server a command started (to read the CLI config, to evaluate a forma) rather than leave it
    to exit when it sees its stdin close: the command's cost then includes it, as measured by ``time`` and
    ``bench/cli_start.py``, and no server outlives the CLI. Looked up, not imported: most commands never load
    ``svc.pkl``."""
    server = sys.modules.get("svc.pkl.server")
    if server is not None:
        server.stop_shared_server()


def run() -> None:
    """The console-script entry point."""
    # The collector stays off while the command's modules are imported: they are never garbage, yet a young
    # collection among them walked every object made since the interpreter started, 10 to 20 ms of a short
    # command's CPU. The group turns it back on with what they made frozen (``LazyGroup.load``).
    gc.disable()
    # Pydantic (which `svc eval`, the policy views and `svc agent start` still use; a plan or an apply does not
    # import it) looks for plugins of its own on the first validation: a scan of every installed distribution's
    # entry points, 10 to 15 ms of a short command's CPU for plugins a CLI has no use for. A user's own setting
    # of the variable stands.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    code = main()
    # The interpreter's exit collects every object left, the imports' modules, classes and schemas among them: a
    # tenth of a short command's CPU. Frozen, they are left to the process's end; finalizers and exit handlers
    # still run.
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()

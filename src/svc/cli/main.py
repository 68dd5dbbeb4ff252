"""The ``svc`` command line."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from svc import __version__
from svc.agent import AgentError
from svc.cli.agent_commands import agent_app, status_app
from svc.cli.apply_commands import apply_command, destroy_command
from svc.cli.command_commands import cancel_command, command_app, status_command
from svc.cli.deploy_commands import deploy_app
from svc.cli.drift_commands import drift_command, reconcile_command
from svc.cli.errors import CliError
from svc.cli.extract_commands import extract_command
from svc.cli.forma_commands import PROPERTY_FLAGS, FormaCommand, eval_command, project_app
from svc.cli.inventory_commands import inventory_app
from svc.cli.job_commands import discover_command, sync_command, ttl_app
from svc.cli.plan_commands import plan_command
from svc.cli.plugin_commands import plugin_app
from svc.cli.upgrade import upgrade
from svc.config import ConfigError
from svc.pkl import PklBinaryError, PklServerError

app = typer.Typer(
    name="svc",
    help="svc: infrastructure as code, kept true to reality by an agent.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
app.add_typer(agent_app, name="agent")
app.add_typer(status_app, name="status")
app.add_typer(deploy_app, name="deploy")
app.command("upgrade")(upgrade)
app.command("eval", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(eval_command)
app.add_typer(project_app, name="project")
app.command("plan", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(plan_command)
app.command("apply", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(apply_command)
app.command("destroy", cls=FormaCommand, context_settings=PROPERTY_FLAGS)(destroy_command)
app.add_typer(command_app, name="command")
status_app.command("command", deprecated=True)(status_command)
app.command("cancel")(cancel_command)
app.add_typer(inventory_app, name="inventory")
app.command("extract")(extract_command)
app.add_typer(plugin_app, name="plugin")
app.command("sync")(sync_command)
app.command("drift")(drift_command)
app.command("discover")(discover_command)
app.command("reconcile")(reconcile_command)
app.add_typer(ttl_app, name="ttl")

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


_USER_ERRORS = (CliError, ConfigError, AgentError, PklBinaryError, PklServerError)


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; every failure is one ``Error: …`` on stderr and exit code 1."""
    command = typer.main.get_command(app)
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
    except _USER_ERRORS as exc:
        typer.echo(f"Error: {exc}", err=True)
        return 1
    except KeyboardInterrupt:
        return 130
    return code if isinstance(code, int) else 0


def run() -> None:
    """The console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()

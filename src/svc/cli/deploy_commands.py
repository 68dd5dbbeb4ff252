"""``svc deploy update`` and ``svc deploy rollback``: roll the agent's container service (ECS)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit

if TYPE_CHECKING:
    from svc.deploy.operations import Outcome

deploy_app = typer.Typer(
    help="Update or roll back the agent's container service (ECS; credentials from the standard AWS chain).",
    no_args_is_help=True,
)

ServiceOption = Annotated[str, typer.Option("--service", help="The ECS service that runs the agent.")]
ClusterOption = Annotated[str | None, typer.Option(
    "--cluster", help="The service's cluster; leave out for the account's default cluster (express shape).")]
ContainerOption = Annotated[str | None, typer.Option(
    "--container", help="The agent's container, when the task has several (default: the one on port 49684).")]
RegionOption = Annotated[str | None, typer.Option("--region", help="AWS region (default: the standard chain's).")]
EndpointOption = Annotated[str | None, typer.Option(
    "--endpoint-url", help="ECS endpoint to use instead of the region's (private endpoints, tests).")]
IntervalOption = Annotated[float, typer.Option(
    "--poll-interval", min=0.01, help="Seconds between checks while waiting for the service to be stable.")]
TimeoutOption = Annotated[float, typer.Option(
    "--timeout", min=1, help="Seconds to wait for the service to be stable before giving up.")]


def _run(action: Literal["update", "rollback"], service: str, cluster: str | None, region: str | None,
         endpoint_url: str | None, interval: float, timeout: float, **arguments: Any) -> Outcome:
    # Imported here: boto3 takes a noticeable moment to import, and only these commands need it.
    from svc.deploy import DeployError

    try:
        from svc.deploy import operations
        from svc.deploy.ecs import Ecs, ServiceRef
    except ModuleNotFoundError as exc:
        raise CliError(f"svc deploy needs {exc.name}, which is not installed; run: pip install boto3") from None

    # Progress goes to stderr in both modes, so machine mode keeps stdout to its one document.
    wait = operations.WaitSettings(interval, timeout, lambda line: typer.echo(line, err=True))
    operation = operations.update if action == "update" else operations.rollback
    try:
        return operation(Ecs(ServiceRef(service, cluster), region, endpoint_url), wait=wait, **arguments)
    except DeployError as exc:
        raise CliError(str(exc)) from None


def _render(outcome: Outcome) -> None:
    verb = "Updated" if outcome.action == "update" else "Rolled back"
    console.print(f"[green]{verb}[/green] service {outcome.service} (cluster {outcome.cluster}): it is stable on "
                  f"{outcome.task_definition.rsplit('/', 1)[-1]} with {outcome.image}.",
                  highlight=False, soft_wrap=True)
    if outcome.upgrade_command:
        console.print("The CLI must match the agent exactly; on every client machine run:\n"
                      f"  {outcome.upgrade_command}", highlight=False, soft_wrap=True)
    else:
        console.print("The image tag names no version: read it with `svc status agent`, then run "
                      "`svc upgrade --version <version>` on every client machine.", highlight=False, soft_wrap=True)


@deploy_app.command("update")
def deploy_update(
    image: Annotated[str, typer.Option("--image", help="The new agent image, pinned by tag, e.g. registry/svc:1.2.3.")],
    service: ServiceOption,
    cluster: ClusterOption = None,
    container: ContainerOption = None,
    region: RegionOption = None,
    endpoint_url: EndpointOption = None,
    poll_interval: IntervalOption = 15.0,
    timeout: TimeoutOption = 1200.0,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
    change_variant: Annotated[bool, typer.Option(
        "--change-variant", help="Allow moving to another image variant (e.g. from …-rds-ca to a plain tag).")] = False,
) -> None:
    """Roll the agent to a new image and wait until the service is stable.

    Registers a task-definition revision that differs from the current one only in the image, updates
    the service to it with a forced new deployment, and prints the `svc upgrade` the clients need.
    The image keeps the running one's variant (a tag suffix such as -rds-ca) unless --change-variant.
    """
    outcome = _run("update", service, cluster, region, endpoint_url, poll_interval, timeout,
                   image=image, container=container, change_variant=change_variant)
    emit(outcome.document(), output_consumer, output_schema, lambda _: _render(outcome))


@deploy_app.command("rollback")
def deploy_rollback(
    service: ServiceOption,
    cluster: ClusterOption = None,
    container: ContainerOption = None,
    region: RegionOption = None,
    endpoint_url: EndpointOption = None,
    poll_interval: IntervalOption = 15.0,
    timeout: TimeoutOption = 1200.0,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Return the service to its previous task-definition revision and wait until it is stable.

    Lists the family's recent revisions (newest first) and updates the service to the one before its
    current revision with a forced new deployment.
    """
    outcome = _run("rollback", service, cluster, region, endpoint_url, poll_interval, timeout, container=container)
    emit(outcome.document(), output_consumer, output_schema, lambda _: _render(outcome))

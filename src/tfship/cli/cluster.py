"""``tfship cluster``: helpers for running ``tfship train`` on a cluster of one's own
(``tfship cluster tf-config`` prints one task's TF_CONFIG)."""

from __future__ import annotations

import json

import click


def _address(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
    found = [v.strip() for v in (value or "").split(",") if v.strip()]
    for address in found:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise click.BadParameter(f"{address!r} is not host:port")
    return found


def _task(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, int]:
    kind, sep, index = value.partition(":")
    if not sep or not index.isdigit():
        raise click.BadParameter(f"{value!r}: expected TYPE:INDEX, e.g. worker:0")
    return kind, int(index)


@click.group()
def cluster() -> None:
    """Helpers for running `tfship train` on a cluster of your own."""


@cluster.command("tf-config")
@click.option("--chief", required=True, callback=_address, help="The chief's host:port.")
@click.option("--worker", default=None, callback=_address, help="Workers' host:port, comma-separated.")
@click.option("--ps", default=None, callback=_address, help="Parameter servers' host:port, comma-separated.")
@click.option(
    "--evaluator",
    is_flag=True,
    help="The cluster runs an evaluator task (it exports; the chief then does not).",
)
@click.option(
    "--task",
    "task",
    required=True,
    callback=_task,
    help="This task as TYPE:INDEX: chief:0, worker:N, ps:N or evaluator:0.",
)
def tf_config(
    chief: list[str], worker: list[str], ps: list[str], evaluator: bool, task: tuple[str, int]
) -> None:
    """Print the TF_CONFIG value of one task (export TF_CONFIG='...' before `tfship train`).

    \b
    Example:
      tfship cluster tf-config --chief h0:2222 --worker h1:2222,h2:2222 --ps h3:2222 --task worker:0
    """
    from tfship.trainer._cluster import make_tf_config

    if len(chief) != 1:
        raise click.BadParameter("give exactly one host:port", param_hint="--chief")
    if task[0] == "evaluator" and not evaluator:
        raise click.UsageError("--task evaluator:0 needs --evaluator (the other tasks need it too)")
    jobs = {"chief": chief, "worker": worker, "ps": ps}
    config = make_tf_config(jobs, task[0], task[1], evaluator=evaluator)
    click.echo(json.dumps(config))  # one line: what a launch script puts in TF_CONFIG

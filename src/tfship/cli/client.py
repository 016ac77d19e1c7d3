"""``tfship client``: call a TF Serving (or ``tfship serve``) server from the shell.

Each command is thin: options -> ``ServingClient`` call -> printed result. Inputs come from
JSON, JSONL, CSV or ``.npy`` files (or inline JSON); ``--json`` prints machine-readable output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tfship._output import echo_json
from tfship.cli._options import flag
from tfship.errors import InputError

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo
    from tfship.schema import Schema

_COMMON_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--server",
        "-s",
        default="127.0.0.1:8500",
        show_default=True,
        help="gRPC target HOST:PORT or unix:PATH (with --rest: http://HOST:PORT).",
    ),
    click.option("--model", "-m", required=True, help="Model name."),
    click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds per call."),
    click.option("--rest", is_flag=True, help="Use TF Serving's REST API instead of gRPC."),
    click.option("--ca-cert", type=click.Path(exists=True, dir_okay=False), help="TLS: CA (PEM)."),
    click.option("--client-cert", type=click.Path(exists=True, dir_okay=False), help="mTLS cert."),
    click.option("--client-key", type=click.Path(exists=True, dir_okay=False), help="mTLS key."),
    click.option("--server-name", help="TLS: name to expect in the server's certificate."),
    click.option("--header", "-H", "headers", multiple=True, help="Call metadata KEY=VALUE (repeatable)."),
    click.option("--json", "as_json", is_flag=True, help="Print JSON."),
]
_VERSION_OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--version", "-V", "version", type=click.IntRange(min=0), help="Version number."),
    click.option("--label", "-l", help="Version label (e.g. stable); not with --version."),
]


def _options(*groups: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def apply(func: Any) -> Any:
        for group in reversed(groups):
            for option in reversed(group):
                func = option(func)
        return func

    return apply


@click.group("client")
def client() -> None:
    """Call a TF Serving server: status, metadata, predict, classify, regress, wait."""


@contextmanager
def _connect(opts: Mapping[str, Any]) -> Iterator[Any]:
    tls = None
    if opts.get("ca_cert") or opts.get("client_cert") or opts.get("server_name"):
        from tfship.serve_client import TlsConfig

        tls = TlsConfig(
            ca_cert=opts.get("ca_cert"),
            client_cert=opts.get("client_cert"),
            client_key=opts.get("client_key"),
            server_name=opts.get("server_name"),
        )
    headers = _headers(opts.get("headers") or ())
    from tfship.serve_client import RestServingClient, ServingClient

    kind = RestServingClient if opts.get("rest") else ServingClient
    try:
        made = kind(opts["server"], timeout=opts["timeout"], tls=tls, headers=headers)
    except ValueError as exc:  # a target without a port, or a bad one
        raise click.BadParameter(str(exc), param_hint="--server") from None
    with made as connected:
        yield connected


def _headers(pairs: tuple[str, ...]) -> dict[str, str]:
    headers = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r}: expected KEY=VALUE", param_hint="--header")
        headers[key.strip()] = value
    return headers


def _check_version(version: int | None, label: str | None) -> None:
    if version is not None and label is not None:
        raise click.UsageError("give --version or --label, not both")


# ---------------------------------------------------------------------------------- status


@client.command("status")
@_options(_COMMON_OPTIONS)
@click.option("--version", "-V", "version", type=click.IntRange(min=0), help="One version only.")
@click.option("--label", "-l", "labels", multiple=True, help="Show the version this label names (repeat).")
def status_command(version: int | None, labels: tuple[str, ...], **opts: Any) -> None:
    """Show the state of each version of a model (newest first).

    Example: tfship client status --server 127.0.0.1:8500 --model penguins -l stable
    """
    with _connect(opts) as conn:
        found = conn.status(opts["model"], version=version, labels=list(labels))
    rows = [
        {
            "version": s.version,
            "state": s.state,
            "error_code": s.error_code,
            "error_message": s.error_message,
            "labels": list(s.labels),
        }
        for s in found
    ]
    if opts["as_json"]:
        echo_json({"model": opts["model"], "versions": rows})
        return
    click.echo(f"model {opts['model']}")
    for row in rows:
        error = "" if row["error_code"] == "OK" else f"  {row['error_code']}: {row['error_message']}"
        named = f"  labels: {', '.join(row['labels'])}" if row["labels"] else ""
        click.echo(f"  version {row['version']:<12} {row['state']}{error}{named}")


# -------------------------------------------------------------------------------- metadata


@client.command("metadata")
@_options(_COMMON_OPTIONS, _VERSION_OPTIONS)
@click.option("--signature", "-k", help="Show only this signature.")
def metadata_command(version: int | None, label: str | None, signature: str | None, **opts: Any) -> None:
    """Show a served model's signatures: inputs and outputs with dtypes and shapes.

    Example: tfship client metadata -s 127.0.0.1:8500 -m penguins --signature predict
    """
    _check_version(version, label)
    with _connect(opts) as conn:
        meta = conn.metadata(opts["model"], version=version, label=label)
    keys = [signature] if signature else [k for k in meta.signatures if not k.startswith("__")]
    signatures = {key: _signature_dict(meta.signature(key)) for key in keys}
    if opts["as_json"]:
        echo_json({"model_spec": _spec_dict(meta.model_spec), "signatures": signatures})
        return
    click.echo(f"model {meta.model_spec.name} version {meta.model_spec.version}")
    for key, sig in signatures.items():
        click.echo(f"signature {key!r} ({sig['method_name']})")
        for side in ("inputs", "outputs"):
            for name, info in sig[side].items():
                shape = _metadata_shape_text(info["shape"])
                click.echo(f"  {side[:-1]:<6} {name}: {info['dtype']} {shape}")


def _signature_dict(sig: SignatureInfo) -> dict[str, Any]:
    def tensors(table: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: {"dtype": t.dtype, "shape": None if t.shape is None else list(t.shape)}
            for k, t in table.items()
        }

    return {
        "method_name": sig.method_name,
        "inputs": tensors(sig.inputs),
        "outputs": tensors(sig.outputs),
    }


def _metadata_shape_text(shape: list[int | None] | None) -> str:
    """A shape as TF Serving's metadata prints it: ``-1`` for a dimension of unknown size."""
    if shape is None:
        return "(unknown rank)"
    return "[" + ", ".join("-1" if d is None else str(d) for d in shape) + "]"


# --------------------------------------------------------------------------------- predict


@client.command("predict")
@_options(_COMMON_OPTIONS, _VERSION_OPTIONS)
@click.option("--signature", "-k", help="Signature key (default serving_default).")
@click.option(
    "--input",
    "-i",
    "input_paths",
    multiple=True,
    help="Inputs: a .json/.jsonl/.csv file, a .npy file, or NAME=FILE.npy (repeatable).",
)
@click.option("--data", "-d", help="Inline JSON inputs, e.g. '{\"x\": [[1.0, 2.0]]}'.")
@click.option("--output", "-o", "outputs", multiple=True, help="Only these outputs (repeatable).")
@click.option(
    "--schema",
    "schema_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Schema JSON: read records as training did: serialized tf.Examples for a parsing "
    "signature; for a raw one the label column is left out and gaps take the defaults.",
)
@flag(
    "--ignore-unknown",
    help="Leave out input columns the signature does not take (a label column, ids).",
)
def predict_command(
    version: int | None,
    label: str | None,
    signature: str | None,
    input_paths: tuple[str, ...],
    data: str | None,
    outputs: tuple[str, ...],
    schema_path: str | None,
    ignore_unknown: bool,
    **opts: Any,
) -> None:
    """Run a signature on inputs and print its outputs.

    Records (a .jsonl, .csv or .json file of objects) sent to a signature whose one input takes
    serialized tf.Examples (a parsing export's ``examples``) are sent as Examples.

    Example: tfship client predict -m m -d '{"x": [[1.0, 2.0]]}'
    """
    _check_version(version, label)
    if schema_path is None:
        sources = _read_sources(input_paths, data)
        records = _records_of(sources)
    with _connect(opts) as conn:
        if schema_path is not None:
            inputs = _schema_inputs(
                conn,
                opts["model"],
                version,
                label,
                signature,
                input_paths,
                data,
                schema_path,
                ignore_unknown,
            )
        elif records is not None:
            taken = _predict_signature(conn, opts["model"], version, label, signature)
            inputs = _records_inputs(records, taken, ignore_unknown)
        else:
            inputs = _merged(sources)
            if isinstance(inputs, dict):
                taken = _predict_signature(conn, opts["model"], version, label, signature)
                inputs = _known_inputs(inputs, taken, ignore_unknown)
        result = _predict(conn, opts["model"], inputs, signature, version, label, outputs)
    if opts["as_json"]:
        echo_json(
            {
                "model_spec": _spec_dict(result.model_spec),
                "outputs": {k: _jsonable(v) for k, v in result.outputs.items()},
            }
        )
        return
    _print_spec(result.model_spec)
    import numpy as np

    for key, value in result.outputs.items():
        shown = _decode_strings(value)
        click.echo(f"{key}: {value.dtype if value.dtype != object else 'string'} {list(value.shape)}")
        click.echo("  " + np.array2string(shown, threshold=50, separator=", ").replace("\n", "\n  "))


def _predict(
    conn: Any,
    model: str,
    inputs: Any,
    signature: str | None,
    version: int | None,
    label: str | None,
    outputs: tuple[str, ...],
) -> Any:
    """The Predict; a refusal of records typed by value names the flag that types them."""
    from tfship.serve_client import InvalidInputError
    from tfship.serve_client._calls import TYPED_BY_VALUE

    try:
        return conn.predict(
            model,
            inputs,
            signature=signature,
            version=version,
            label=label,
            output_filter=list(outputs) or None,
        )
    except InvalidInputError as exc:
        text = str(exc)
        if not text.endswith(TYPED_BY_VALUE):
            raise
        flag = TYPED_BY_VALUE.replace("give schema=", "give --schema FILE")
        raise type(exc)(
            text[: -len(TYPED_BY_VALUE)] + flag,
            code=exc.code,
            details=exc.details,
            model=exc.model,
            version=exc.version,
        ) from exc


def _records_inputs(
    records: tuple[list[Any], Callable[[int], str]], sig: SignatureInfo, ignore_unknown: bool
) -> Any:
    """Records as the signature takes them: as they are, for the client to send as serialized
    tf.Examples, to a signature that parses them; else one column per field."""
    from tfship.serve_client._calls import examples_input_key

    rows, place = records
    if examples_input_key(sig, {name for row in rows for name in row}) is not None:
        return rows
    columns = _known_inputs(_columns(rows, place), sig, ignore_unknown)
    return _one_value_rows(columns, sig) if isinstance(columns, dict) else columns


def _one_value_rows(columns: dict[str, Any], sig: SignatureInfo) -> dict[str, Any]:
    """A field of one value per record for an input of one value per row (shape ``[?, 1]``,
    as a feature column's numeric input is): each value becomes its row, ``[v]``."""
    out = dict(columns)
    for name, values in columns.items():
        info = sig.inputs.get(name)
        shape = getattr(info, "shape", None)
        if (
            shape is not None
            and len(shape) == 2
            and shape[1] == 1
            and isinstance(values, list)
            and all(not isinstance(v, (list, tuple, dict)) for v in values)
        ):
            out[name] = [[v] for v in values]
    return out


def _predict_signature(
    conn: Any, model: str, version: int | None, label: str | None, key: str | None
) -> SignatureInfo:
    """The signature a predict command reads its inputs for; a failure is the Predict's."""
    from tfship.serve_client import ServingCallError
    from tfship.serve_client._errors import renamed_for_call

    try:
        meta = conn.metadata(model, version=version, label=label)
    except ServingCallError as exc:
        raise renamed_for_call(exc, "Predict", "its signature could not be fetched") from exc
    sig: SignatureInfo = meta.signature(key)
    return sig


def _known_inputs(inputs: dict[str, Any], sig: SignatureInfo, ignore_unknown: bool) -> dict[str, Any]:
    """The inputs the signature takes; the others are an error, or left out when asked."""
    unknown = sorted(set(inputs) - set(sig.inputs))
    if not unknown:
        return inputs
    names = ", ".join(map(repr, unknown))
    if not ignore_unknown:
        raise InputError(
            f"{names} {'is not an input' if len(unknown) == 1 else 'are not inputs'} of signature "
            f"{sig.key!r} (it takes {', '.join(sorted(sig.inputs))}); "
            "--ignore-unknown leaves such columns out (--schema FILE leaves out its label)"
        )
    click.echo(f"left out {names}: not inputs of signature {sig.key!r}", err=True)
    return {key: value for key, value in inputs.items() if key in sig.inputs}


def _schema_inputs(
    conn: Any,
    model: str,
    version: int | None,
    label: str | None,
    signature: str | None,
    input_paths: tuple[str, ...],
    data: str | None,
    schema_path: str,
    ignore_unknown: bool,
) -> dict[str, Any]:
    """Records read as the schema reads them, for the signature that will get them.

    A parsing signature (one string input that is not a feature) gets serialized
    ``tf.Example`` s, label and all (parsing ignores what it does not declare). A raw signature
    gets one column per input: the schema's label column is left out, missing values take the
    schema's defaults, and other columns it does not take are an error unless
    ``ignore_unknown``.
    """
    from tfship.schema import Schema
    from tfship.serve_client._calls import request_example

    if len(input_paths) > 1:
        raise InputError("with --schema give one records file (--input) or --data")
    schema = Schema.load(schema_path)
    records = _read_example_records(input_paths[0] if input_paths else None, data, schema)
    source = input_paths[0] if input_paths else "--data"
    sig = _predict_signature(conn, model, version, label, signature)
    strings = [key for key, info in sig.inputs.items() if info.dtype == "string"]
    if len(sig.inputs) == 1 and strings and strings[0] not in schema.feature_names:
        return {
            strings[0]: [
                request_example(r, schema, f"{source}: record {i}").SerializeToString()
                for i, r in enumerate(records, 1)
            ]
        }
    return _raw_columns(records, schema, sig, ignore_unknown, source)


def _raw_columns(
    records: list[Any], schema: Schema, sig: SignatureInfo, ignore_unknown: bool, source: str
) -> dict[str, Any]:
    features = set(schema.feature_names)
    outside = sorted(set(sig.inputs) - features)
    if outside:
        raise InputError(
            f"signature {sig.key!r} takes {', '.join(map(repr, outside))}, which the schema does "
            f"not declare: --schema needs a parsing signature or a raw one built from the schema"
        )
    for name, info in sig.inputs.items():
        if info.encoding != "dense":
            raise InputError(
                f"signature {sig.key!r} input {name!r} is variable-length ({info.encoding}): "
                "send such records to a parsing signature"
            )
    given = {name for record in records if isinstance(record, dict) for name in record}
    label = schema.label.name
    extra = sorted(given - features - {label})
    if extra and not ignore_unknown:
        raise InputError(
            f"{', '.join(map(repr, extra))}: neither inputs of signature {sig.key!r} nor the "
            "schema's label; --ignore-unknown leaves such columns out"
        )
    left_out = ([label] if label in given else []) + extra
    if left_out:
        click.echo(
            f"left out {', '.join(map(repr, left_out))}: "
            + ("the schema's label" if left_out == [label] else "not inputs of the signature"),
            err=True,
        )
    columns: dict[str, list[Any]] = {name: [] for name in sig.inputs}
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict):
            raise InputError(f"{source}: record {number}: expected an object of field values")
        values = schema.convert_record(record, where=f"{source}: record {number}")
        for name, info in sig.inputs.items():
            rank = None if info.shape is None else len(info.shape)
            columns[name].append(values[name][0] if rank == 1 else values[name])
    return columns


# One source of predict inputs: its name (NAME=FILE; "" for none), what it holds, and the
# place of its record n (from 1) for error messages.
_Source = tuple[str, Any, Callable[[int], str]]


def read_predict_inputs(paths: tuple[str, ...], data: str | None) -> Any:
    """Predict inputs from files and inline JSON: a dict name -> values, or one bare value."""
    return _merged(_read_sources(paths, data))


def _read_sources(paths: tuple[str, ...], data: str | None) -> list[_Source]:
    """What each of ``--data`` and the ``--input`` files holds, as read."""
    if not paths and data is None:
        raise InputError("give inputs with --input FILE or --data JSON")
    sources: list[_Source] = []
    if data is not None:
        sources.append(("", _parse_json(data, "--data"), lambda n: f"--data: record {n}"))
    for spec in paths:
        name, _, file = spec.rpartition("=") if "=" in spec else ("", "", spec)
        loaded, places = _read_values(Path(file))
        sources.append((name, loaded, partial(_record_place, file, places)))
    return sources


def _records_of(sources: list[_Source]) -> tuple[list[Any], Callable[[int], str]] | None:
    """The records, and their places, when the inputs are one unnamed source of records."""
    if len(sources) != 1:
        return None
    name, loaded, place = sources[0]
    if name or not isinstance(loaded, list) or not loaded or not all(isinstance(r, dict) for r in loaded):
        return None
    return loaded, place


def _merged(sources: list[_Source]) -> Any:
    """The sources as predict inputs: records become columns, named files join them."""
    merged: dict[str, Any] = {}
    bare: Any = None
    for name, loaded, place in sources:
        if name:
            merged[name] = loaded
        else:
            bare = _merge(merged, _columns(loaded, place))
    if bare is not None:
        if merged:
            raise InputError("a bare array input cannot be mixed with named inputs; use NAME=FILE")
        return bare
    return merged


def _merge(target: dict[str, Any], values: Any) -> Any:
    if isinstance(values, dict):
        target.update(values)
        return None
    return values


def _columns(values: Any, place: Callable[[int], str]) -> Any:
    """Records (a list of dicts) become columns; a dict or a bare array stays as it is.
    ``place`` names record ``n`` (from 1) in an error: its file and line, or its number."""
    if isinstance(values, list) and values and all(isinstance(v, dict) for v in values):
        keys = list(values[0])
        for number, record in enumerate(values, 1):
            if list(record) != keys and set(record) != set(keys):
                raise InputError(
                    f"{place(number)}: the record has fields {sorted(record)}; expected the "
                    f"same fields as the first record ({place(1)}): {sorted(keys)} (a missing "
                    "value leaves its field out: --schema FILE fills it with the schema's default)"
                )
        return {key: [record[key] for record in values] for key in keys}
    return values


def _record_place(file: str, places: Sequence[str] | None, number: int) -> str:
    """Record ``number`` (from 1) of a file: its ``file:line`` as the reader gave it."""
    return places[number - 1] if places else f"{file}: record {number}"


def _read_values(path: Path) -> tuple[Any, list[str] | None]:
    """A file's inputs, and each record's place (``file:line``) when it holds records."""
    if not path.is_file():
        raise InputError(f"input file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        import numpy as np

        try:
            return np.load(path, allow_pickle=False), None
        except ValueError as exc:
            raise InputError(f"{path}: not a .npy array without pickled objects: {exc}") from None
    if suffix == ".json":
        document = _parse_json(path.read_text(encoding="utf-8-sig"), str(path))
        return _placed_records(path) if _holds_records(document) else (document, None)
    if suffix in (".jsonl", ".csv"):
        return _placed_records(path)
    raise InputError(f"{path}: unknown input format {suffix!r}; expected .json, .jsonl, .csv or .npy")


def _holds_records(document: Any) -> bool:
    """Whether a JSON document is records (a list of objects, bare or under ``instances`` or
    ``examples``) rather than named inputs or one bare array."""
    if isinstance(document, dict) and len(document) == 1:
        document = document.get("instances", document.get("examples"))
    return isinstance(document, list) and bool(document) and all(isinstance(r, dict) for r in document)


def _records_file(path: Path, schema: Schema | None = None) -> list[Any]:
    """The records of a file, read and typed as every command reads them: by ``schema``
    when there is one, else each CSV column by the rule ``tfship schema infer`` uses."""
    from tfship.records import read_records

    return read_records(path, schema=schema)


def _placed_records(path: Path) -> tuple[list[Any], list[str]]:
    """The records of a file, read as :func:`_records_file` reads them, and their places."""
    from tfship.records import read_records

    placed = read_records(path, places=True)
    return [record for _, record in placed], [place for place, _ in placed]


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


# ------------------------------------------------------------------------ classify/regress


def _example_command(kind: str) -> Callable[..., None]:
    def command(
        version: int | None,
        label: str | None,
        signature: str | None,
        input_path: str | None,
        data: str | None,
        context: str | None,
        schema_path: str | None,
        **opts: Any,
    ) -> None:
        _check_version(version, label)
        schema = None
        if schema_path is not None:
            from tfship.schema import Schema

            schema = Schema.load(schema_path)
        records = _read_example_records(input_path, data, schema)
        extra = {"context": _parse_json(context, "--context")} if context else {}
        with _connect(opts) as conn:
            call = conn.classify if kind == "classify" else conn.regress
            result = call(
                opts["model"],
                records,
                signature=signature,
                version=version,
                label=label,
                schema=schema,
                **extra,
            )
        _print_example_result(kind, result, opts["as_json"])

    command.__doc__ = (
        f"{kind.capitalize()} records (tf.Example features) with a {kind} signature.\n\n"
        f"Example: tfship client {kind} -m penguins -i penguins.jsonl"
    )
    return command


def _read_example_records(
    input_path: str | None, data: str | None, schema: Schema | None = None
) -> list[Any]:
    if (input_path is None) == (data is None):
        raise InputError("give records with exactly one of --input FILE or --data JSON")
    if data is not None:
        loaded = _parse_json(data, "--data")
        return loaded if isinstance(loaded, list) else [loaded]
    path = Path(input_path or "")
    if not path.is_file():
        raise InputError(f"input file {path} does not exist")
    return _records_file(path, schema)


def _print_example_result(kind: str, result: Any, as_json: bool) -> None:
    if as_json:
        if kind == "classify":
            body: Any = [[[lbl, score] for lbl, score in row] for row in result.classes]
        else:
            body = [float(v) for v in result.values]
        echo_json({"model_spec": _spec_dict(result.model_spec), "results": body})
        return
    _print_spec(result.model_spec)
    if kind == "classify":
        for number, row in enumerate(result.classes):
            best = max(row, key=lambda pair: pair[1]) if row else ("", 0.0)
            pairs = ", ".join(f"{lbl or '#' + str(i)}={score:.4f}" for i, (lbl, score) in enumerate(row))
            click.echo(f"example {number}: {best[0]}  ({pairs})")
    else:
        for number, value in enumerate(result.values):
            click.echo(f"example {number}: {float(value):.6g}")


for _kind in ("classify", "regress"):
    _cmd = _example_command(_kind)
    _cmd = click.option(
        "--schema",
        "schema_path",
        type=click.Path(exists=True, dir_okay=False),
        help="Schema JSON: convert records with its dtypes and defaults.",
    )(_cmd)
    _cmd = click.option("--context", help="JSON record merged into every example.")(_cmd)
    _cmd = click.option("--data", "-d", help="Inline JSON record or list of records.")(_cmd)
    _cmd = click.option("--input", "-i", "input_path", help="Records: .json, .jsonl or .csv.")(_cmd)
    _cmd = click.option("--signature", "-k", help="Signature key (default serving_default).")(_cmd)
    _cmd = _options(_COMMON_OPTIONS, _VERSION_OPTIONS)(_cmd)
    client.command(_kind)(_cmd)


# ------------------------------------------------------------------------------------ wait


@client.command("wait")
@_options(_COMMON_OPTIONS)
@click.option("--version", "-V", "version", type=click.IntRange(min=0), help="Wait for this one.")
def wait_command(version: int | None, **opts: Any) -> None:
    """Wait until the model (or one version) is AVAILABLE; --timeout bounds the wait.

    Example: tfship client wait -m penguins --timeout 60
    """
    with _connect(opts) as conn:
        ready = conn.wait_until_available(opts["model"], version, timeout=opts["timeout"])
    if opts["as_json"]:
        echo_json({"model": opts["model"], "version": ready.version, "state": ready.state})
        return
    click.echo(f"model {opts['model']} version {ready.version} is {ready.state}")


# ---------------------------------------------------------------------------------- output


def _spec_dict(spec: Any) -> dict[str, Any]:
    return {"name": spec.name, "version": spec.version, "signature_name": spec.signature_name}


def _print_spec(spec: Any) -> None:
    version = "" if spec.version is None else f" version {spec.version}"  # REST reports none
    signature = f" signature {spec.signature_name}" if spec.signature_name else ""
    click.echo(f"model {spec.name}{version}{signature}")


def _decode_strings(value: Any) -> Any:
    if value.dtype != object:
        return value
    import numpy as np

    out = np.empty(value.shape, dtype=object)
    out.flat[:] = [_text(v) for v in value.flat]
    return out


def _text(item: Any) -> Any:
    from tfship._wire import text_or_b64

    return text_or_b64(item) if isinstance(item, bytes) else item


def _jsonable(value: Any) -> Any:
    """numpy -> JSON: strings as text (or {"b64": ...} when not UTF-8), NaN/inf kept."""
    if value.dtype == object:
        return _decode_strings(value).tolist()
    if value.dtype.kind == "c":
        return [[z.real, z.imag] for z in value.ravel().tolist()]
    # json.dumps writes NaN/Infinity for non-finite floats, as TF Serving's REST API does.
    return value.tolist()

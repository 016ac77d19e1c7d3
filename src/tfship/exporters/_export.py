"""Export one checkpoint of an Estimator: build, stage, verify, publish.

The graph is built the way ``Estimator.export_saved_model`` builds it (the Estimator's own
``model_fn`` in PREDICT mode, its saver and local init op), but the SignatureDefs come from
``_signatures`` (so ``serving_default`` always exists), the SavedModel is written to a staging
sibling, verified by loading it back, and only then renamed to its version number.
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfship._tf import estimator as _estimator_module
from tfship._tf import tf, tf_error_cause
from tfship._wire import (
    ASSETS_EXTRA,
    DEFAULT_SIGNATURE,
    METADATA_FILE,
    WARMUP_FILE,
    MetaGraphDef,
    SignatureDef,
)
from tfship.errors import ExportError, TfshipError
from tfship.exporters._errors import CheckpointNotFoundError, VerificationError
from tfship.exporters._publish import (
    next_version,
    publish,
    staging_dir,
    sweep_staging,
    write_json_atomic,
)
from tfship.exporters._signatures import SignatureReport, build_signatures
from tfship.exporters._warmup import build_warmup_logs, example_logs, replay
from tfship.inspect import write_warmup

# What an export runs to build its serving inputs: a ``Receiver`` or any
# ``serving_input_receiver_fn`` (it returns a ``ServingInputReceiver``).
ReceiverFn = Callable[[], Any]

logger = logging.getLogger("tfship.exporters")
VERSION_BY = ("time", "step")


@dataclass(frozen=True)
class ExportResult:
    """What one export wrote.

    Attributes:
        path: the published version directory.
        version: its number.
        global_step: the checkpoint's global step (``None`` if it has none).
        checkpoint: the checkpoint path exported.
        signatures: the signature report (written and excluded, with reasons).
        metadata: the content of ``assets.extra/tfship.json``.
        verified: whether the export was loaded back and checked before publishing.
        warmup_records: number of warmup requests written (and replayed when verified).
        seconds: wall time of the export.

    Example:
        >>> from tfship.data import infer_schema, penguins_split
        >>> from tfship.exporters import parsing_receiver
        >>> from tfship.trainer import RunOptions, build_estimator, train
        >>> train_csv, eval_csv = penguins_split("data")
        >>> schema = infer_schema(train_csv, label="species")
        >>> _ = train(schema, "model", [str(train_csv)], [str(eval_csv)],
        ...           run=RunOptions(max_steps=10, exports=()))
        >>> result = export_model(build_estimator(None, "model"), "export/manual", parsing_receiver(schema))
        >>> result.path.parent.name, result.path.name.isdigit()
        ('manual', True)
    """

    path: Path
    version: int
    global_step: int | None
    checkpoint: str
    signatures: SignatureReport
    metadata: dict[str, Any] = field(repr=False)
    verified: bool = True
    warmup_records: int = 0
    seconds: float = 0.0

    def __fspath__(self) -> str:
        return str(self.path)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (``tfship export --json``)."""
        return {
            "path": str(self.path),
            "version": self.version,
            "global_step": self.global_step,
            "checkpoint": self.checkpoint,
            "verified": self.verified,
            "warmup_records": self.warmup_records,
            "seconds": round(self.seconds, 3),
            "signatures": self.signatures.to_dict(),
            "metrics": self.metadata.get("metrics", {}),
        }


def export_model(
    estimator: Any,
    export_dir_base: str | os.PathLike[str],
    receiver: ReceiverFn,
    *,
    checkpoint_path: str | None = None,
    version: int | None = None,
    version_by: str = "time",
    assets_extra: Mapping[str, str | os.PathLike[str]] | None = None,
    as_text: bool = False,
    warmup: Iterable[Any] | None = None,
    verify: bool = True,
    exporter: Mapping[str, Any] | None = None,
    eval_result: Mapping[str, Any] | None = None,
) -> ExportResult:
    """Export a checkpoint of ``estimator`` as a new version under ``export_dir_base``.

    Args:
        estimator: a ``tf.estimator.Estimator`` (canned or with a custom ``model_fn``).
        export_dir_base: the directory holding the versions (TF Serving's base path).
        receiver: a ``Receiver`` or any ``serving_input_receiver_fn``.
        checkpoint_path: the checkpoint to export (default: the newest in the model dir).
        version: an explicit version number (default: chosen by ``version_by``).
        version_by: ``"time"`` for ``max(now_seconds, newest + 1)``, ``"step"`` for the
            checkpoint's global step.
        assets_extra: destination under ``assets.extra/`` -> source file to copy.
        as_text: write ``saved_model.pbtxt`` instead of ``saved_model.pb``.
        warmup: records (``tf.train.Example``, bytes or dicts) for warmup requests.
        verify: load the staged export, check its signatures, replay warmup before publishing.
        exporter: extra metadata about the exporter that asked for the export.
        eval_result: the evaluation metrics of this checkpoint, recorded in the metadata.

    Returns:
        An ``ExportResult``.

    Raises:
        CheckpointNotFoundError: no checkpoint to export.
        ExportError: the export failed; nothing was published, no staging directory remains.

    Example:
        >>> from tfship.data import infer_schema, penguins_split
        >>> from tfship.exporters import parsing_receiver
        >>> from tfship.trainer import RunOptions, build_estimator, train
        >>> train_csv, eval_csv = penguins_split("data")
        >>> schema = infer_schema(train_csv, label="species")
        >>> _ = train(schema, "model", [str(train_csv)], [str(eval_csv)],
        ...           run=RunOptions(max_steps=10, exports=()))
        >>> result = export_model(build_estimator(None, "model"), "export/manual", parsing_receiver(schema))
        >>> sorted(result.signatures.written)
        ['classification', 'predict', 'serving_default']
    """
    if version_by not in VERSION_BY:
        raise ValueError(f"version_by must be one of {', '.join(VERSION_BY)}, got {version_by!r}")
    if not callable(receiver):
        raise TypeError(f"receiver must be a Receiver or a receiver function, got {receiver!r}")
    started = time.perf_counter()
    base = Path(os.fsdecode(export_dir_base))
    ckpt = resolve_checkpoint(estimator, checkpoint_path)
    step = checkpoint_step(ckpt)
    base.mkdir(parents=True, exist_ok=True)
    sweep_staging(base)
    number = _choose_version(base, version, version_by, step)
    final = base / str(number)
    if final.exists():
        raise ExportError(f"version {number} already exists in {base}; choose another version")
    staging = staging_dir(base, number)
    try:
        staging.mkdir()  # inside the try: a Ctrl-C right after it still removes the directory
        report, n_warmup, metadata = _write(
            estimator,
            staging,
            receiver,
            ckpt,
            step,
            number,
            as_text,
            assets_extra,
            warmup,
            exporter,
            eval_result,
        )
        if verify:
            verify_export(staging, set(report.written), n_warmup)
        publish(staging, final)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, TfshipError) or not isinstance(exc, Exception):
            raise
        raise ExportError(f"export of checkpoint {ckpt} to {base} failed: {_first_line(exc)}") from exc
    logger.debug(report.log_line())  # the same for every export of a run: -v shows it
    return ExportResult(
        path=final,
        version=number,
        global_step=step,
        checkpoint=ckpt,
        signatures=report,
        metadata=metadata,
        verified=verify,
        warmup_records=n_warmup,
        seconds=time.perf_counter() - started,
    )


def _write(
    est: Any,
    staging: Path,
    receiver: ReceiverFn,
    ckpt: str,
    step: int | None,
    number: int,
    as_text: bool,
    assets_extra: Mapping[str, Any] | None,
    warmup: Iterable[Any] | None,
    exporter: Mapping[str, Any] | None,
    eval_result: Mapping[str, Any] | None,
) -> tuple[SignatureReport, int, dict[str, Any]]:
    sigs, report = _build_saved_model(est, staging, receiver, ckpt, as_text)
    extra = staging / ASSETS_EXTRA
    for dest, src in (assets_extra or {}).items():
        target = extra / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.fspath(src), target)
    n_warmup = 0
    if warmup is not None:
        logs = build_warmup_logs(warmup, sigs[DEFAULT_SIGNATURE], receiver, signature_key=DEFAULT_SIGNATURE)
        write_warmup(staging / WARMUP_FILE, logs)
        n_warmup = len(logs)
    metadata = _metadata(est, receiver, ckpt, step, number, report, n_warmup, exporter, eval_result)
    extra.mkdir(parents=True, exist_ok=True)
    write_json_atomic(staging / METADATA_FILE, metadata)
    return report, n_warmup, metadata


def _build_saved_model(
    est: Any, staging: Path, receiver: ReceiverFn, ckpt: str, as_text: bool
) -> tuple[dict[str, Any], SignatureReport]:
    t = tf()
    v1 = t.compat.v1
    mode = _estimator_module().ModeKeys.PREDICT
    with t.Graph().as_default():
        v1.train.get_or_create_global_step()
        if est.config.tf_random_seed is not None:
            v1.random.set_random_seed(est.config.tf_random_seed)
        rec = receiver()
        spec = est.model_fn(
            features=rec.features,
            labels=getattr(rec, "labels", None),
            mode=mode,
            config=est.config,
        )
        outputs = spec.export_outputs or {
            DEFAULT_SIGNATURE: _estimator_module().export.PredictOutput(spec.predictions)
        }
        sigs, report = build_signatures(rec, outputs)
        saver = spec.scaffold.saver or v1.train.Saver(sharded=True)
        local_init = spec.scaffold.local_init_op or v1.train.Scaffold.default_local_init_op()
        with v1.Session(config=est.config.session_config) as sess:
            try:
                saver.restore(sess, ckpt)
            except (t.errors.NotFoundError, t.errors.InvalidArgumentError) as exc:
                # TF's restore error opens with advice and keeps the cause after "Original error:"
                cause = tf_error_cause(str(exc).split("Original error:", 1)[-1])
                raise ExportError(
                    f"checkpoint {ckpt} does not hold the variables the model needs ({cause}): "
                    "it was written by another model"
                ) from exc
            builder = v1.saved_model.Builder(str(staging))
            builder.add_meta_graph_and_variables(
                sess,
                [t.saved_model.SERVING],
                signature_def_map=sigs,
                assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
                main_op=local_init,
                saver=saver,
                strip_default_attrs=True,
            )
            builder.save(as_text)
    return sigs, report


def verify_export(path: Path, expected: set[str] | None = None, n_warmup: int = 0) -> int:
    """Load an export as TF Serving does, check its signatures, and run it.

    Every signature TF Serving can call answers one request built from the export itself
    (defaults, zeros: see ``example_logs``), then the warmup file is replayed: an export that
    cannot answer a request is not published.

    Args:
        path: the (staged) version directory.
        expected: the signature keys it must have; ``None`` accepts any with ``serving_default``.
        n_warmup: how many warmup records it carries (0: none to replay).

    Returns:
        The number of warmup requests replayed.

    Raises:
        VerificationError: the export does not load, a signature is missing or broken, or a
            request fails (the message names the signature and TensorFlow's cause).
    """
    t = tf()
    v1 = t.compat.v1
    with t.Graph().as_default() as graph, v1.Session() as sess:
        try:
            mg = v1.saved_model.loader.load(sess, [t.saved_model.SERVING], str(path))
        except Exception as exc:  # any load failure means the export is unusable
            raise VerificationError(f"staged export does not load: {tf_error_cause(exc)}") from exc
        found = set(mg.signature_def)
        if DEFAULT_SIGNATURE not in found or (expected is not None and found != expected):
            raise VerificationError(
                f"staged export has signatures {sorted(found)}, expected {sorted(expected or found)}"
            )
        for key, sig in mg.signature_def.items():
            _check_tensors(graph, key, sig)
        failures = run_example_requests(sess, mg, path)
        if failures:
            key, cause = next(iter(failures.items()))
            raise VerificationError(
                f"signature {key!r} cannot answer a request built from its own defaults: {cause}"
            )
        if not n_warmup:
            return 0
        from tfship.inspect import read_warmup

        logs = read_warmup(path / WARMUP_FILE)
        try:
            return replay(sess, mg, logs)
        except ExportError as exc:
            raise VerificationError(str(exc)) from exc


def run_example_requests(session: Any, meta_graph: MetaGraphDef, path: Path) -> dict[str, str]:
    """Run ``example_logs(path)`` in a loaded session; signature -> TensorFlow's cause, per failure."""
    failures: dict[str, str] = {}
    for key, log in example_logs(path).items():
        try:
            replay(session, meta_graph, [log])
        except ExportError as exc:
            failures[key] = tf_error_cause(exc.__cause__) if exc.__cause__ else str(exc)
    return failures


def check_runs(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """Load an export in a TF1 session as TF Serving does and run one request per signature.

    Returns:
        signature -> ``None`` when it answered, else the cause in one line.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> check_runs("m/1")
        {'serving_default': None}
    """
    t = tf()
    v1 = t.compat.v1
    with t.Graph().as_default(), v1.Session() as sess:
        try:
            mg = v1.saved_model.loader.load(sess, [t.saved_model.SERVING], os.fspath(path))
        except Exception as exc:
            return {"(load)": tf_error_cause(exc)}
        failures = run_example_requests(sess, mg, Path(path))
        keys = example_logs(Path(path))
    return {key: failures.get(key) for key in keys}


def _check_tensors(graph: Any, key: str, sig: SignatureDef) -> None:
    for io, infos in (("input", sig.inputs), ("output", sig.outputs)):
        for name, info in infos.items():
            names = [info.name] if info.name else []
            if info.HasField("coo_sparse"):
                c = info.coo_sparse
                names = [c.indices_tensor_name, c.values_tensor_name, c.dense_shape_tensor_name]
            for tensor_name in names:
                try:
                    graph.get_tensor_by_name(tensor_name)
                except (KeyError, ValueError) as exc:
                    raise VerificationError(
                        f"signature {key!r} {io} {name!r}: tensor {tensor_name} not in the graph"
                    ) from exc


def checkpoint_step(ckpt: str) -> int | None:
    """The global step stored in a checkpoint, or ``None``."""
    t = tf()
    try:
        return int(t.train.load_variable(ckpt, "global_step"))
    except (t.errors.NotFoundError, ValueError, KeyError):
        return None


def resolve_checkpoint(est: Any, checkpoint_path: str | None) -> str:
    """The checkpoint to export: the given file prefix, the newest in a given directory, or the
    newest in the model dir.

    Raises:
        CheckpointNotFoundError: there is no such checkpoint.
    """
    t = tf()
    if checkpoint_path is None:
        found = t.train.latest_checkpoint(est.model_dir)
        if not found:
            raise CheckpointNotFoundError(
                f"no checkpoint in model directory {est.model_dir}; "
                "train first, or name the checkpoint to export",
                path=str(est.model_dir),
            )
        return str(found)
    path = os.fspath(checkpoint_path)
    if t.io.gfile.isdir(path):
        found = t.train.latest_checkpoint(path)
        if not found:
            raise CheckpointNotFoundError(f"no checkpoint in directory {path}", path=path)
        return str(found)
    if not t.io.gfile.exists(path + ".index"):
        raise CheckpointNotFoundError(f"checkpoint {path} not found (expected {path}.index)", path=path)
    return path


def _choose_version(base: Path, version: int | None, version_by: str, step: int | None) -> int:
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"version must be a non-negative int, got {version!r}")
        return version
    if version_by == "step":
        if step is None:
            raise ExportError("version_by='step' but the checkpoint has no global_step")
        return step
    return next_version(base)


def _metadata(
    est: Any,
    receiver: ReceiverFn,
    ckpt: str,
    step: int | None,
    number: int,
    report: SignatureReport,
    n_warmup: int,
    exporter: Mapping[str, Any] | None,
    eval_result: Mapping[str, Any] | None,
) -> dict[str, Any]:
    import tfship

    t = tf()
    now = time.time()
    schema = getattr(receiver, "schema", None)
    describe = getattr(receiver, "describe", None)
    return {
        "format": 1,
        "version": number,
        "exporter": dict(exporter or {}),
        "global_step": step,
        "checkpoint": _absolute(ckpt),
        "model_dir": _absolute(str(est.model_dir)),
        "created": _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(timespec="seconds"),
        "created_unix": round(now, 3),
        "metrics": jsonable_metrics(eval_result or {}),
        "tensorflow": t.__version__,
        "tensorflow_estimator": _estimator_version(),
        "tfship": tfship.__version__,
        "receiver": describe() if callable(describe) else {"kind": "custom"},
        "schema": schema.to_dict() if schema is not None and hasattr(schema, "to_dict") else None,
        "signatures": report.to_dict(),
        "warmup": {"records": n_warmup, "signature": DEFAULT_SIGNATURE} if n_warmup else None,
    }


def _absolute(path: str) -> str:
    # Metadata outlives the working directory it was written from; remote URLs stay as they are.
    return path if "://" in path else os.path.abspath(path)


def jsonable_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Numeric metrics as JSON values; NaN and infinities become the strings ``"nan"``, ...

    Example:
        >>> jsonable_metrics({"auc": 0.5, "loss": float("nan"), "path": b"x"})
        {'auc': 0.5, 'loss': 'nan'}
    """
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if isinstance(value, (bytes, str)):
            continue
        if math.isfinite(number):
            out[str(key)] = int(number) if key == "global_step" else number
        else:
            out[str(key)] = str(number)
    return out


def _estimator_version() -> str:
    try:
        from importlib.metadata import version

        return version("tensorflow-estimator")
    except Exception:  # metadata may be missing in unusual installs
        return "unknown"


def _first_line(exc: BaseException) -> str:
    cause = tf_error_cause(exc)
    return cause if cause == type(exc).__name__ else f"{type(exc).__name__}: {cause}"

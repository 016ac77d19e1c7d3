"""``load`` and ``LocalModel``: one SavedModel loaded once, run many times.

Estimator exports are TF1 graphs; TF2 SavedModels (``tf.saved_model.save``, Keras) carry the same
MetaGraphDef with their signatures as function calls, so one loader serves both: a TF1 session.
A session call is cheaper per batch than a TF2 concrete function and it can feed any tensor of
the graph, which is what lets ``predict`` skip ``tf.Example`` serialization for parsing
signatures.

Some exports cannot run in a session: a Keras 3 model saved with ``tf.saved_model.save`` has
signature functions that read variables its restore step never writes (the same export fails
in TF Serving). The protos tell (``tfship.inspect``'s restore check), and such an export is
loaded with TF2's object loader (``tf.saved_model.load``) instead, which restores through the
object graph; ``LocalModel`` behaves the same either way, and ``loader`` says which one runs.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfship._wire import METADATA_FILE, InputCheckError, check_inputs, version_dirs
from tfship.errors import ModelError, ModelInputError, SignatureNotFoundError

Array = npt.NDArray[Any]

if TYPE_CHECKING:
    from tfship.inspect import MetaGraphInfo, SavedModelInfo, SignatureInfo, TensorInfo
    from tfship.loaders._predict import SignatureAdapter

log = logging.getLogger(__name__)

#: signature keys that are plumbing, not something to call.
_HIDDEN_SIGNATURES = frozenset({"__saved_model_init_op", "__saved_model_train_op"})
_SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")

#: a (signature, outputs) that ``run_checked`` hands to ``run``: sparse inputs, unknown keys.
_UNPLANNED: Any = object()

#: the parts of a ``coo_sparse`` input, in the order ``run`` takes them.
_SPARSE_PARTS = ("indices", "values", "dense_shape")


def resolve_export_dir(path: str | Path) -> Path:
    """Return the SavedModel directory for ``path``, picking the newest version of an export base.

    ``export/<name>`` holds numeric version directories (TF Serving's layout); the highest one
    that contains a SavedModel is what TF Serving would serve, so it is what we load.

    Example:
        >>> resolve_export_dir("export/dnn")  # doctest: +SKIP
        PosixPath('export/dnn/1795236337')
    """
    root = Path(path)
    if any((root / name).is_file() for name in _SAVED_MODEL_FILES):
        return root
    versions = [
        child
        for _, child in version_dirs(root)
        if any((child / name).is_file() for name in _SAVED_MODEL_FILES)
    ]
    if versions:
        log.debug("using version %s of %s", versions[-1].name, root)
        return versions[-1]
    return root


class LocalModel:
    """A SavedModel loaded once, callable from several threads, no server involved.

    Build it with :func:`load`. ``run`` is the exact, low-level call (what TF Serving does with
    a signature); ``predict`` accepts friendly inputs (records, DataFrames, ``tf.train.Example``)
    and ``predict_batches`` streams them in order.

    Example::

        model = load("export/dnn")
        model.predict([{"bill_length_mm": 39.1, "island": "Dream"}])["probabilities"].shape  # (1, 3)
    """

    def __init__(
        self,
        *,
        path: Path,
        meta_graph: MetaGraphInfo,
        session: Any,
        default_signature: str,
        load_seconds: float,
        loader: str | None = None,
    ) -> None:
        self.path = path
        self.meta_graph = meta_graph
        self.signatures: dict[str, SignatureInfo] = {
            key: sig for key, sig in meta_graph.signatures.items() if key not in _HIDDEN_SIGNATURES
        }
        self.default_signature = default_signature
        self._load_seconds = load_seconds
        #: ``"session"`` (a TF1 session, as TF Serving runs it) or ``"object"`` (TF2's
        #: ``tf.saved_model.load``, for exports a session cannot run).
        self.loader: str = loader or ("object" if isinstance(session, _ObjectRunner) else "session")
        # A session still being opened in a thread (``start_loading``) is waited for where it
        # is first used; ``_ready_at`` is when it was there (perf_counter).
        self._opening = session if isinstance(session, _Opening) else None
        self._live: Any = None if self._opening is not None else session
        self._ready_at = time.perf_counter()
        self._lock = threading.Lock()
        self._callables: dict[tuple[Any, ...], Any] = {}
        self._plans: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._adapters: dict[str, Any] = {}
        self._closed = False

    @functools.cached_property
    def schema_defaults(self) -> dict[str, Any]:
        """Feature defaults of the schema this export was made from (``{}`` for a foreign one).

        tfship records the schema in ``assets.extra/tfship.json``; a raw signature has no
        defaults in its graph, so missing values of its inputs take these, as the parsing
        signature of the same export does.
        """
        try:
            metadata = json.loads((self.path / METADATA_FILE).read_text())
            features = metadata["schema"]["features"]
            return {f["name"]: f["default"] for f in features if f.get("default") is not None}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    @property
    def load_seconds(self) -> float:
        """Seconds the model's load took (waiting for it when it is still loading)."""
        self._loaded()
        return self._load_seconds

    @property
    def _session(self) -> Any:
        if self._live is None:
            self._loaded()
        return self._live

    def _loaded(self) -> None:
        """Wait for a model still loading; raise the load's error if it failed."""
        opening = self._opening
        if opening is None or self._live is not None:
            return
        self._live = opening.result()
        self._load_seconds = opening.seconds
        self._ready_at = opening.finished

    # -- context manager -------------------------------------------------------------------
    def __enter__(self) -> LocalModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalModel({str(self.path)!r}, signature={self.default_signature!r})"

    def close(self) -> None:
        """Release the session; idempotent. Calls after ``close`` raise ``ModelError``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._callables.clear()
            self._plans.clear()
            if self._live is None and self._opening is not None:
                self._opening.close()
            else:
                self._session.close()

    # -- signatures ------------------------------------------------------------------------
    def signature(self, key: str | None = None) -> SignatureInfo:
        """Return the signature ``key`` (``None``: the model's default one).

        Raises:
            SignatureNotFoundError: no such signature; the message lists the valid keys.
        """
        key = self.default_signature if key is None else key
        sig = self.signatures.get(key)
        if sig is None:
            raise SignatureNotFoundError(
                f"signature {key!r} not found in {self.path}; "
                f"valid signatures: {', '.join(sorted(self.signatures)) or '(none)'}",
                path=str(self.path),
                signature=key,
            )
        return sig

    def output_keys(self, signature: str | None, outputs: Sequence[str] | None) -> list[str]:
        """Check ``outputs`` against the signature and return them (all outputs when ``None``)."""
        sig = self.signature(signature)
        if outputs is None:
            return sorted(sig.outputs)
        if isinstance(outputs, str):
            raise TypeError("outputs must be a list of output keys, not a string")
        unknown = [key for key in outputs if key not in sig.outputs]
        if unknown:
            having = sorted(
                key
                for key, other in self.signatures.items()
                if key != sig.key and all(name in other.outputs for name in unknown)
            )
            elsewhere = (
                f"; signature {having[0]!r} has {'it' if len(unknown) == 1 else 'them'}" if having else ""
            )
            raise ModelInputError(
                f"signature {sig.key!r} has no output {', '.join(map(repr, unknown))}; "
                f"valid outputs: {', '.join(sorted(sig.outputs))}{elsewhere}",
                path=str(self.path),
            )
        return list(dict.fromkeys(outputs))

    # -- the exact call ----------------------------------------------------------------------
    def run(
        self,
        feeds: Mapping[str, Any],
        *,
        signature: str | None = None,
        outputs: Sequence[str] | None = None,
        cast: bool = False,
    ) -> dict[str, Array]:
        """Run a signature on ``feeds`` exactly as TF Serving would.

        Inputs are checked by the same rule as ``ServingClient``'s (``tfship._wire``'s
        ``check_inputs``, with the same messages): names, and dtypes under its one cast rule;
        shapes are left to the graph's ops, as TF Serving leaves them.

        Args:
            feeds: one entry per signature input key: a numpy array of the input's dtype
                (strings: object or bytes arrays), Python values (lists, scalars), which take
                the input's dtype when no value changes, or for a sparse (``coo_sparse``)
                input an ``(indices, values, dense_shape)`` tuple.
            signature: signature key; ``None`` uses the model's default signature.
            outputs: output keys to compute; ``None`` computes them all.
            cast: also cast numpy arrays of another dtype under the cast rule (a value may
                change only by float rounding); without it such an array is an error.

        Returns:
            Output key -> numpy array (string outputs are object arrays of ``bytes``).

        Raises:
            ModelInputError: a missing or unknown input, a dtype that does not match, or
                inputs the graph's ops refuse (shapes are not checked before the call, as TF
                Serving does not check them: the op's own error says what is wrong).
            ModelError: the model failed while running.

        Example:
            >>> model.run({"inputs": np.array([example_bytes], dtype=object)})  # doctest: +SKIP
            {'classes': array([[b'0', b'1']], dtype=object), 'scores': array(...)}
        """
        sig = self.signature(signature)
        keys = self.output_keys(sig.key, outputs)
        try:
            checked = check_inputs(sig, feeds, cast=cast, shapes=False)
        except InputCheckError as exc:
            raise ModelInputError(str(exc), path=str(self.path)) from None
        names: list[str] = []
        values: list[Array] = []
        for key in sorted(checked):
            for name, value in _exact_feed(sig, key, checked[key], cast, self.path):
                names.append(name)
                values.append(value)
        return self._run_tensors(names, values, [sig.outputs[k] for k in keys], keys)

    def _run_checked(
        self, feeds: Mapping[str, Array], signature: str, outputs: Sequence[str]
    ) -> dict[str, Array]:
        """Run a signature on feeds already checked by the caller: the serving path.

        ``tfship serve`` checks a request as TF Serving does (names, dtypes, its own error
        texts) before it calls this, so nothing is checked twice: ``feeds`` must hold one numpy
        array of the input's dtype per dense input of ``signature`` (inputs with a default
        included), and ``outputs`` output keys of it. What a caller did not check (a sparse
        input, an unknown key) is checked as :meth:`run` checks it.

        The run executes in the calling thread (TensorFlow's ``inter_op_thread_pool = -1``):
        a server's concurrency is its requests, and handing each small run to the inter-op
        pool and back costs more than the run itself. ``run`` keeps the pool.

        Example:
            >>> model._run_checked({"x": x}, "serving_default", ["y"])  # doctest: +SKIP
        """
        plan = self._plans.get((signature, tuple(outputs)))
        if plan is None:
            plan = self._plan(signature, outputs)
        if plan is _UNPLANNED or feeds.keys() != plan.inputs.keys():
            return self.run(feeds, signature=signature, outputs=outputs)
        if self._closed:
            raise ModelError(f"model {self.path} is closed", path=str(self.path))
        values = [feeds[key] for key in plan.inputs]
        return _assemble(plan.fetch_infos, plan.outputs, self._call(plan.runner, values))

    def _checked_runner(
        self, signature: str, outputs: Sequence[str]
    ) -> Callable[[Mapping[str, Array]], list[Any]] | None:
        """:meth:`_run_checked` bound to one signature and its outputs, for a caller that runs
        them again and again: it takes the feeds and returns the outputs' values in the order
        of ``outputs``. None when a run must go through :meth:`_run_checked` (a sparse input or
        output, an unknown key), which says what is wrong.

        Example:
            >>> model._checked_runner("serving_default", ["y"])({"x": x})  # doctest: +SKIP
            [array([[2., 2., 2.]], dtype=float32)]
        """
        plan = self._plans.get((signature, tuple(outputs)))
        if plan is None:
            plan = self._plan(signature, outputs)
        if plan is _UNPLANNED or any(info.encoding != "dense" for info in plan.fetch_infos):
            return None
        keys, runner, call = tuple(plan.inputs), plan.runner, self._call

        def run(feeds: Mapping[str, Array]) -> list[Any]:
            if self._closed:
                raise ModelError(f"model {self.path} is closed", path=str(self.path))
            return call(runner, [feeds[key] for key in keys])

        return run

    def _plan(self, signature: str, outputs: Sequence[str]) -> Any:
        """The callable and names of one (signature, outputs): made once, kept."""
        sig = self.signatures.get(signature)
        dense = sig is not None and all(i.encoding == "dense" for i in sig.inputs.values())
        if sig is None or not dense or any(key not in sig.outputs for key in outputs):
            return _UNPLANNED  # run() says what is wrong, in its words
        infos = [sig.outputs[key] for key in outputs]
        fetch_names = tuple(name for info in infos for name in _fetch_names(info))
        inputs = {key: sig.inputs[key].name for key in sorted(sig.inputs)}
        runner = self._callable(tuple(inputs.values()), fetch_names, inline=True)
        plan = SimpleNamespace(inputs=inputs, outputs=list(outputs), fetch_infos=infos, runner=runner)
        self._plans[(signature, tuple(outputs))] = plan
        return plan

    def _run_tensors(
        self,
        feed_names: Sequence[str],
        feed_values: Sequence[Array],
        fetch_infos: Sequence[TensorInfo],
        fetch_keys: Sequence[str],
    ) -> dict[str, Array]:
        """Feed graph tensors by name and fetch signature outputs; the one call into TF."""
        if self._closed:
            raise ModelError(f"model {self.path} is closed", path=str(self.path))
        fetch_names = [name for info in fetch_infos for name in _fetch_names(info)]
        runner = self._callable(tuple(feed_names), tuple(fetch_names))
        return _assemble(fetch_infos, fetch_keys, self._call(runner, feed_values))

    # The server's entry points were public methods before; it now calls them through
    # ``tfship.loaders._shared``. These spellings warn, and go with the next release.
    def run_checked(
        self, feeds: Mapping[str, Array], signature: str, outputs: Sequence[str]
    ) -> dict[str, Array]:
        """Deprecated: internal to ``tfship serve``; use :meth:`run`."""
        _withdrawn("run_checked")
        return self._run_checked(feeds, signature, outputs)

    def checked_runner(
        self, signature: str, outputs: Sequence[str]
    ) -> Callable[[Mapping[str, Array]], list[Any]] | None:
        """Deprecated: internal to ``tfship serve``; use :meth:`run`."""
        _withdrawn("checked_runner")
        return self._checked_runner(signature, outputs)

    def run_tensors(
        self,
        feed_names: Sequence[str],
        feed_values: Sequence[Array],
        fetch_infos: Sequence[TensorInfo],
        fetch_keys: Sequence[str],
    ) -> dict[str, Array]:
        """Deprecated: internal to ``tfship serve``; use :meth:`run`."""
        _withdrawn("run_tensors")
        return self._run_tensors(feed_names, feed_values, fetch_infos, fetch_keys)

    def _call(self, runner: Any, values: Sequence[Array]) -> list[Any]:
        """One call into TensorFlow; its errors as tfship's."""
        try:
            return list(runner(*values))
        except Exception as exc:
            tf = _tf()
            if isinstance(exc, tf.errors.InvalidArgumentError) and not _undeserializable(exc):
                raise ModelInputError(
                    f"the model rejected its inputs: {_op_message(exc)}", path=str(self.path)
                ) from exc
            if isinstance(exc, tf.errors.OpError):
                raise ModelError(f"the model failed: {_op_message(exc)}", path=str(self.path)) from exc
            raise

    def _callable(self, feeds: tuple[str, ...], fetches: tuple[str, ...], inline: bool = False) -> Any:
        key = (feeds, fetches, inline)
        runner = self._callables.get(key)
        if runner is not None:
            return runner
        with self._lock:
            if self._closed:
                raise ModelError(f"model {self.path} is closed", path=str(self.path))
            runner = self._callables.get(key)
            if runner is None:
                if isinstance(self._session, _ObjectRunner):  # its own threads either way
                    runner = self._session.make_callable(feeds, fetches, self.path)
                    self._callables[key] = runner
                    return runner
                graph = self._session.graph
                try:
                    feed_tensors = [graph.get_tensor_by_name(name) for name in feeds]
                    fetch_tensors = [graph.get_tensor_by_name(name) for name in fetches]
                except (KeyError, ValueError) as exc:
                    raise ModelError(
                        f"{self.path}: the signature names a tensor missing from the graph: {exc}",
                        path=str(self.path),
                    ) from exc
                del feed_tensors, fetch_tensors  # looked up to name a missing tensor clearly
                # A callable made from CallableOptions feeds straight into the C++ session: no
                # per-call bookkeeping and, like TF Serving, no Python-side check of feed
                # shapes against placeholder shapes (the graph's ops judge the shapes).
                from tfship._tf import tf_module

                config_pb2 = tf_module("tensorflow.core.protobuf.config_pb2")
                options = config_pb2.CallableOptions(feed=list(feeds), fetch=list(fetches))
                if inline:  # in the caller's thread (see run_checked)
                    options.run_options.inter_op_thread_pool = -1
                runner = self._session._make_callable_from_options(options)
                self._callables[key] = runner
        return runner

    # -- the friendly calls (implemented in _predict) --------------------------------------
    def predict(
        self,
        inputs: Any,
        *,
        signature: str | None = None,
        outputs: Sequence[str] | None = None,
        ignore_unknown: bool = False,
    ) -> dict[str, Array]:
        """Predict on friendly inputs: dicts of arrays/lists/scalars, records, DataFrames, Examples.

        For a parsing signature (one string input feeding ``ParseExample``), records use the
        feature names of the recovered ``tf.Example`` spec and are fed straight into the parsed
        tensors; ``tf.train.Example`` objects or serialized bytes are fed as they are. Values
        are cast when the cast is exact (int to float, float64 to float32); a lossy cast is an
        error. Values of records (dicts, DataFrame cells) follow the schema's one rule for a
        value, as every file reader does: ``"81"`` is a number for a numeric input. Sparse
        inputs take lists of variable length or an ``(indices, values, shape)`` triple under
        their own name.

        Args:
            inputs: a dict of columns, a list of record dicts, a pandas DataFrame, one or more
                ``tf.train.Example`` or serialized examples.
            signature: signature key; ``None`` uses the model's default signature.
            outputs: output keys to compute; ``None`` computes them all.
            ignore_unknown: leave out names the signature does not take (a label, an id
                column), logging a warning that names them once; without it they are an error.

        Returns:
            Output key -> numpy array, one row per input row.

        Raises:
            ModelInputError: the inputs do not match the signature; the message names the input,
                what was expected and what was given, and lists the valid names.

        Example:
            >>> model.predict({"bill_length_mm": [39.1, 45.0], "island": ["Dream", "Biscoe"]})
            ... # doctest: +SKIP
        """
        return self.adapter(signature).predict(inputs, outputs, ignore_unknown)

    def predict_batches(
        self,
        records: Iterable[Any],
        batch_size: int = 1024,
        *,
        signature: str | None = None,
        outputs: Sequence[str] | None = None,
        ignore_unknown: bool = False,
    ) -> Iterator[dict[str, Array]]:
        """Predict an iterable of records (dicts, Examples or bytes) in batches, in input order.

        Memory stays bounded: one batch of records is held at a time. ``ignore_unknown`` is
        ``predict``'s.

        Example:
            >>> for out in model.predict_batches(iter(records), 256):  # doctest: +SKIP
            ...     print(out["scores"].shape)
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        adapter = self.adapter(signature)
        batch: list[Any] = []
        for record in records:
            batch.append(record)
            if len(batch) == batch_size:
                yield adapter.predict(batch, outputs, ignore_unknown)
                batch = []
        if batch:
            yield adapter.predict(batch, outputs, ignore_unknown)

    def adapter(self, signature: str | None = None) -> SignatureAdapter:
        """The input adapter of a signature (conversion of friendly inputs to feeds); cached."""
        sig = self.signature(signature)
        adapter = self._adapters.get(sig.key)
        if adapter is None:
            from tfship.loaders._predict import SignatureAdapter as _Adapter

            adapter = _Adapter(self, sig)
            self._adapters[sig.key] = adapter
        return adapter


def _withdrawn(method: str) -> None:
    warnings.warn(
        f"LocalModel.{method} is deprecated: it is internal to tfship serve, no longer part of the "
        "public API, and will be removed; use LocalModel.run",
        DeprecationWarning,
        stacklevel=3,
    )


def load(
    path: str | Path,
    *,
    signature: str | None = None,
    tags: Sequence[str] = ("serve",),
    threads: int | None = None,
    loader: str = "auto",
    saved_model: SavedModelInfo | None = None,
) -> LocalModel:
    """Load a SavedModel (Estimator export or TF2 SavedModel) once, for many calls.

    Args:
        path: a SavedModel directory, or an export base holding numeric version directories
            (the newest is loaded, as TF Serving would).
        signature: the default signature of later calls; ``None`` picks ``serving_default``,
            or the only signature when there is exactly one.
        tags: the MetaGraph tag-set to load.
        threads: TensorFlow intra- and inter-op threads; ``None`` lets TensorFlow choose.
        loader: ``"auto"`` runs the export in a TF1 session, as TF Serving does, unless its
            protos show a session cannot run it (signatures reading variables the restore step
            never writes), then with TF2's ``tf.saved_model.load``; ``"session"`` or
            ``"object"`` forces one. The choice is kept in ``LocalModel.loader`` and logged
            once (the object loader at info level, the usual session at debug level).
        saved_model: the SavedModel at ``path`` as the caller already read it
            (``tfship.inspect.read_saved_model``, or a ``SavedModelInfo`` of a parsed proto),
            so ``saved_model.pb`` is not parsed a second time; ``None`` reads it here.

    Returns:
        A :class:`LocalModel`; close it (or use it as a context manager) when done.

    Raises:
        ModelError: the directory holds no readable SavedModel or it fails to load.
        SignatureNotFoundError: no such tag-set or signature; the message lists the valid ones.

    Example:
        >>> with load("export/dnn/1795236337") as model:  # doctest: +SKIP
        ...     sorted(model.signatures)
        ['classification', 'predict', 'regression', 'serving_default']
    """
    if loader not in ("auto", "session", "object"):
        raise ValueError(f"loader must be 'auto', 'session' or 'object', not {loader!r}")
    export_dir, meta_graph, default = _read(path, signature, tags, saved_model)
    started = time.perf_counter()
    session = _open(
        export_dir, meta_graph, tuple(tags), threads, _loader_kind(export_dir, meta_graph, loader)
    )
    model = LocalModel(
        path=export_dir,
        meta_graph=meta_graph,
        session=session,
        default_signature=default,
        load_seconds=time.perf_counter() - started,
    )
    log.debug("loaded %s in %.3fs", export_dir, model.load_seconds)
    return model


def start_loading(path: str | Path, *, signature: str | None = None) -> LocalModel:
    """:func:`load`, with TensorFlow imported and the model then loaded in a thread while the
    caller goes on (reading its input): the ``LocalModel`` comes back at once, its signatures
    and loader known from the protos, and its first run (or ``load_seconds``) waits for the
    load, raising the load's error if it failed; ``close`` waits for a load still under way.

    Raises:
        ModelError, SignatureNotFoundError: as :func:`load`, for what the protos show.
    """
    export_dir, meta_graph, default = _read(path, signature, ("serve",), None)
    kind = _loader_kind(export_dir, meta_graph, "auto")
    # TensorFlow is imported here, not in the thread: the import holds the GIL for most of its
    # time, and it points file descriptor 2 at /dev/null meanwhile, which would swallow what
    # the job says on stderr (an ignored column, a reject); the load's restore runs in C++.
    started = time.perf_counter()
    _tf()
    opening = _Opening(lambda: _open(export_dir, meta_graph, ("serve",), None, kind), started)
    return LocalModel(
        path=export_dir,
        meta_graph=meta_graph,
        session=opening,
        default_signature=default,
        load_seconds=0.0,
        loader=kind,
    )


class _Opening:
    """A session being opened in a thread (``tfship-load``): ``result`` waits for it."""

    def __init__(self, open_session: Callable[[], Any], started: float) -> None:
        self._open = open_session
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self.started = started  # the import of TensorFlow before it counts as the load's
        self.finished = started
        threading.Thread(target=self._work, name="tfship-load", daemon=True).start()

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    def _work(self) -> None:
        try:
            value = self._open()
        except BaseException as exc:  # noqa: BLE001 - raised in the thread that waits for it
            self._error = exc
            value = None
        self.finished = time.perf_counter()
        self._value = value
        self._done.set()

    def result(self) -> Any:
        """The open session; the load's own error if it failed."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def close(self) -> None:
        """Wait for the load to end (its error is not this call's), then close the session.

        Waited for, not left to its thread: a process that ends while the thread is inside
        TensorFlow's C++ is aborted (a Ctrl-C during the load waits for it, as it did when the
        load ran in the main thread, where the signal was handled once TensorFlow returned).
        """
        self._done.wait()
        if self._value is not None:
            self._value.close()


def _read(
    path: str | Path, signature: str | None, tags: Sequence[str], saved_model: SavedModelInfo | None
) -> tuple[Path, MetaGraphInfo, str]:
    """The export directory, MetaGraph and default signature of a SavedModel, from its protos."""
    from tfship.inspect import read_saved_model

    export_dir = resolve_export_dir(path)
    if saved_model is None:
        saved_model = read_saved_model(export_dir)
    meta_graph = saved_model.meta_graph(tags=tuple(tags))
    callable_keys = sorted(k for k in meta_graph.signatures if k not in _HIDDEN_SIGNATURES)
    return export_dir, meta_graph, _default_signature(signature, callable_keys, export_dir)


def _default_signature(requested: str | None, keys: list[str], path: Path) -> str:
    if requested is not None:
        if requested not in keys:
            raise SignatureNotFoundError(
                f"signature {requested!r} not found in {path}; "
                f"valid signatures: {', '.join(keys) or '(none)'}",
                path=str(path),
                signature=requested,
            )
        return requested
    if "serving_default" in keys:
        return "serving_default"
    if len(keys) == 1:
        return keys[0]
    raise SignatureNotFoundError(
        f"{path} has no 'serving_default' signature; choose one with signature=...: "
        f"{', '.join(keys) or '(none)'}",
        path=str(path),
        signature="serving_default",
    )


def _loader_kind(export_dir: Path, meta_graph: MetaGraphInfo, loader: str) -> str:
    """``"session"`` or ``"object"``: a TF1 session, or for an export a session cannot run (or
    when asked) TF2's loader; decided from the protos, and logged."""
    from tfship.inspect._shared import describe_newer_ops, newer_op_problems, unrestored_variables

    if loader == "session":  # exactly as TF Serving runs it, whatever the export
        return "session"
    newer = newer_op_problems(meta_graph)
    if newer:  # it would load, then fail every call with a less helpful message
        raise ModelError(
            f"cannot run the SavedModel at {export_dir}: {describe_newer_ops(newer)}",
            path=str(export_dir),
        )
    if loader == "object":
        log.info("loading %s with TF2's object loader (tf.saved_model.load), as asked", export_dir)
        return "object"
    if unrestored_variables(meta_graph):
        log.info(
            "loading %s with TF2's object loader (tf.saved_model.load): its signatures read "
            "variables its restore step never writes, so a TF1 session (and TF Serving) cannot "
            "run it",
            export_dir,
        )
        return "object"
    # The usual path: said at debug level, so that every command does not repeat it.
    log.debug("loading %s in a TF1 session", export_dir)
    return "session"


def _open(
    export_dir: Path, meta_graph: MetaGraphInfo, tags: tuple[str, ...], threads: int | None, kind: str
) -> Any:
    """A TF1 session (``kind`` ``"session"``) or TF2's object loader (``"object"``)."""
    if kind == "object":
        return _ObjectRunner.open(export_dir, meta_graph, tags, threads)
    return _open_session(export_dir, tags, threads)


def _open_session(export_dir: Path, tags: tuple[str, ...], threads: int | None) -> Any:
    tf = _tf()
    config = tf.compat.v1.ConfigProto()
    if threads is not None:
        config.intra_op_parallelism_threads = threads
        config.inter_op_parallelism_threads = threads
    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph, config=config)
    try:
        with graph.as_default():
            tf.compat.v1.saved_model.loader.load(session, list(tags), str(export_dir))
    except (tf.errors.OpError, RuntimeError, ValueError, OSError) as exc:
        session.close()
        message = _op_message(exc) if isinstance(exc, tf.errors.OpError) else str(exc)
        raise ModelError(
            f"cannot load the SavedModel at {export_dir}: {message}", path=str(export_dir)
        ) from exc
    graph.finalize()
    return session


class _ObjectRunner:
    """TF2's object loader behind the session calls ``LocalModel`` makes.

    A call feeds and fetches the tensor names of one signature; here they are mapped back to
    the signature's input and output keys, and its concrete function is called instead.
    """

    def __init__(self, loaded: Any, meta_graph: MetaGraphInfo) -> None:
        self.loaded = loaded
        self.meta_graph = meta_graph

    @classmethod
    def open(
        cls, export_dir: Path, meta_graph: MetaGraphInfo, tags: tuple[str, ...], threads: int | None
    ) -> _ObjectRunner:
        tf = _tf()
        if threads is not None:
            _set_eager_threads(tf, threads)
        try:
            loaded = tf.saved_model.load(str(export_dir), tags=list(tags))
        except (tf.errors.OpError, RuntimeError, ValueError, OSError) as exc:
            raise ModelError(
                f"cannot load the SavedModel at {export_dir}: {_op_message(exc)}",
                path=str(export_dir),
            ) from exc
        return cls(loaded, meta_graph)

    def make_callable(self, feeds: tuple[str, ...], fetches: tuple[str, ...], path: Path) -> Any:
        """A function of the feed values returning the fetched arrays, in ``fetches`` order."""
        for key, sig in self.meta_graph.signatures.items():
            inputs = {info.name: k for k, info in sig.inputs.items() if info.encoding == "dense"}
            outputs = {info.name: k for k, info in sig.outputs.items() if info.encoding == "dense"}
            if set(feeds) == set(inputs) and set(fetches) <= set(outputs) and key in self.loaded.signatures:
                return self._caller(
                    self.loaded.signatures[key], [inputs[n] for n in feeds], [outputs[n] for n in fetches]
                )
        raise ModelError(
            f"{path}: loaded with TF2's object loader, which runs whole signatures only; "
            f"no signature has exactly the inputs {list(feeds)}",
            path=str(path),
        )

    @staticmethod
    def _caller(function: Any, input_keys: list[str], output_keys: list[str]) -> Any:
        tf = _tf()
        specs = function.structured_input_signature[1]

        def call(*values: Any) -> list[Array]:
            kwargs = {
                key: tf.constant(value, dtype=specs[key].dtype) for key, value in zip(input_keys, values)
            }
            result = function(**kwargs)
            return [result[key].numpy() for key in output_keys]

        return call

    def close(self) -> None:
        self.loaded = None


def _set_eager_threads(tf: Any, threads: int) -> None:
    # Only possible before the eager context starts; afterwards TensorFlow keeps its choice.
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        log.debug("eager threads already fixed; keeping them")


def _tf() -> Any:
    from tfship._tf import tf

    return tf()


#: What TensorFlow says when it cannot read the model's own computation (an XlaCallModule whose
#: StableHLO is newer than its own), with the code INVALID_ARGUMENT though no input is to blame.
_UNDESERIALIZABLE = "Cannot deserialize computation"


def _undeserializable(exc: Any) -> bool:
    """Whether a TensorFlow error says the model's computation cannot be deserialized."""
    return _UNDESERIALIZABLE in str(getattr(exc, "message", None) or exc)


def _op_message(exc: Any) -> str:
    """The line of a TensorFlow error that carries its cause, without node dumps or tracebacks."""
    from tfship._tf import tf_error_cause

    return tf_error_cause(exc)


# -- exact feeds -------------------------------------------------------------------------------


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    return f"a {type(value).__name__}"


def _exact_feed(sig: SignatureInfo, key: str, value: Any, cast: bool, path: Path) -> list[tuple[str, Array]]:
    info = sig.inputs[key]
    if info.encoding == "dense":  # checked by check_inputs (names and dtype, no shape)
        return [(info.name, value)]
    if info.encoding == "coo_sparse":
        if not (isinstance(value, tuple) and len(value) == 3):
            raise ModelInputError(
                f"signature {sig.key!r} input {key!r} is sparse: expected an "
                f"(indices, values, dense_shape) tuple, got {_describe(value)}",
                path=str(path),
            )
        # The three parts are checked as three inputs of their own, by the same rule.
        rank = None if info.shape is None else len(info.shape)
        parts = SimpleNamespace(
            key=sig.key,
            inputs={
                f"{key}.indices": SimpleNamespace(dtype="int64", shape=(None, rank)),
                f"{key}.values": SimpleNamespace(dtype=info.dtype, shape=(None,)),
                f"{key}.dense_shape": SimpleNamespace(dtype="int64", shape=(rank,)),
            },
        )
        given = dict(zip(parts.inputs, value))
        try:
            checked = check_inputs(parts, given, cast=cast)
        except InputCheckError as exc:
            raise ModelInputError(str(exc), path=str(path)) from None
        return [(info.components[part], checked[f"{key}.{part}"]) for part in _SPARSE_PARTS]
    raise ModelInputError(
        f"signature {sig.key!r} input {key!r} is a {info.encoding} tensor, which tfship cannot "
        "feed yet; only dense and coo_sparse inputs are supported",
        path=str(path),
    )


def _fetch_names(info: TensorInfo) -> list[str]:
    if info.encoding == "coo_sparse":
        comps = info.components
        return [comps["indices"], comps["values"], comps["dense_shape"]]
    if info.encoding != "dense" or not info.name:
        raise ModelError(f"output {info.key!r} is a {info.encoding} tensor; cannot fetch it")
    return [info.name]


def _assemble(infos: Sequence[TensorInfo], keys: Sequence[str], fetched: list[Any]) -> dict[str, Array]:
    result: dict[str, Array] = {}
    position = 0
    for key, info in zip(keys, infos):
        if info.encoding == "coo_sparse":
            indices, values, dense_shape = fetched[position : position + 3]
            position += 3
            # A sparse output is densified so every result is one array per key.
            fill: Any = b"" if values.dtype == object else 0
            dense = np.full(tuple(dense_shape), fill, dtype=values.dtype)
            dense[tuple(np.asarray(indices).T)] = values
            result[key] = dense
        else:
            result[key] = np.asarray(fetched[position])
            position += 1
    return result

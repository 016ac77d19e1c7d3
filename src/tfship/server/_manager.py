"""Which versions are loaded: polling base paths, version policies, labels, state history.

Behaves like TensorFlow Serving's ServerCore with an AvailabilityPreservingPolicy: versions are
the numeric children of a model's base path; a new version is loaded and AVAILABLE before an
old one unloads, so a swap under load drops no request; each version's states (START, LOADING,
AVAILABLE, UNLOADING, END) are recorded, and a failed load ends in END with its error.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from tfship._wire import DEFAULT_SIGNATURE, MetaGraphDef, ModelSpecProto, SignatureDef, version_dirs
from tfship.server._config import ModelConfig
from tfship.server._status import RpcError, from_exception, invalid

if TYPE_CHECKING:
    from tfship.inspect import SavedModelInfo
    from tfship.loaders import LocalModel
    from tfship.server._batching import Batcher

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateEvent:
    """One state a model version went through, with the load error for a failed END.

    Example:
        >>> StateEvent("m", 1, "AVAILABLE", 0.0).state
        'AVAILABLE'
    """

    model: str
    version: int
    state: str
    time: float
    error: RpcError | None = None


class Servable:
    """One loaded version: its serve MetaGraphDef (read from the file once) and the engine that
    runs it.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import numpy as np
        >>> servable = Servable.load("m", 1, "m/1")
        >>> servable.run({"x": np.ones((1, 3), np.float32)}, "serving_default", ["y"])
        {'y': array([[2., 2., 2.]], dtype=float32)}
    """

    def __init__(
        self, name: str, version: int, path: str, meta_graph: MetaGraphDef, model: LocalModel
    ) -> None:
        self.name = name
        self.version = version
        self.path = path
        self.meta_graph = meta_graph
        self.signatures: Mapping[str, SignatureDef] = meta_graph.signature_def
        self.model = model
        self._inflight = 0
        self._idle = threading.Condition(threading.Lock())  # never taken twice by one thread
        self.batcher: Batcher | None = None
        # the serialized ModelSpec of an answer, per (model name, signature key)
        self._specs: dict[tuple[str, str | None], bytes] = {}
        #: what the serving core read of each signature for Predict (its ``PredictPlan``), a
        #: cache the core alone fills and reads, typed there (this module imports no core)
        self.plans: dict[str, Any] = {}
        #: the same for the Open Inference Protocol (its ``_Plan`` per requested signature,
        #: None for the default one), filled and read by that front end alone
        self.v2_plans: dict[str | None, Any] = {}

    @classmethod
    def load(cls, name: str, version: int, path: str) -> Servable:
        """Read ``saved_model.pb`` for the serve MetaGraphDef and load the model with tfship;
        the file is parsed once, here, and the loader takes what was parsed."""
        from tfship.loaders import load

        saved_model = read_saved_model_proto(path)
        meta_graph = serve_meta_graph(saved_model)
        keys = sorted(k for k in meta_graph.signature_def if not k.startswith("__"))
        # TF Serving needs no default signature to load a model; tfship's loader does.
        default = DEFAULT_SIGNATURE if DEFAULT_SIGNATURE in keys or not keys else keys[0]
        # A TF1 session, as TF Serving runs it, even for exports only TF2's loader can run.
        model = load(path, signature=default, loader="session", saved_model=saved_model)
        return cls(name, version, path, meta_graph, model)

    def model_spec(self, name: str, signature: str | None) -> bytes:
        """The serialized ``ModelSpec`` answers carry (TF Serving's ``MakeModelSpec``): name,
        signature key, this version; made once per (name, key)."""
        spec = self._specs.get((name, signature))
        if spec is None:
            from tfship._wire import protos

            message = protos().model_pb2.ModelSpec(name=name)
            if signature is not None:
                message.signature_name = signature or DEFAULT_SIGNATURE
            message.version.value = self.version
            spec = message.SerializeToString()
            if len(self._specs) < 256:  # names and keys a client made up are not kept
                self._specs[(name, signature)] = spec
        return spec

    def run(self, feeds: Mapping[str, Any], signature: str, outputs: Sequence[str]) -> dict[str, Any]:
        """Run one signature on feeds the core checked; returns the requested outputs by alias."""
        if self.batcher is not None:
            return self.batcher.run(self, feeds, signature, outputs)
        return self.run_now(feeds, signature, outputs)

    def runner(
        self, signature: str, outputs: Sequence[str]
    ) -> Callable[[Mapping[str, Any]], list[Any]] | None:
        """:meth:`run_now` bound to one signature and its outputs (the values in their order),
        for a Predict that passed every check; None when only ``run_now`` can run them."""
        from tfship.loaders._shared import checked_runner

        return checked_runner(self.model, signature, outputs)

    def explain(self, exc: Exception) -> Exception:
        """What :meth:`run_now` raises for a run that failed with ``exc``."""
        return _explained(self.model, exc)

    def run_now(self, feeds: Mapping[str, Any], signature: str, outputs: Sequence[str]) -> dict[str, Any]:
        """Run immediately, bypassing the batcher; the feeds are not checked again."""
        from tfship.loaders._shared import run_checked

        try:
            return run_checked(self.model, feeds, signature, outputs)
        except Exception as exc:
            explained = _explained(self.model, exc)
            if explained is exc:
                raise
            raise explained from exc

    def run_tensors(self, feeds: Mapping[str, Any], fetches: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
        """One run feeding graph tensors by name; ``fetches`` maps each tensor name to a
        (signature, output alias) naming it. Returns the values by tensor name."""
        names = sorted(fetches)
        infos = [self.model.signatures[fetches[n][0]].outputs[fetches[n][1]] for n in names]
        from tfship.loaders._shared import run_tensors

        result: dict[str, Any] = run_tensors(self.model, list(feeds), list(feeds.values()), infos, names)
        return result

    def acquire(self) -> None:
        """Count a request in flight so an unload waits for it; :meth:`release` ends it."""
        with self._idle:
            self._inflight += 1

    def release(self) -> None:
        """The request counted by :meth:`acquire` is done."""
        with self._idle:
            self._inflight -= 1
            if not self._inflight:
                self._idle.notify_all()

    def close(self, timeout: float = 30.0) -> None:
        """Wait for requests in flight (bounded), then release the model."""
        with self._idle:
            self._idle.wait_for(lambda: self._inflight == 0, timeout=timeout)
        if self.batcher is not None:
            self.batcher.close()
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def _explained(model: LocalModel, exc: Exception) -> Exception:
    """A failed run of an export whose signatures read variables its restore step never writes
    fails as in TF Serving (same code), but with the cause and the remedy in one line."""
    from tfship._tf import tf_error_cause
    from tfship.inspect._shared import REMEDY, unrestored_variables
    from tfship.server._status import RpcError, from_exception

    status = from_exception(exc)
    if status.code != grpc.StatusCode.FAILED_PRECONDITION:
        return exc
    if isinstance(exc, RpcError) or not unrestored_variables(model.meta_graph):
        return exc
    cause = tf_error_cause(exc.__cause__ or exc).split(". ")[0]
    return RpcError(status.code, f"{cause}: {REMEDY}")


def read_saved_model_proto(path: str) -> SavedModelInfo:
    """The SavedModel at ``path`` parsed once, with TF Serving's errors for a missing or
    corrupt file; the loader takes it as it is (``load(path, saved_model=...)``)."""
    from google.protobuf import text_format

    from tfship._wire import descriptor_pool, protos
    from tfship.inspect import SavedModelInfo

    saved_model = protos().saved_model_pb2.SavedModel()
    pb, pbtxt = os.path.join(path, "saved_model.pb"), os.path.join(path, "saved_model.pbtxt")
    if os.path.exists(pb):
        from google.protobuf.message import DecodeError

        with open(pb, "rb") as handle:
            try:
                saved_model.ParseFromString(handle.read())
            except DecodeError:  # TensorFlow's ReadBinaryProto words it this way
                raise RpcError(grpc.StatusCode.DATA_LOSS, f"Can't parse {pb} as binary proto") from None
        file = pb
    elif os.path.exists(pbtxt):
        with open(pbtxt, encoding="utf-8") as handle:
            text_format.Parse(handle.read(), saved_model, descriptor_pool=descriptor_pool())
        file = pbtxt
    else:
        raise RpcError(
            grpc.StatusCode.NOT_FOUND,
            "Could not find SavedModel .pb or .pbtxt at supplied export directory path: " + path,
        )
    return SavedModelInfo(Path(path), Path(file), saved_model)


def serve_meta_graph(saved_model: SavedModelInfo) -> MetaGraphDef:
    """The MetaGraphDef tagged exactly {"serve"}, as TF Serving's error says when there is none."""
    for meta_graph in saved_model.proto.meta_graphs:
        if set(meta_graph.meta_info_def.tags) == {"serve"}:
            return meta_graph
    found = [sorted(m.meta_info_def.tags) for m in saved_model.proto.meta_graphs]
    raise RpcError(
        grpc.StatusCode.NOT_FOUND,
        "Could not find meta graph def matching supplied tags: { serve }. To inspect available "
        f"tag-sets in the SavedModel, please use the SavedModel CLI: `saved_model_cli` "
        f"(found tag-sets: {found})",
    )


def version_paths(base_path: str, model: str) -> dict[int, str] | None:
    """Version number -> directory of the numeric version directories under ``base_path``
    (None when the base path is missing).

    Raises:
        OSError: the base path exists but cannot be listed (out of file descriptors, a
            network mount that failed, no permission): that is no answer, not "no versions".
    """
    try:
        listed = version_dirs(base_path, strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return None
    versions: dict[int, str] = {}
    for number, path in listed:
        full = os.path.join(base_path, path.name)
        if number in versions:
            logger.warning("model %s: duplicate version directories %s and %s", model, versions[number], full)
            continue
        versions[number] = full
    return versions


@dataclass
class _Version:
    number: int
    path: str
    state: str = "new"  # manager-side harness state: new | ready | error
    servable: Servable | None = None


@dataclass
class _Model:
    config: ModelConfig
    harnesses: dict[int, _Version] = field(default_factory=dict)
    # last published state per version, as TF Serving's ServableStateMonitor keeps it
    states: dict[int, StateEvent] = field(default_factory=dict)
    history: list[StateEvent] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    warned_empty: bool = False
    active: bool = True  # False once a reloaded config leaves the model out
    missing_logged: bool = False
    unlisted: str | None = None  # why the last poll could not list the base path
    warned_missing: set[int] = field(default_factory=set)


Loader = Callable[[str, int, str], Servable]
Warmup = Callable[[Servable], None]


class ModelManager:
    """Keeps the configured models' versions loaded according to their policies.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> manager = ModelManager([ModelConfig("m", "m")])
        >>> manager.start()
        >>> [(event.version, event.state) for event in manager.status("m", None)]
        [(1, 'AVAILABLE')]
        >>> manager.stop()
    """

    def __init__(
        self,
        models: Sequence[ModelConfig],
        *,
        poll_seconds: float = 1.0,
        loader: Loader | None = None,
        warmup: Warmup | None = None,
        allow_labels_for_unavailable: bool = False,
        on_load: Callable[[Servable], None] | None = None,
        max_load_retries: int = 5,
        load_retry_interval_s: float = 60.0,
        on_poll_error: Callable[[str], None] | None = None,
        should_retry_load: Callable[[grpc.StatusCode, str], bool] | None = None,
    ) -> None:
        self._on_poll_error = on_poll_error
        self._should_retry_load = should_retry_load
        self._poll_seconds = poll_seconds
        self._retries = max(max_load_retries, 0)
        self._retry_interval = load_retry_interval_s
        self._loader: Loader = loader or Servable.load
        self._warmup = warmup
        self._on_load = on_load
        self._allow_unavailable_labels = allow_labels_for_unavailable
        self._models: dict[str, _Model] = {}
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._reconcile_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending = list(models)

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Load every model's initial versions (blocking, as TF Serving does), then poll.

        A poll interval of 0 (or less) scans the base paths once, at start-up, as TF
        Serving's ``--file_system_poll_wait_seconds=0`` does.
        """
        self.apply_config(self._pending)
        if self._poll_seconds <= 0:
            return
        self._thread = threading.Thread(target=self._poll_loop, name="tfship-poll", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling and unload every version (each goes UNLOADING then END)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._reconcile_lock:
            for model in list(self._models.values()):
                for version in sorted(model.harnesses):
                    self._unload(model, model.harnesses[version])

    def _poll_loop(self) -> None:
        while not self._stop.wait(self._poll_seconds):
            try:
                with self._reconcile_lock:
                    for model in list(self._models.values()):
                        self._reconcile(model)
            except Exception:  # the poller must outlive one bad poll
                logger.exception("polling model base paths failed")

    # configuration ---------------------------------------------------------------------------
    def apply_config(self, models: Sequence[ModelConfig]) -> None:
        """Serve exactly these models: load new ones, drop those left out, then assign labels.

        Raises:
            RpcError: FAILED_PRECONDITION when a label names a version that is not available.
        """
        with self._reconcile_lock:
            wanted = {m.name: m for m in models}
            for name, model in list(self._models.items()):
                if name not in wanted and model.active:
                    model.active = False
                    model.labels = {}
                    self._reconcile(model)
            for config in models:
                with self._lock:
                    model = self._models.setdefault(config.name, _Model(config))
                    model.config, model.active = config, True
                self._reconcile(model)
            for config in models:
                self._assign_labels(self._models[config.name], config.labels)

    def _assign_labels(self, model: _Model, labels: Mapping[str, int]) -> None:
        with self._lock:
            if not self._allow_unavailable_labels:
                for version in sorted(labels.values()):
                    harness = model.harnesses.get(version)
                    if harness is None or harness.state != "ready":
                        raise RpcError(
                            grpc.StatusCode.FAILED_PRECONDITION,
                            f"Request to assign label to version {version} of model "
                            f"{model.config.name}, which is not currently available for "
                            "inference",
                        )
            model.labels = dict(labels)

    # the policy ------------------------------------------------------------------------------
    def _reconcile(self, model: _Model) -> None:
        config = model.config
        if not model.active:
            self._aspire(model, {})
            while self._next_action(model, set()):
                pass
            return
        try:
            found = version_paths(config.base_path, config.name)
        except OSError as exc:
            self._poll_failed(model, exc)
            return
        if model.unlisted is not None:
            logger.info("Base path %s for servable %s can be listed again", config.base_path, config.name)
            model.unlisted = None
        if found is None:
            if not model.missing_logged:  # once, not on every poll
                logger.error("Could not find base path %s for servable %s", config.base_path, config.name)
            model.missing_logged = True
            return
        model.missing_logged = False
        if not found and not model.warned_empty:
            logger.warning(
                "No versions of servable %s found under base path %s. Did you forget to name "
                "your leaf directory as a number (eg. '/1/')?",
                config.name,
                config.base_path,
            )
        model.warned_empty = not found
        if config.policy.kind == "specific":
            missing = set(config.policy.versions) - set(found)
            for number in sorted(missing - model.warned_missing):
                logger.warning(
                    "model %s: version %d of the policy is not under %s",
                    config.name,
                    number,
                    config.base_path,
                )
            model.warned_missing = missing
        aspired = {v: found[v] for v in config.policy.choose(found)}
        self._aspire(model, aspired)
        while self._next_action(model, set(aspired)):
            pass

    def _poll_failed(self, model: _Model, exc: OSError) -> None:
        """A base path that cannot be listed aborts this poll and keeps what is served, as TF
        Serving's file system source does; one line per run of failures, each one counted."""
        reason = exc.strerror or str(exc)
        if model.unlisted != reason:
            logger.error(
                "Could not list base path %s for servable %s: %s; its served versions stay until "
                "a poll lists it",
                model.config.base_path,
                model.config.name,
                reason,
            )
        model.unlisted = reason
        if self._on_poll_error is not None:
            self._on_poll_error(model.config.name)

    def _aspire(self, model: _Model, aspired: Mapping[int, str]) -> None:
        with self._lock:
            for number, path in aspired.items():
                if number not in model.harnesses:
                    model.harnesses[number] = _Version(number, path)
                    self._publish(model, number, "START")
            for number in list(model.harnesses):
                harness = model.harnesses[number]
                if number not in aspired and harness.state == "new":
                    del model.harnesses[number]
                    self._publish(model, number, "END")
                elif number not in aspired and harness.state == "error":
                    del model.harnesses[number]  # forgotten; its END state stays in the monitor

    def _next_action(self, model: _Model, aspired: set[int]) -> bool:
        """One step of TF Serving's AvailabilityPreservingPolicy; False when nothing is left."""
        harnesses = model.harnesses
        has_aspired = any(v in aspired for v in harnesses)
        aspired_ready = any(v in aspired and h.state == "ready" for v, h in harnesses.items())
        unaspired_ready = sorted(v for v, h in harnesses.items() if v not in aspired and h.state == "ready")
        if unaspired_ready and (not has_aspired or aspired_ready or len(unaspired_ready) > 1):
            self._unload(model, harnesses[unaspired_ready[0]])
            return True
        new = [v for v, h in harnesses.items() if v in aspired and h.state == "new"]
        if new:
            self._load(model, harnesses[max(new)])
            return True
        return False

    def _load(self, model: _Model, harness: _Version) -> None:
        name = model.config.name
        with self._lock:
            self._publish(model, harness.number, "LOADING")
        attempt = 0
        while True:
            try:
                servable = self._load_once(name, harness)
                break
            except Exception as exc:  # any failure ends this version's load, never the server
                error = from_exception(exc)
                attempt += 1
                if self._retry_after(name, harness, attempt, error):
                    continue
                with self._lock:
                    harness.state = "error"
                    self._publish(model, harness.number, "END", error)
                return
        with self._lock:
            harness.servable = servable
            harness.state = "ready"
            self._publish(model, harness.number, "AVAILABLE")
        logger.info("Successfully loaded servable version {name: %s version: %d}", name, harness.number)

    def _retry_after(self, name: str, harness: _Version, attempt: int, error: RpcError) -> bool:
        """Log a failed load; True after the pause when it is to be tried again.

        TF Serving retries a failed load (``--max_num_load_retries``) while the version stays
        LOADING: a version copied in non-atomically loads once its files are all there. A
        version whose directory is gone is not retried (TF Serving cancels its retries).
        """
        retry = attempt <= self._retries and os.path.isdir(harness.path)
        if retry and self._should_retry_load is not None:  # TF Serving 2.18+: permanent errors end it
            retry = self._should_retry_load(error.code, error.message)
        later = f"; retry {attempt} of {self._retries} in {self._retry_interval:g} s" if retry else ""
        logger.error(
            "Loading servable %s version %d failed: %s%s", name, harness.number, error.message, later
        )
        return retry and not self._stop.wait(self._retry_interval)

    def _load_once(self, name: str, harness: _Version) -> Servable:
        servable = self._loader(name, harness.number, harness.path)
        try:
            if self._warmup is not None:
                self._warmup(servable)
            if self._on_load is not None:
                self._on_load(servable)
        except BaseException:
            servable.close(timeout=0)
            raise
        return servable

    def _unload(self, model: _Model, harness: _Version) -> None:
        with self._lock:
            if harness.state == "ready":
                self._publish(model, harness.number, "UNLOADING")
            # From here no new request can resolve to this version.
            model.harnesses.pop(harness.number, None)
            servable, harness.servable = harness.servable, None
        if servable is not None:
            servable.close()
        with self._lock:
            if model.states.get(harness.number) is None or (model.states[harness.number].state != "END"):
                self._publish(model, harness.number, "END")

    def _publish(self, model: _Model, version: int, state: str, error: RpcError | None = None) -> None:
        event = StateEvent(model.config.name, version, state, time.time(), error)
        model.states[version] = event
        model.history.append(event)
        self._changed.notify_all()

    # queries ---------------------------------------------------------------------------------
    @contextmanager
    def servable(self, spec: ModelSpecProto) -> Iterator[Servable]:
        """Resolve a ``ModelSpec`` to a loaded version, held for the duration of a request.

        Raises:
            RpcError: INVALID_ARGUMENT (no name, unknown label) or NOT_FOUND, with TF Serving's
                texts.
        """
        servable = self.acquire(spec)
        try:
            yield servable
        finally:
            servable.release()

    def acquire(self, spec: ModelSpecProto) -> Servable:
        """:meth:`servable` without the context manager: the version is held until its
        ``release()``; the serving core's path, once per request."""
        if not spec.name:
            raise invalid("ModelSpec has no name specified.")
        which = spec.WhichOneof("version_choice")
        if which != "version_label":
            return self.acquire_version(spec.name, int(spec.version.value) if which == "version" else None)
        with self._lock:
            model = self._models.get(spec.name)
            version = None if model is None else model.labels.get(spec.version_label)
            if version is None:
                raise invalid(f"Unrecognized servable version label: {spec.version_label}")
            return self._acquire_locked(spec.name, model, version)

    def acquire_version(self, name: str, version: int | None) -> Servable:
        """:meth:`acquire` of model ``name`` at ``version`` (``None``: the newest ready one),
        for a caller that has no ``ModelSpec`` (the Open Inference Protocol)."""
        with self._lock:
            return self._acquire_locked(name, self._models.get(name), version)

    def _acquire_locked(self, name: str, model: _Model | None, version: int | None) -> Servable:
        servable = None if model is None else self._pick(model, version)
        if servable is None:
            request = f"Latest({name})" if version is None else f"Specific({name}, {version})"
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"Servable not found for request: {request}")
        servable.acquire()
        return servable

    @staticmethod
    def _pick(model: _Model, version: int | None) -> Servable | None:
        if version is not None:
            harness = model.harnesses.get(version)
            return harness.servable if harness is not None and harness.state == "ready" else None
        newest = max((v for v, h in model.harnesses.items() if h.state == "ready"), default=None)
        return None if newest is None else model.harnesses[newest].servable

    def status(self, name: str, version: int | None) -> list[StateEvent]:
        """Last state of each tracked version (descending), as GetModelStatus reports them.

        Raises:
            RpcError: NOT_FOUND when the model or version was never tracked.
        """
        with self._lock:
            model = self._models.get(name)
            states = {} if model is None else dict(model.states)
        if version is not None:
            if version not in states:
                raise RpcError(grpc.StatusCode.NOT_FOUND, f"Could not find version {version} of model {name}")
            return [states[version]]
        if not states:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"Could not find any versions of model {name}")
        return [states[v] for v in sorted(states, reverse=True)]

    def failed_models(self) -> list[StateEvent]:
        """For each model with no available version, the END event of its newest failed load."""
        failed: list[StateEvent] = []
        with self._lock:
            for model in self._models.values():
                if not model.active or any(h.state == "ready" for h in model.harnesses.values()):
                    continue
                ended = [e for e in model.states.values() if e.state == "END" and e.error]
                if ended:
                    failed.append(max(ended, key=lambda e: e.version))
        return failed

    def history(self, name: str) -> list[StateEvent]:
        """Every state every version of ``name`` went through, oldest first."""
        with self._lock:
            model = self._models.get(name)
            return [] if model is None else list(model.history)

    def model_names(self) -> list[str]:
        """Names of the configured models."""
        with self._lock:
            return sorted(self._models)

    def served_models(self) -> list[str]:
        """Names of the models the configuration serves now (not those a reload left out)."""
        with self._lock:
            return sorted(name for name, model in self._models.items() if model.active)

    def wake(self) -> None:
        """Wake every :meth:`wait_for` to test its predicate again (a change outside the manager)."""
        with self._changed:
            self._changed.notify_all()

    def available_versions(self, name: str) -> list[int]:
        """Versions of ``name`` that can serve requests now, ascending."""
        with self._lock:
            model = self._models.get(name)
            if model is None:
                return []
            return sorted(v for v, h in model.harnesses.items() if h.state == "ready")

    def wait_for(self, predicate: Callable[[], bool], timeout: float | None) -> bool:
        """Block until ``predicate()`` holds after a state change (or the timeout passes)."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout=timeout)

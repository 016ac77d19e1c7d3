"""The one place that imports TensorFlow, quietly.

TensorFlow's C++ start-up log lines are controlled by ``TF_CPP_MIN_LOG_LEVEL``, which must be
set before the first import; the Python side logs through absl and ``tf.get_logger()``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import sys
import threading
import urllib.parse
import urllib.request
import warnings
from collections.abc import Iterator
from typing import Any

from tfship.errors import ExtraNotInstalledError, TfshipError

#: The two extras that bring TensorFlow. ``run``: the newest TensorFlow, for everything that
#: runs a model (predict, bench, serve, promote, ``inspect check --run``, LocalModel, Beam,
#: Spark). ``estimator``: TensorFlow 2.15 with ``tf.estimator`` (Python 3.9-3.11), which trains
#: and exports too; ``tf`` is its older name.
RUN_EXTRA = "run"
ESTIMATOR_EXTRA = "estimator"
ESTIMATOR_PYTHONS = "3.9-3.11"
# top-level module -> what the user knows it as; the packages either extra adds to the core
_RUN_MODULES = {
    "tensorflow": "TensorFlow",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "prometheus_client": "prometheus-client",
    "matplotlib": "matplotlib",
}
_ESTIMATOR_MODULES = {**_RUN_MODULES, "tensorflow_estimator": "tensorflow-estimator"}

_verbose = False
_tensorflow: Any = None  # the module once imported and quietened; tf() is on hot paths


def set_verbose(verbose: bool) -> None:
    """Choose whether TensorFlow may log at start-up; call before the first ``tf()``."""
    global _verbose
    _verbose = verbose
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    else:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"


def is_verbose() -> bool:
    """Whether TensorFlow's logs were asked for (``tfship --verbose``)."""
    return _verbose


def tf() -> Any:
    """Import and return ``tensorflow`` with its log spam silenced unless verbose.

    TensorFlow 2.16 and later print a few absl lines (oneDNN, CUDA) while importing whatever
    ``TF_CPP_MIN_LOG_LEVEL`` says, so the import itself runs with file descriptor 2 pointed at
    ``/dev/null``; an import that fails still raises, and its traceback prints afterwards.

    Example:
        >>> tf().constant(1).dtype.name
        'int32'
    """
    global _tensorflow
    if _tensorflow is not None:
        return _tensorflow
    if not _verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        with _quiet_stderr(not _verbose), _deferred(_DEFERRED_MODULES):
            import tensorflow
    except ImportError as exc:
        if exc.name == "tensorflow":
            raise missing_extra("loading or running a model", "TensorFlow") from exc
        raise

    if not _verbose:
        if tensorflow.get_logger().level == logging.NOTSET:  # a program's own choice stays
            tensorflow.get_logger().setLevel(logging.ERROR)
        tensorflow.autograph.set_verbosity(0)
        _quiet_absl()
    _tensorflow = tensorflow
    return tensorflow


#: Modules TensorFlow's import brings in that nothing run at import time uses: Keras 3 (which
#: TensorFlow imports eagerly) imports pyplot for its image gallery, about a third of a second.
_DEFERRED_MODULES = ("matplotlib.pyplot",)


class _DeferringFinder(importlib.abc.MetaPathFinder):
    """Finds ``names`` as the other finders do, with a loader that runs each module only when
    one of its attributes is first used (``importlib.util.LazyLoader``)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


@contextlib.contextmanager
def _deferred(names: tuple[str, ...]) -> Iterator[None]:
    """Within the block, importing one of ``names`` (not yet imported) defers running it to
    its first use: a program that uses it later finds it whole."""
    finder = _DeferringFinder(tuple(n for n in names if n not in sys.modules))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


@contextlib.contextmanager
def _quiet_stderr(quiet: bool) -> Iterator[None]:
    """File descriptor 2 on ``/dev/null`` for the block (C++ logs bypass Python's streams)."""
    if not quiet:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        with stderr_to(null):
            yield
    finally:
        os.close(null)


# Who holds file descriptor 2 now: the descriptors of the blocks inside ``stderr_to``, newest
# last, and the descriptor the first one saved (the user's stderr).
_fd2_lock = threading.Lock()
_fd2_holders: list[int] = []
_fd2_saved: int | None = None


@contextlib.contextmanager
def stderr_to(target: int) -> Iterator[None]:
    """File descriptor 2 pointed at ``target`` for the block, in any thread.

    Blocks may overlap across threads (TensorFlow imported quietly while Spark's JVM starts
    with its notices in a file): the newest block holds descriptor 2, a block that ends hands
    it back to the newest one still open, and the last one restores the user's stderr, so an
    overlap never leaves stderr pointed at a file or at ``/dev/null``. Without a descriptor 2
    to save (a closed stderr), the block runs as it is.
    """
    global _fd2_saved
    with _fd2_lock:
        try:
            sys.stderr.flush()
            if not _fd2_holders:
                _fd2_saved = os.dup(2)
            os.dup2(target, 2)
        except (OSError, ValueError):  # no descriptor 2 to save or replace
            entered = False
        else:
            entered = True
            _fd2_holders.append(target)
    try:
        yield
    finally:
        if entered:
            with _fd2_lock:
                with contextlib.suppress(ValueError, OSError):
                    sys.stderr.flush()
                _fd2_holders.remove(target)
                if _fd2_holders:
                    os.dup2(_fd2_holders[-1], 2)
                elif _fd2_saved is not None:
                    os.dup2(_fd2_saved, 2)
                    os.close(_fd2_saved)
                    _fd2_saved = None


def stderr_back_for_good() -> None:
    """Point descriptor 2 at the user's stderr again, whatever block holds it now.

    For a thread about to end the process (``os._exit``) while another is inside
    :func:`stderr_to` (TensorFlow importing quietly): its last line must reach the user, and no
    block will run on to hand descriptor 2 back.
    """
    with _fd2_lock:
        if _fd2_saved is not None:
            with contextlib.suppress(OSError):
                os.dup2(_fd2_saved, 2)


def tensorflow_version() -> str | None:
    """The installed TensorFlow's version, from its metadata (nothing imported), or ``None``.

    Example:
        >>> tensorflow_version() == tf().__version__
        True
    """
    # the names TensorFlow's builds are published under, one of which a TensorFlow install holds
    for distribution in (
        "tensorflow",
        "tensorflow-cpu",
        "tensorflow-gpu",
        "tensorflow-macos",
        "tensorflow-intel",
        "tensorflow-aarch64",
        "tf-nightly",
        "tf-nightly-cpu",
    ):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def tf_module(name: str) -> Any:
    """A module of TensorFlow's own (``tensorflow.python.client.pywrap_tf_session``), imported
    after :func:`tf` so it is quiet; no other module of tfship imports TensorFlow's modules.

    Example:
        >>> tf_module("tensorflow.core.protobuf.config_pb2").CallableOptions().fetch
        []
    """
    if name.split(".")[0] != "tensorflow":
        raise ValueError(f"not a module of TensorFlow: {name!r}")
    tf()
    return importlib.import_module(name)


def tf_message(message: Any) -> Any:
    """``message`` (one of tfship's classes) as TensorFlow's own class of the same full name,
    by its bytes: what a TensorFlow function that checks the class (``tf.make_ndarray``) takes.

    Example:
        >>> from tfship._wire import encode_tensor
        >>> tf().make_ndarray(tf_message(encode_tensor([1.5])))
        array([1.5], dtype=float32)
    """
    tf()
    from google.protobuf import descriptor_pool, message_factory

    descriptor = descriptor_pool.Default().FindMessageTypeByName(message.DESCRIPTOR.full_name)
    return message_factory.GetMessageClass(descriptor).FromString(message.SerializeToString())


def require_tensorflow(what: str) -> None:
    """Import TensorFlow now, or raise one line saying ``what`` needs it and what to install.

    Raises:
        ExtraNotInstalledError: TensorFlow is not installed.
        TfshipError: TensorFlow is installed but fails to import.

    Example:
        >>> require_tensorflow("--run")  # with TensorFlow installed: nothing to say
    """
    try:
        tf()
    except ExtraNotInstalledError as exc:
        raise missing_extra(what, "TensorFlow") from exc
    except ImportError as exc:
        raise TfshipError(f"{what} needs TensorFlow, which fails to import: {exc}") from exc


def require_extra(what: str, *, estimator: bool = False) -> None:
    """Raise one line naming the extra and its pip command when ``what`` (a package of tfship,
    a command) needs what an extra installs and some of it is missing: what runs a model
    (either extra), or with ``estimator=True`` ``tf.estimator`` as well (the ``estimator``
    extra only). Nothing is imported: the packages are only looked up.

    Raises:
        ExtraNotInstalledError: a package of the extra is not installed.

    Example:
        >>> require_extra("tfship.loaders")  # with TensorFlow installed: nothing to say
    """
    for module, known_as in (_ESTIMATOR_MODULES if estimator else _RUN_MODULES).items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent that fails, a module without a spec
            found = False
        if not found:
            if module == "tensorflow_estimator" and tensorflow_version() is not None:
                raise missing_estimator(what)
            raise missing_extra(what, known_as, estimator=estimator)


def missing_extra(what: str, known_as: str, *, estimator: bool = False) -> ExtraNotInstalledError:
    """The error saying ``what`` needs an extra because ``known_as`` is not installed: the
    ``run`` extra, or the ``estimator`` extra (and the Pythons it installs on) for training.

    Example:
        >>> print(missing_extra("tfship serve", "TensorFlow"))  # doctest: +ELLIPSIS
        tfship serve needs the 'run' extra (TensorFlow is not installed): pip install ...[run]"
    """
    if not estimator:
        return ExtraNotInstalledError(
            f"{what} needs the {RUN_EXTRA!r} extra ({known_as} is not installed): "
            f"{install_command(RUN_EXTRA)}"
        )
    return ExtraNotInstalledError(
        f"{what} needs the {ESTIMATOR_EXTRA!r} extra ({known_as} is not installed): "
        f"{install_command(ESTIMATOR_EXTRA)}{_on_estimator_python()}"
    )


def install_command(extra: str) -> str:
    """The pip command that adds ``extra`` to this tfship, installed the way this one was.

    tfship installed from a checkout or a wheel file cannot be reinstalled by its name (it
    is not on a public index): pip's record of where it came from (``direct_url.json``)
    gives the checkout, editable or not, or the wheel, while it is still there. Installed
    from an index, or when the source is gone, the name is what pip needs.

    Example:
        >>> install_command("spark").startswith("pip install ")
        True
    """
    source = _installed_from()
    if source is None:
        return f'pip install "tfship[{extra}]"'
    kind, where = source
    if kind == "vcs":
        return f'pip install "tfship[{extra}] @ {where}"'
    editable = "-e " if kind == "editable" else ""
    return f'pip install {editable}"{where}[{extra}]"'


def _installed_from() -> tuple[str, str] | None:
    """``(kind, where)`` for tfship installed from a local directory (``dir``, ``editable``),
    a local wheel (``wheel``) or a version-control URL (``vcs``); None otherwise."""
    try:
        text = importlib.metadata.distribution("tfship").read_text("direct_url.json")
        record = json.loads(text) if text else None
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("url"), str):
        return None
    url: str = record["url"]
    if "vcs_info" in record:
        vcs = record["vcs_info"].get("vcs", "git") if isinstance(record["vcs_info"], dict) else "git"
        return "vcs", f"{vcs}+{url}"
    if not url.startswith("file://"):
        return None
    path = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
    if not os.path.exists(path):
        return None
    dir_info = record.get("dir_info")
    if isinstance(dir_info, dict):
        return ("editable" if dir_info.get("editable") else "dir"), path
    return "wheel", path


def missing_estimator(what: str) -> ExtraNotInstalledError:
    """The error saying ``what`` needs ``tf.estimator``, which the installed TensorFlow lacks.

    Example:
        >>> missing_estimator("tfship train").args[0].startswith("tfship train needs tf.estimator")
        True
    """
    here = f"TensorFlow {tensorflow_version() or '(unknown version)'} on Python {_python()}"
    return ExtraNotInstalledError(
        f"{what} needs tf.estimator, which ships with TensorFlow 2.15 only ({here} is installed): "
        f"{install_command(ESTIMATOR_EXTRA)} in a Python {ESTIMATOR_PYTHONS} environment"
    )


def _python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def _on_estimator_python() -> str:
    """Where this Python cannot install the estimator extra, the Pythons that can."""
    if (3, 9) <= sys.version_info[:2] <= (3, 11):
        return ""
    return f" on Python {ESTIMATOR_PYTHONS} (this is Python {_python()})"


def estimator() -> Any:
    """Import and return ``tf.estimator`` (tensorflow-estimator 2.15), quietly.

    Raises:
        ExtraNotInstalledError: the installed TensorFlow has no ``tf.estimator`` (2.16 and
            later), or tensorflow-estimator fails to import beside it.
    """
    tf()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import tensorflow_estimator
    except (ImportError, AttributeError) as exc:  # absent, or a 2.15 build beside a newer TF
        raise missing_estimator("training or exporting an Estimator") from exc
    return tensorflow_estimator.estimator


def _quiet_absl() -> None:
    try:
        from absl import logging as absl_logging
    except ImportError:  # pragma: no cover - absl ships with TensorFlow
        return
    absl_logging.set_verbosity(absl_logging.ERROR)


# Lines TensorFlow's Python layer wraps around an op's own message: the "Graph execution
# error:" banner, where the node was defined (a Python traceback), and the node trailer.
_TF_NOISE = re.compile(
    r"^(Graph execution error:|Detected at node |Node: '|Original stack trace for |"
    r"Traceback \(most recent call last\)|\s)"
)
_NODE_TRAILER = re.compile(r"\s*\[\[.*$")


def tf_error_cause(exc: BaseException | str) -> str:
    r"""The one line of a TensorFlow error that says what went wrong.

    TensorFlow's errors often begin with ``Graph execution error:`` and a Python traceback of
    where the failing node was defined; the cause is the op's own message further down, e.g.
    ``Matrix size-incompatible: In[0]: [1,10], In[1]: [13,3]``. This returns that line without
    the ``[[{{node ...}}]]`` trailer, or the exception's class name when there is no text.

    Example:
        >>> tf_error_cause("Graph execution error:\n\nDetected at node 'm' defined at:\n"
        ...                "  File \"x.py\", line 1\nNode: 'm'\nbad shape [3]\n\t [[{{node m}}]]")
        'bad shape [3]'
    """
    text = exc if isinstance(exc, str) else str(getattr(exc, "message", None) or exc)
    for line in text.splitlines():
        if line.strip() and not _TF_NOISE.match(line):
            cause = _NODE_TRAILER.sub("", line).strip()
            if cause:
                return cause
    if isinstance(exc, BaseException):
        return type(exc).__name__
    return text.strip() or "unknown error"

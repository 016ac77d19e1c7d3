"""Serving readiness: is this export ready for TF Serving? A list of findings with severities.

Severities: ``error`` (TF Serving will refuse it or a request will fail), ``warning`` (it will
serve, with a catch), ``info`` (facts worth knowing, such as the content hash), ``ok``.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tfship._wire import (
    CLASSIFY_METHOD,
    MAX_WARMUP_RECORDS,
    PREDICT_METHOD,
    REGRESS_METHOD,
    WARMUP_FILE,
    PredictionLog,
    dtype_name,
    protos,
    read_tfrecords,
    version_number,
)
from tfship.errors import InputError, VerdictError
from tfship.inspect._bundle import variables_problems
from tfship.inspect._describe import assets, variables
from tfship.inspect._opdefs import OpTable, op_table
from tfship.inspect._reader import MetaGraphInfo, SavedModelInfo, SignatureInfo, read_saved_model
from tfship.inspect._restore import describe_unrestored, unrestored_variables
from tfship.inspect._scan import DEFAULT_DENYLIST, all_ops


class CheckFailedError(VerdictError):
    """Raised when ``check`` finds an error (or, with ``--strict``, a warning); exit code 3."""


@dataclass(frozen=True)
class Finding:
    """One result of a readiness check.

    Example:
        >>> Finding("serving_default", "ok", "signature serving_default exists").severity
        'ok'
    """

    check: str
    severity: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"check": self.check, "severity": self.severity, "message": self.message}


@dataclass
class CheckReport:
    """All findings for one export.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> report = check_saved_model("m/1")
        >>> [f.check for f in report.errors]
        []
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    content_hash: str | None = None
    #: The TensorFlow version whose ops the export was judged against (``None``: not judged).
    target_tf: str | None = None

    def add(self, check: str, severity: str, message: str) -> None:
        """Record a finding."""
        self.findings.append(Finding(check, severity, message))

    @property
    def errors(self) -> list[Finding]:
        """Findings of severity ``error``."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """Findings of severity ``warning``."""
        return [f for f in self.findings if f.severity == "warning"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (schema ``tfship.inspect.check`` version 1)."""
        return {
            "schema": "tfship.inspect.check",
            "version": 1,
            "path": self.path,
            "ready": not self.errors,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "content_hash": self.content_hash,
            "target_tf": self.target_tf,
            "findings": [f.to_dict() for f in self.findings],
        }


def content_hash(path: str | os.PathLike[str]) -> str:
    """SHA-256 over every file's relative path and bytes, in path order (``sha256:<hex>``).

    Estimator exports of TF 2.15 have no ``fingerprint.pb``; this identifies an export's
    content whatever its directory name or timestamps.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import shutil
        >>> _ = shutil.copytree("m/1", "copy/5")
        >>> content_hash("m/1") == content_hash("copy/5"), content_hash("m/1")[:7]
        (True, 'sha256:')
    """
    root = pathlib.Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        with file.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def signature_problems(sig: SignatureInfo) -> list[str]:
    """TF Serving's validity rules for a signature (empty when valid)."""
    problems: list[str] = []
    if sig.method_name in (CLASSIFY_METHOD, REGRESS_METHOD):
        inp = sig.inputs.get("inputs")
        if len(sig.inputs) != 1 or inp is None or inp.dtype != "string":
            found = ", ".join(f"{k} ({t.dtype})" for k, t in sig.inputs.items()) or "none"
            problems.append(f"needs exactly one string input named 'inputs'; found {found}")
    if sig.method_name == CLASSIFY_METHOD:
        allowed = {"classes": "string", "scores": "float32"}
        bad = [f"{k} ({t.dtype})" for k, t in sig.outputs.items() if allowed.get(k) != t.dtype]
        if bad or not sig.outputs:
            problems.append(
                "outputs must be 'classes' (string) and/or 'scores' (float32); "
                f"found {', '.join(bad) or 'none'}"
            )
    elif sig.method_name == REGRESS_METHOD:
        out = sig.outputs.get("outputs")
        if len(sig.outputs) != 1 or out is None or out.dtype != "float32":
            found = ", ".join(f"{k} ({t.dtype})" for k, t in sig.outputs.items()) or "none"
            problems.append(f"needs exactly one float32 output named 'outputs'; found {found}")
    elif sig.method_name == PREDICT_METHOD:
        if not sig.inputs or not sig.outputs:
            problems.append("a predict signature needs at least one input and one output")
    return problems


def _serving_signatures(mg: MetaGraphInfo) -> list[SignatureInfo]:
    return [s for s in mg.signatures.values() if not s.internal]


def _check_layout(report: CheckReport, path: pathlib.Path, info: SavedModelInfo) -> None:
    if version_number(path.resolve().name) is not None:
        report.add("version_dir", "ok", f"version directory {path.resolve().name} is numeric")
    else:
        report.add(
            "version_dir",
            "error",
            f"TF Serving serves only numeric version directories; this one is named "
            f"{path.resolve().name!r}: place it as <model base path>/<number>",
        )
    report.add("saved_model_file", "ok", f"{info.file.name} present")
    declared = variables(info)
    problems = variables_problems(path, declared["count"])
    for problem in problems[:20]:
        report.add("variables", "error", problem)
    if not problems:
        report.add(
            "variables", "ok", f"{declared['count']} variables, {declared['files_bytes']} bytes in variables/"
        )
    missing = [a["filename"] for a in assets(info) if not a["present"]]
    if missing:
        report.add("assets", "error", "asset files missing under assets/: " + ", ".join(missing))
    else:
        report.add("assets", "ok", f"{len(assets(info))} asset files present")


def _check_signatures(report: CheckReport, mg: MetaGraphInfo) -> None:
    if "serving_default" in mg.signatures:
        report.add("serving_default", "ok", "signature serving_default exists")
    else:
        report.add(
            "serving_default",
            "warning",
            "no serving_default signature: every request must name one of " + ", ".join(mg.signatures),
        )
    for sig in _serving_signatures(mg):
        for problem in signature_problems(sig):
            report.add("signature_valid", "error", f"signature {sig.key!r} ({sig.method_name}): " + problem)
        for direction, table in (("input", sig.inputs), ("output", sig.outputs)):
            for key, tensor in table.items():
                if tensor.shape is not None and (not tensor.shape or tensor.shape[0] is not None):
                    report.add(
                        "batch_dimension",
                        "warning",
                        f"signature {sig.key!r} {direction} {key!r} has shape "
                        f"{list(tensor.shape)}: no unknown batch dimension first, so "
                        "requests cannot be batched",
                    )
                if direction == "input" and tensor.encoding != "dense":
                    report.add(
                        "sparse_input",
                        "warning",
                        f"signature {sig.key!r} input {key!r} is {tensor.encoding}: "
                        "TF Serving's Predict API (REST and gRPC) cannot feed it",
                    )
    if not any(f.check == "signature_valid" for f in report.errors):
        report.add("signature_valid", "ok", "every signature follows TF Serving's rules")


def _check_restore(report: CheckReport, mg: MetaGraphInfo) -> None:
    found = unrestored_variables(mg)
    if found:
        report.add("restore", "error", describe_unrestored(found))
    else:
        report.add("restore", "ok", "the restore step writes every variable the signatures read")


def _check_ops(
    report: CheckReport, mg: MetaGraphInfo, denylist: Iterable[str], table: OpTable | None
) -> None:
    ops = all_ops(mg)
    denied = sorted(ops & frozenset(denylist))
    if denied:
        report.add("denylisted_ops", "error", "denylisted ops used: " + ", ".join(denied))
    else:
        report.add("denylisted_ops", "ok", "no denylisted ops")
    if table is not None:
        report.target_tf = table.tensorflow
        report.add("target_tf", "info", f"ops judged against {table.judged}")
        unknown = sorted(op for op in ops if table.attributes(op) is None)
        if unknown:
            report.add(
                "registered_ops",
                "error",
                f"ops {table.name} does not register (custom ops?): " + ", ".join(unknown),
            )
        else:
            report.add("registered_ops", "ok", f"all {len(ops)} ops are registered")
        _check_op_versions(report, mg, table)


def _all_nodes(mg: MetaGraphInfo) -> Iterable[Any]:
    graph = mg.proto.graph_def
    yield from graph.node
    for function in graph.library.function:
        yield from function.node_def


def newer_op_problems(mg: MetaGraphInfo, table: OpTable | None = None) -> list[str]:
    """Ops written by a newer TensorFlow: attributes this one does not know, newer XlaCallModule,
    StableHLO newer than its XlaCallModule deserializes.

    Such a graph loads, then every call fails (``Cannot deserialize computation``, ``NodeDef
    mentions attr ...``). An unknown attribute left at the default its writer's op list
    declares is no problem: TensorFlow's loader removes it first, as TF Serving's does
    (``RemoveNewDefaultAttrsFromGraphDef``). The ops are read from ``table`` (by default the
    installed TensorFlow's, see :func:`op_table`), never from TensorFlow; a StableHLO version
    that cannot be read, or a table that does not know its own, is no problem here: ``check``
    says it could not judge.
    """
    table = table or op_table()
    newest = table.xla_call_module_max_version
    defaults = _writer_defaults(mg)
    problems: set[str] = set()
    for node in _all_nodes(mg):
        names = table.attributes(node.op)
        if names is None:
            continue
        extra = sorted(
            a
            for a, value in node.attr.items()
            if not a.startswith("_") and a not in names and defaults.get((node.op, a)) != value
        )
        if extra:
            problems.add(f"{node.op} has attributes {', '.join(extra)} that it does not know")
        if node.op == "XlaCallModule" and node.attr["version"].i > newest:
            problems.add(
                f"XlaCallModule version {node.attr['version'].i} is newer than the "
                f"{newest} it runs (a JAX-backend export?)"
            )
    reads = table.stablehlo_max_version
    for written in {v for _, v in _stablehlo_versions(mg) if isinstance(v, tuple)}:
        if reads is not None and written > _version_tuple(reads):
            problems.add(f"{_NEWER_STABLEHLO}{_dotted(written)}, newer than the v{reads} it reads")
    return sorted(problems)


#: How :func:`newer_op_problems` begins a StableHLO finding, so its description gives its remedy.
_NEWER_STABLEHLO = "XlaCallModule holds StableHLO v"
#: From this XlaCallModule version on, the oldest any TensorFlow runs, ``module`` is a StableHLO
#: portable artifact (TensorFlow's ``kVersionStartStableHloCompatibility``).
_STABLEHLO_FROM = 4
#: MLIR bytecode's magic number, then a PrefixVarInt bytecode version, then the producer as a
#: null-terminated string, which StableHLO's serializer writes as ``StableHLO_vX.Y.Z``, its target
#: version (MLIR's BytecodeFormat.md; StableHLO's ``getPortableArtifactVersion``).
_MLIR_MAGIC = b"ML\xefR"
_PRODUCER = re.compile(rb"StableHLO_v(\d{1,9})\.(\d{1,9})\.(\d{1,9})")
_MAX_PRODUCER = 64


def _stablehlo_version(module: bytes) -> tuple[int, int, int]:
    r"""The StableHLO version a portable artifact (an ``XlaCallModule``'s ``module``) was written
    for, read from its MLIR bytecode header only: nothing is parsed beyond the producer string.

    Raises:
        ValueError: the bytes are no StableHLO portable artifact; the message says what they are.

    Example:
        >>> _stablehlo_version(b"ML\xefR\rStableHLO_v1.18.0\x00\x01...")
        (1, 18, 0)
        >>> _stablehlo_version(b"module {}")
        Traceback (most recent call last):
        ValueError: it is not MLIR bytecode (no MLIR magic number)
    """
    if not module.startswith(_MLIR_MAGIC):
        raise ValueError("it is not MLIR bytecode (no MLIR magic number)")
    at = len(_MLIR_MAGIC)
    if at >= len(module):
        raise ValueError("its MLIR bytecode ends after the magic number")
    first = module[at]
    # a PrefixVarInt: the trailing zero bits of its first byte count the bytes that follow
    at += 1 + ((first & -first).bit_length() - 1 if first else 8)
    end = module.find(b"\0", at, at + _MAX_PRODUCER + 1)
    if end < 0:
        raise ValueError(f"its MLIR bytecode has no producer string (of at most {_MAX_PRODUCER} bytes)")
    producer = module[at:end]
    match = _PRODUCER.fullmatch(producer)
    if match is None:
        shown = producer.decode("ascii", "backslashreplace")
        raise ValueError(f"its MLIR bytecode was produced by {shown!r}, not by StableHLO (StableHLO_vX.Y.Z)")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def _stablehlo_versions(mg: MetaGraphInfo) -> list[tuple[str, tuple[int, int, int] | str]]:
    """Each XlaCallModule node's name with its StableHLO version, or why it cannot be read
    (names repeat across the graph's functions)."""
    found: list[tuple[str, tuple[int, int, int] | str]] = []
    for node in _all_nodes(mg):
        if node.op != "XlaCallModule" or "version" not in node.attr or "module" not in node.attr:
            continue
        if node.attr["version"].i < _STABLEHLO_FROM:
            continue
        try:
            found.append((node.name, _stablehlo_version(node.attr["module"].s)))
        except ValueError as exc:
            found.append((node.name, str(exc)))
    return found


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _writer_defaults(mg: MetaGraphInfo) -> dict[tuple[str, str], Any]:
    """(op, attribute) -> its default, from the op list of the TensorFlow that wrote the graph."""
    op_list = mg.proto.meta_info_def.stripped_op_list
    return {
        (op.name, attr.name): attr.default_value
        for op in op_list.op
        for attr in op.attr
        if attr.HasField("default_value")
    }


def describe_newer_ops(problems: list[str], table: OpTable | None = None) -> str:
    """One line for :func:`newer_op_problems`' findings against ``table`` (by default the
    installed TensorFlow's), with what to do."""
    table = table or op_table()
    stablehlo = [p for p in problems if p.startswith(_NEWER_STABLEHLO)]
    if len(stablehlo) == len(problems):  # a JAX export whose ops this TensorFlow knows
        return (
            f"{table.name} cannot deserialize this graph's StableHLO: "
            + "; ".join(problems)
            + f"; export it with a JAX and Keras whose StableHLO {table.name} reads "
            f"(v{table.stablehlo_max_version} or older), or with Keras's TensorFlow backend "
            "(KERAS_BACKEND=tensorflow), or serve it with a newer TensorFlow that reads its StableHLO"
        )
    return (
        f"{table.name} cannot run ops of a newer one: "
        + "; ".join(problems)
        + "; re-export with Keras's TensorFlow backend (KERAS_BACKEND=tensorflow), "
        + (
            "or serve with a TensorFlow that knows these ops and reads this StableHLO"
            if stablehlo
            else "or serve with a TensorFlow that knows these ops"
        )
    )


def _check_op_versions(report: CheckReport, mg: MetaGraphInfo, table: OpTable) -> None:
    problems = newer_op_problems(mg, table)
    if problems:
        report.add("op_versions", "error", describe_newer_ops(problems, table))
    else:
        report.add("op_versions", "ok", f"every op's attributes are known to {table.name}")
    _check_stablehlo(report, mg, table)


def _check_stablehlo(report: CheckReport, mg: MetaGraphInfo, table: OpTable) -> None:
    """The XlaCallModule nodes' StableHLO beyond :func:`newer_op_problems`' errors: what could
    not be judged (an unreadable module, a table that does not know its StableHLO), else ok."""
    found = _stablehlo_versions(mg)
    unreadable = sorted({(name, why) for name, why in found if isinstance(why, str)})
    for name, why in unreadable[:20]:
        report.add(
            "stablehlo",
            "warning",
            f"cannot judge XlaCallModule {name!r}: {why}, so which StableHLO it needs is unknown; "
            "run it on the TensorFlow that will serve it",
        )
    versions = sorted({v for _, v in found if isinstance(v, tuple)})
    if not versions:
        return
    written = ", ".join(f"v{_dotted(v)}" for v in versions)
    reads = table.stablehlo_max_version
    if reads is None:
        report.add(
            "stablehlo",
            "warning",
            f"cannot judge the StableHLO of XlaCallModule ({written}): tfship's table for "
            f"{table.name} does not record which StableHLO it deserializes; run it on that "
            "TensorFlow to find out",
        )
    elif versions[-1] <= _version_tuple(reads):
        report.add(
            "stablehlo",
            "ok",
            f"XlaCallModule holds StableHLO {written}; {table.name} deserializes up to v{reads}",
        )


def _warmup_problems(data: PredictionLog, mg: MetaGraphInfo, index: int) -> list[str]:
    kind = data.WhichOneof("log_type")
    where = f"warmup record {index}"
    if kind not in ("predict_log", "classify_log", "regress_log"):
        return [] if kind else [f"{where} is empty"]
    request = getattr(data, kind).request
    key = request.model_spec.signature_name or "serving_default"
    if key not in mg.signatures:
        return [f"{where} names signature {key!r}, which does not exist"]
    sig = mg.signatures[key]
    if kind == "predict_log":
        unknown = sorted(set(request.inputs) - set(sig.inputs))
        missing = sorted(set(sig.inputs) - set(request.inputs))
        problems = [f"{where}: unknown input {k!r} for signature {key!r}" for k in unknown]
        problems += [f"{where}: missing input {k!r} of signature {key!r}" for k in missing]
        for k in sorted(set(request.inputs) & set(sig.inputs)):
            sent, wanted_dtype = request.inputs[k].dtype, sig.inputs[k].proto.dtype
            if sent != wanted_dtype:
                problems.append(
                    f"{where}: input {k!r} is {dtype_name(sent)}, signature {key!r} "
                    f"expects {dtype_name(wanted_dtype)}"
                )
        return problems
    wanted = CLASSIFY_METHOD if kind == "classify_log" else REGRESS_METHOD
    if sig.method_name != wanted:
        return [f"{where} is a {kind} but signature {key!r} is {sig.method_name}"]
    return []


def _check_warmup(report: CheckReport, path: pathlib.Path, mg: MetaGraphInfo) -> None:
    file = path / WARMUP_FILE
    if not file.is_file():
        report.add(
            "warmup",
            "info",
            "no warmup file (assets.extra/tf_serving_warmup_requests): the first requests will be slow",
        )
        return
    log_pb2 = protos().prediction_log_pb2
    problems: list[str] = []
    count = 0
    try:
        with file.open("rb") as stream:
            for count, record in enumerate(read_tfrecords(stream, where=str(WARMUP_FILE)), 1):
                log = log_pb2.PredictionLog()
                try:
                    log.ParseFromString(record)
                except Exception:  # DecodeError: the record is not a PredictionLog
                    problems.append(f"warmup record {count - 1} is not a PredictionLog")
                    continue
                problems.extend(_warmup_problems(log, mg, count - 1))
    except InputError as exc:
        problems.append(str(exc))
    if count > MAX_WARMUP_RECORDS:
        problems.append(f"{count} warmup records; TF Serving accepts at most {MAX_WARMUP_RECORDS}")
    for problem in problems[:20]:
        report.add("warmup", "error", problem)
    if not problems:
        report.add("warmup", "ok", f"warmup file valid ({count} record{'s' * (count != 1)})")


def check_saved_model(
    path: str | os.PathLike[str],
    *,
    tags: str = "serve",
    denylist: Iterable[str] = DEFAULT_DENYLIST,
    check_registered_ops: bool = True,
    target_tf: str | None = None,
) -> CheckReport:
    """Check an export for serving readiness with TF Serving.

    Args:
        path: the export (version) directory.
        tags: the tag-set TF Serving will load.
        denylist: op types that must not appear.
        check_registered_ops: also check every op is registered in the TensorFlow that will
            run the export and that its attributes are known there (read from a table tfship
            ships, not from TensorFlow, which is never imported).
        target_tf: that TensorFlow's version (``"2.15"``, ``"2.21.0"``); by default the one
            installed here, else the newest tfship has a table for. The report names it.

    Raises:
        InputError: tfship has no op table for ``target_tf``.
        ModelError: the path is missing or holds no readable SavedModel.
        SignatureNotFoundError: no MetaGraph has the tag-set.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> report = check_saved_model("m/1")
        >>> report.to_dict()["ready"]
        True
        >>> check_saved_model("m/1", target_tf="2.15").target_tf
        '2.15.1'
    """
    table = op_table(target_tf) if check_registered_ops else None  # an unknown target first
    root = pathlib.Path(path)
    info = read_saved_model(root)
    report = CheckReport(str(root))
    _check_layout(report, root, info)
    mg = info.meta_graph(tags)  # an unknown tag-set is bad input (exit 2), not a finding
    _check_signatures(report, mg)
    _check_restore(report, mg)
    _check_ops(report, mg, denylist, table)
    _check_warmup(report, root, mg)
    report.content_hash = content_hash(root)
    fingerprint = "present" if (root / "fingerprint.pb").is_file() else "absent"
    report.add("content_hash", "info", f"{report.content_hash} (fingerprint.pb {fingerprint})")
    return report


def render_check(report: CheckReport) -> str:
    """Human-readable findings in check order, and a verdict line."""
    lines = [f"{f.severity.upper():8} {f.check}: {f.message}" for f in report.findings]
    verdict = "NOT READY" if report.errors else "ready"
    lines.append(f"{report.path}: {verdict} ({len(report.errors)} errors, {len(report.warnings)} warnings)")
    return "\n".join(lines) + "\n"

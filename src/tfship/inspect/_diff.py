"""Compare two SavedModels as a client of TF Serving sees them; classify each change.

A change is *breaking* when a request that worked against A can fail against B, or a client
reading B's response can miss what it read from A: a removed tag-set, signature, input or
output; a new input (TF Serving requires every input); a changed dtype, encoding or method;
an input shape that accepts less, or an output shape that promises less; a new required
``tf.Example`` feature or a changed feature type. Everything else (new signatures and outputs,
new optional features, ops and variables) is *compatible* and reported for information, as are
changes to the signatures reserved to the loader (``__saved_model_init_op``), which no client
calls. The weights are compared from each ``variables.index``: the CRC-32C of every tensor's
bytes, so two versions with the same interface but retrained weights are told apart without
reading the data files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfship._wire import shape_text
from tfship.errors import VerdictError
from tfship.inspect._bundle import INDEX_FILE, BundleError, read_bundle
from tfship.inspect._describe import variables
from tfship.inspect._reader import MetaGraphInfo, SavedModelInfo, SignatureInfo
from tfship.inspect._tensorinfo import FeatureSpecEntry, TensorInfo


class BreakingChangeError(VerdictError):
    """Raised when ``diff`` finds a change that breaks existing clients (exit code 3)."""


@dataclass(frozen=True)
class Change:
    """One difference between two SavedModels.

    Attributes:
        kind: e.g. ``signature_removed``, ``input_dtype_changed``, ``feature_added``.
        where: ``tags/signature/inputs/key`` style location.
        breaking: whether existing clients can fail.
        detail: what changed, old and new.

    Example:
        >>> Change("output_added", "serve/predict/outputs/p", False, "new output").breaking
        False
    """

    kind: str
    where: str
    breaking: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "where": self.where, "breaking": self.breaking, "detail": self.detail}


@dataclass
class DiffReport:
    """All changes from SavedModel ``a`` to ``b``.

    Example:
        >>> report = DiffReport("m/1", "m/2")
        >>> report.add("input_added", "serve/serving_default/inputs/z", True, "new input")
        >>> report.add("output_added", "serve/serving_default/outputs/p", False, "new output")
        >>> [c.kind for c in report.breaking], report.to_dict()["breaking"]
        (['input_added'], True)
    """

    a: str
    b: str
    changes: list[Change] = field(default_factory=list)
    same_weights: bool | None = None

    @property
    def breaking(self) -> list[Change]:
        """The breaking changes only."""
        return [c for c in self.changes if c.breaking]

    def add(self, kind: str, where: str, breaking: bool, detail: str) -> None:
        """Record one change."""
        self.changes.append(Change(kind, where, breaking, detail))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (schema ``tfship.inspect.diff`` version 1)."""
        return {
            "schema": "tfship.inspect.diff",
            "version": 1,
            "a": self.a,
            "b": self.b,
            "breaking": bool(self.breaking),
            "same_weights": self.same_weights,
            "changes": [c.to_dict() for c in self.changes],
        }


def _accepts(general: tuple[int | None, ...] | None, specific: tuple[int | None, ...] | None) -> bool:
    """Whether every tensor of shape ``specific`` also fits ``general``."""
    if general is None:
        return True
    if specific is None or len(general) != len(specific):
        return False
    return all(g is None or g == s for g, s in zip(general, specific))


def _compare_tensor(report: DiffReport, where: str, old: TensorInfo, new: TensorInfo, is_input: bool) -> None:
    if old.dtype != new.dtype:
        report.add("dtype_changed", where, True, f"dtype {old.dtype} -> {new.dtype}")
    if old.encoding != new.encoding:
        report.add("encoding_changed", where, True, f"encoding {old.encoding} -> {new.encoding}")
    if old.shape != new.shape:
        # An input may widen (accept more); an output may narrow (promise more).
        ok = _accepts(new.shape, old.shape) if is_input else _accepts(old.shape, new.shape)
        report.add(
            "shape_changed", where, not ok, f"shape {shape_text(old.shape)} -> {shape_text(new.shape)}"
        )


def _compare_features(
    report: DiffReport,
    where: str,
    old: dict[str, FeatureSpecEntry] | None,
    new: dict[str, FeatureSpecEntry] | None,
) -> None:
    if old is None and new is None:
        return
    if old is None or new is None:
        report.add(
            "feature_spec_changed",
            where,
            True,
            "the signature " + ("no longer parses" if new is None else "now parses") + " tf.Example input",
        )
        return
    for name in sorted(set(old) | set(new)):
        at = f"{where}/features/{name}"
        if name not in new:
            report.add("feature_removed", at, False, "feature no longer read (extra ones are ignored)")
        elif name not in old:
            entry = new[name]
            report.add(
                "feature_added",
                at,
                entry.required,
                f"new {'required' if entry.required else 'optional'} {entry.kind} {entry.dtype} feature",
            )
        else:
            _compare_feature(report, at, old[name], new[name])


def _compare_feature(report: DiffReport, at: str, a: FeatureSpecEntry, b: FeatureSpecEntry) -> None:
    if (a.kind, a.dtype) != (b.kind, b.dtype):
        report.add("feature_type_changed", at, True, f"{a.kind} {a.dtype} -> {b.kind} {b.dtype}")
        return  # shape and default of a different kind of feature say nothing more
    if a.shape != b.shape:
        report.add("feature_shape_changed", at, True, f"shape {shape_text(a.shape)} -> {shape_text(b.shape)}")
    if a.default != b.default:
        report.add(
            "feature_default_changed",
            at,
            b.required and not a.required,
            f"default {a.default} -> {b.default}",
        )


def _compare_signature(report: DiffReport, where: str, a: SignatureInfo, b: SignatureInfo) -> None:
    if a.method_name != b.method_name:
        report.add("method_changed", where, True, f"method {a.method_name} -> {b.method_name}")
    for direction, old, new in (("inputs", a.inputs, b.inputs), ("outputs", a.outputs, b.outputs)):
        is_input = direction == "inputs"
        for key in sorted(set(old) | set(new)):
            at = f"{where}/{direction}/{key}"
            if key not in new:
                report.add(f"{direction[:-1]}_removed", at, True, f"{direction[:-1]} removed")
            elif key not in old:
                report.add(
                    f"{direction[:-1]}_added",
                    at,
                    is_input,
                    "new input: every request must now send it" if is_input else "new output",
                )
            else:
                _compare_tensor(report, at, old[key], new[key], is_input)
    _compare_features(report, where, a.feature_spec, b.feature_spec)


def _compare_internal(
    report: DiffReport, where: str, a: SignatureInfo | None, b: SignatureInfo | None
) -> None:
    """A loader's signature (``__saved_model_init_op``): every change is compatible."""
    note = "(run by the loader, never called by clients)"
    if b is None:
        report.add("internal_signature_removed", where, False, f"signature removed {note}")
    elif a is None:
        report.add("internal_signature_added", where, False, f"new signature {note}")
    else:
        inner = DiffReport(report.a, report.b)
        _compare_signature(inner, where, a, b)
        for change in inner.changes:
            report.add(change.kind, change.where, False, f"{change.detail} {note}")


def _compare_meta_graph(report: DiffReport, a: MetaGraphInfo, b: MetaGraphInfo) -> None:
    tags = ",".join(a.tags)
    for key in sorted(set(a.signatures) | set(b.signatures)):
        where = f"{tags}/{key}"
        if key.startswith("__"):
            _compare_internal(report, where, a.signatures.get(key), b.signatures.get(key))
        elif key not in b.signatures:
            report.add("signature_removed", where, True, "signature removed")
        elif key not in a.signatures:
            report.add("signature_added", where, False, "new signature")
        else:
            _compare_signature(report, where, a.signatures[key], b.signatures[key])
    added, removed = sorted(b.ops - a.ops), sorted(a.ops - b.ops)
    if added:
        report.add("ops_added", tags, False, "ops added: " + ", ".join(added))
    if removed:
        report.add("ops_removed", tags, False, "ops removed: " + ", ".join(removed))


def _compare_variables(report: DiffReport, a: SavedModelInfo, b: SavedModelInfo) -> None:
    va, vb = variables(a), variables(b)
    old = {v["name"]: v for v in va["items"]}
    new = {v["name"]: v for v in vb["items"]}
    if va["count"] != vb["count"] or va["bytes"] != vb["bytes"]:
        report.add(
            "variables_changed",
            "variables",
            False,
            f"{va['count']} variables ({va['bytes']} bytes) -> {vb['count']} variables ({vb['bytes']} bytes)",
        )
    changed = sorted(n for n in set(old) & set(new) if old[n] != new[n])
    for name in changed:
        report.add(
            "variable_changed",
            f"variables/{name}",
            False,
            f"{old[name]['dtype']} {old[name]['shape']} -> {new[name]['dtype']} {new[name]['shape']}",
        )


_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _checksums(info: SavedModelInfo) -> dict[str, tuple[int, int]] | None:
    """Tensor name -> (size, CRC-32C) from the index; ``None`` when there is none or it is unreadable."""
    index = info.path / "variables" / INDEX_FILE
    if not index.is_file():
        return None
    try:
        _, tensors = read_bundle(index)
    except BundleError:
        return None
    # TF2's object graph is stored beside the weights and changes with the functions saved
    return {t.name: (t.size, t.crc) for t in tensors if not t.sliced and t.name != _OBJECT_GRAPH}


def _compare_weights(report: DiffReport, a: SavedModelInfo, b: SavedModelInfo) -> None:
    old, new = _checksums(a), _checksums(b)
    if old is None or new is None:
        if old is not None or new is not None:
            missing = report.a if old is None else report.b
            detail = f"cannot compare weights: {missing} has no readable variables/{INDEX_FILE}"
            report.add("weights_unknown", "variables", False, detail)
        return
    common = sorted(set(old) & set(new))
    differ = [name for name in common if old[name] != new[name]]
    report.same_weights = not differ and set(old) == set(new)
    if differ:
        same = "same interface, " if not report.changes else ""
        listed = ", ".join(differ[:5]) + (", ..." if len(differ) > 5 else "")
        report.add(
            "weights_changed",
            "variables",
            False,
            f"{same}different weights: {len(differ)} of {len(common)} tensors differ ({listed})",
        )


def diff_saved_models(a: SavedModelInfo, b: SavedModelInfo) -> DiffReport:
    """Compare two SavedModels (read with ``read_saved_model``); ``a`` is the old one.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> z = [tf.TensorSpec([None, 3], name="x"), tf.TensorSpec([None, 3], name="z")]
        >>> m.g = tf.function(lambda x, z: {"y": x * z}, z, autograph=False)
        >>> tf.saved_model.save(m, "m/2", signatures=m.g)
        >>> from tfship.inspect import read_saved_model
        >>> r = diff_saved_models(read_saved_model("m/1"), read_saved_model("m/2"))
        >>> [(c.kind, c.where) for c in r.breaking]
        [('input_added', 'serve/serving_default/inputs/z')]
    """
    report = DiffReport(str(a.path), str(b.path))
    a_sets = {frozenset(mg.tags): mg for mg in a.meta_graphs}
    b_sets = {frozenset(mg.tags): mg for mg in b.meta_graphs}
    for tags in sorted(set(a_sets) | set(b_sets), key=sorted):
        name = ",".join(sorted(tags))
        if tags not in b_sets:
            report.add("tag_set_removed", name, True, "MetaGraph removed")
        elif tags not in a_sets:
            report.add("tag_set_added", name, False, "new MetaGraph")
        else:
            _compare_meta_graph(report, a_sets[tags], b_sets[tags])
    _compare_variables(report, a, b)
    _compare_weights(report, a, b)
    return report


def render_diff(report: DiffReport) -> str:
    """Human-readable diff: one line per change, breaking ones marked, and a verdict."""
    lines = [f"--- {report.a}", f"+++ {report.b}"]
    for c in report.changes:
        mark = "BREAKING  " if c.breaking else "compatible"
        lines.append(f"{mark}  {c.where}: {c.detail}")
    if not report.changes:
        same = "; the same weights" if report.same_weights else ""
        lines.append(f"no differences in signatures, features, ops or variables{same}")
    n = len(report.breaking)
    lines.append(f"{n} breaking change{'s' if n != 1 else ''}, {len(report.changes) - n} compatible")
    return "\n".join(lines) + "\n"

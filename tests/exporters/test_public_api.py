"""The public surface of tfship.exporters is exactly its __all__, and importing it is cheap."""

from __future__ import annotations

import subprocess
import sys

import tfship.exporters as exporters

PUBLIC = [
    "BestExporter",
    "CheckpointNotFoundError",
    "Decision",
    "EvalRecord",
    "ExportResult",
    "FinalExporter",
    "LatestExporter",
    "MetricNotFoundError",
    "Receiver",
    "SignatureReport",
    "VerificationError",
    "Version",
    "best_checkpoint",
    "both_receiver",
    "build_receiver",
    "export_model",
    "list_versions",
    "parsing_receiver",
    "raw_receiver",
    "read_eval_history",
    "resolve_mode",
    "run_final_exports",
    "standard_exporters",
    "verify_export",
]


def test_all_is_exactly_the_public_names() -> None:
    assert exporters.__all__ == PUBLIC
    assert sorted(exporters.__all__) == exporters.__all__
    for name in PUBLIC:
        assert getattr(exporters, name) is not None


def test_importing_the_package_does_not_import_tensorflow() -> None:
    code = "import sys, tfship.exporters; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_exporter_classes_are_estimator_exporters() -> None:
    from tfship._tf import estimator

    for name in ("BestExporter", "FinalExporter", "LatestExporter"):
        cls = getattr(exporters, name)
        assert issubclass(cls, estimator().Exporter)
        assert cls.__name__ == name

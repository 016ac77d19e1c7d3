"""describe_exports prints every version with its metadata, for ``tfship demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from export_helpers import parse_spec

from tfship.exporters import BestExporter, LatestExporter, parsing_receiver
from tfship.exporters._demo import describe_exports


def test_describe_exports_lists_versions_with_metadata(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    root = tmp_path / "export"
    receiver = parsing_receiver(parse_spec())
    best = BestExporter("best", receiver, metric="auc", verify=False)
    latest = LatestExporter("latest", receiver, verify=False)
    for exporter in (best, latest):
        exporter.export(
            classifier, str(root / exporter.name), checkpoints[10], {"auc": 0.75, "global_step": 10}, False
        )
    (root / "latest" / "42").mkdir()  # a version someone else put there
    lines: list[str] = []
    describe_exports(root, lines.append)
    best_version = best.decisions[0].version
    assert lines[0] == f"best  (ranks by auc, max; best 0.75 at version {best_version})"
    assert lines[1].startswith(f"  {best_version}  step 10  auc 0.75  signatures 4 (classification, predict")
    assert "receiver parsing" in lines[1]
    assert lines[2] == "latest"
    assert lines[3] == "  42  (no tfship.json: not written by tfship)"
    assert lines[4].startswith(f"  {latest.decisions[0].version}  step 10")
    empty: list[str] = []
    describe_exports(tmp_path / "nothing", empty.append)
    assert empty == [f"no export versions under {tmp_path / 'nothing'}"]

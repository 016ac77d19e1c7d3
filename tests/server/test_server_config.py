"""Version policies and model_config_list files, read as TF Serving reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfship.server import ModelConfig, ServerConfigError, VersionPolicy, read_config_file


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("latest", [5]),
        ("latest:2", [3, 5]),
        ("latest:0", [5]),
        ("all", [1, 3, 5]),
        ("specific:1,5", [1, 5]),
        ("specific:4", []),
    ],
)
def test_policy_choose(text: str, chosen: list[int]) -> None:
    assert VersionPolicy.parse(text).choose([5, 1, 3]) == chosen


@pytest.mark.parametrize("text", ["newest", "latest:x", "specific:", "all:2", ""])
def test_bad_policy_lists_the_choices(text: str) -> None:
    with pytest.raises(ServerConfigError, match="expected one of latest, latest:N, all"):
        VersionPolicy.parse(text)


def test_config_file_with_policies_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "models.config"
    path.write_text(
        """
        model_config_list {
          config { name: "a" base_path: "/srv/a" model_platform: "tensorflow"
                   model_version_policy { specific { versions: 3 versions: 1 } }
                   version_labels { key: "stable" value: 1 }
                   version_labels { key: "canary" value: 3 } }
          config { name: "b" base_path: "/srv/b" model_version_policy { latest { num_versions: 2 } } }
          config { name: "c" base_path: "/srv/c" model_version_policy { all {} } }
        }
        """
    )
    models = read_config_file(path)
    assert models == [
        ModelConfig("a", "/srv/a", VersionPolicy("specific", versions=(1, 3)), {"stable": 1, "canary": 3}),
        ModelConfig("b", "/srv/b", VersionPolicy("latest", num_versions=2)),
        ModelConfig("c", "/srv/c", VersionPolicy("all")),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'model_config_list { config { name: "a" base_path: "/x" } config { name: "a" base_path: "/y" } }',
            "Illegal to list model a multiple times in config list",
        ),
        (
            "model_config_list { config { name: ",
            r"^Error parsing text-format tensorflow\.serving\.ModelServerConfig: 1:36: .*; "
            r"Invalid protobuf file: '.*models\.config'$",
        ),
        ("", "expected a model_config_list"),
        (
            'model_config_list { config { name: "a" base_path: "/x" model_platform: "onnx" } }',
            "model_platform 'onnx' is not supported",
        ),
    ],
)
def test_bad_config_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "models.config"
    path.write_text(text)
    with pytest.raises(ServerConfigError, match=message):
        read_config_file(path)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match="cannot read model config file"):
        read_config_file(tmp_path / "nope.config")

"""tfship's own message classes against TensorFlow's and TF Serving's generated ones.

Every message tfship declares is filled with every field it declares (one instance per choice of
each oneof), once through the official class and once through tfship's, and the two must write
the same bytes and read each other's bytes to equal messages.
"""

from __future__ import annotations

import importlib
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfship._wire._messages import DESCRIPTOR_SET, descriptor_pool, descriptor_set_bytes, message_class

ROOT = Path(__file__).resolve().parents[2]

# The generated modules of TensorFlow 2.15 and TF Serving 2.15 that hold the reference classes.
OFFICIAL_MODULES = [
    "tensorflow.core.example.example_pb2",
    "tensorflow.core.framework.graph_debug_info_pb2",
    "tensorflow.core.protobuf.named_tensor_pb2",
    "tensorflow.core.protobuf.saved_model_pb2",
    "tensorflow.core.protobuf.tensor_bundle_pb2",
    "tensorflow_serving.apis.classification_pb2",
    "tensorflow_serving.apis.get_model_metadata_pb2",
    "tensorflow_serving.apis.get_model_status_pb2",
    "tensorflow_serving.apis.inference_pb2",
    "tensorflow_serving.apis.model_management_pb2",
    "tensorflow_serving.apis.predict_pb2",
    "tensorflow_serving.apis.prediction_log_pb2",
    "tensorflow_serving.apis.regression_pb2",
    "tensorflow_serving.apis.session_service_pb2",
    "tensorflow_serving.config.model_server_config_pb2",
    "grpc_health.v1.health_pb2",  # gRPC's health checking protocol, from grpcio-health-checking
]
# Fields of the official messages that tfship leaves out: they survive as unknown fields.
LEFT_OUT = {
    "tensorflow.serving.SessionRunRequest.options",
    "tensorflow.serving.SessionRunResponse.metadata",
}
# What TF Serving 2.16 to 2.20 added to the messages tfship declares. tensorflow-serving-api
# 2.15 has none of it: on that lane these are left out of the comparison and must survive its
# classes as unknown fields; on the newest lane its own classes have them.
ADDED_AFTER_2_15 = {
    "tensorflow.serving.PredictRequest.request_options",
    "tensorflow.serving.PredictRequest.RequestOptions",
    "tensorflow.serving.PredictStreamedOptions.return_single_response",
    "tensorflow.serving.LogMetadata.safe_aggregation_privacy_key",
    "tensorflow.serving.PerTaskSamplingConfig",
    "tensorflow.serving.LoggingConfig.custom_logging_config",
    "tensorflow.serving.SamplingConfig.per_task_sampling_configs",
}
ADDED_ENUM_VALUES_AFTER_2_15 = {
    "tensorflow.serving.PredictStreamedOptions.RequestState": {("CANCEL", 3)},
    # TensorFlow 2.21's float8, int2 and float4 types (and their reference types)
    "tensorflow.DataType": {
        (f"DT_{name}{ref}", number + offset)
        for name, number in [
            ("FLOAT8_E4M3FNUZ", 26),
            ("FLOAT8_E4M3B11FNUZ", 27),
            ("FLOAT8_E5M2FNUZ", 28),
            ("INT2", 31),
            ("UINT2", 32),
            ("FLOAT4_E2M1FN", 33),
        ]
        for ref, offset in (("", 0), ("_REF", 100))
    },
}
# Messages that tensorflow-serving-api does not ship: checked against classes built from TF Serving's sources.
SERVER_BUILT = [
    "tensorflow.serving.SSLConfig",
    "tensorflow.serving.MonitoringConfig",
    "tensorflow.serving.PrometheusConfig",
    "tensorflow.serving.BatchingParameters",
]


def _our_messages() -> list[str]:
    from google.protobuf import descriptor_pb2

    names: list[str] = []

    def walk(prefix: str, messages: Any) -> None:
        for message in messages:
            if not message.options.map_entry:
                names.append(f"{prefix}.{message.name}")
                walk(f"{prefix}.{message.name}", message.nested_type)

    for file in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set_bytes()).file:
        if not file.package.startswith("google."):
            walk(file.package, file.message_type)
    return sorted(names)


OURS = _our_messages()
# The Open Inference Protocol's messages: tritonclient's classes are their reference
# (tests/server/test_server_v2.py compares them in the clients' venv).
V2_NAMES = [name for name in OURS if name.startswith("inference.")]
OFFICIAL_NAMES = [
    name
    for name in OURS
    if name not in SERVER_BUILT
    and name not in V2_NAMES
    and not any(name.startswith(f"{built}.") for built in SERVER_BUILT)
]


def _added_after_2_15(full_name: str) -> bool:
    return any(full_name == added or full_name.startswith(f"{added}.") for added in ADDED_AFTER_2_15)


def _official_names() -> list[str]:
    """The messages the installed tensorflow-serving-api has: on 2.15, not those added since."""
    return [name for name in OFFICIAL_NAMES if _newer_reference() or not _added_after_2_15(name)]


@pytest.fixture(scope="module")
def official(tf: Any) -> Any:
    """The default pool, where TensorFlow's and TF Serving's generated classes live."""
    from google.protobuf import descriptor_pool as pools

    for module in OFFICIAL_MODULES:
        importlib.import_module(module)
    return pools.Default()


def _official_class(pool: Any, name: str) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def _reference_class(name: str) -> Any:
    """A class built field by field from TF Serving 2.15.1's own sources, for the messages
    tensorflow-serving-api does not ship (``_REFERENCE`` lists each one's fields in number order)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(
        name=f"tfship_{name.lower()}.proto", package="tensorflow.serving", syntax="proto3"
    )
    from google.protobuf import wrappers_pb2

    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    proto.dependency.append("google/protobuf/wrappers.proto")
    for message_name, message_fields in _REFERENCE[name]:
        message = proto.message_type.add(name=message_name)
        for field_name, number, kind, type_name in message_fields:
            label = repeated if kind == _REPEATED_INT64 else optional
            kind = 3 if kind == _REPEATED_INT64 else kind
            entry = message.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                entry.type_name = type_name if "." in type_name else f".tensorflow.serving.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.serving.{name}"))


_STRING, _BOOL, _MESSAGE, _REPEATED_INT64 = 9, 8, 11, -3
_INT64_VALUE, _BOOL_VALUE = ".google.protobuf.Int64Value", ".google.protobuf.BoolValue"
# ssl_config.proto, monitoring_config.proto and session_bundle_config.proto of TF Serving 2.15.1
_REFERENCE: dict[str, list[tuple[str, list[tuple[str, int, int, str | None]]]]] = {
    "SSLConfig": [
        (
            "SSLConfig",
            [
                ("server_key", 1, _STRING, None),
                ("server_cert", 2, _STRING, None),
                ("custom_ca", 3, _STRING, None),
                ("client_verify", 4, _BOOL, None),
            ],
        ),
    ],
    "MonitoringConfig": [
        ("PrometheusConfig", [("enable", 1, _BOOL, None), ("path", 2, _STRING, None)]),
        ("MonitoringConfig", [("prometheus_config", 1, _MESSAGE, "PrometheusConfig")]),
    ],
    # session_bundle_config.proto of TF Serving 2.15.1
    "BatchingParameters": [
        (
            "BatchingParameters",
            [
                ("max_batch_size", 1, _MESSAGE, _INT64_VALUE),
                ("batch_timeout_micros", 2, _MESSAGE, _INT64_VALUE),
                ("max_enqueued_batches", 3, _MESSAGE, _INT64_VALUE),
                ("num_batch_threads", 4, _MESSAGE, _INT64_VALUE),
                ("thread_pool_name", 5, _MESSAGE, ".google.protobuf.StringValue"),
                ("allowed_batch_sizes", 6, _REPEATED_INT64, None),
                ("pad_variable_length_inputs", 7, _BOOL, None),
                ("enable_large_batch_splitting", 8, _MESSAGE, _BOOL_VALUE),
                ("max_execution_batch_size", 9, _MESSAGE, _INT64_VALUE),
            ],
        ),
    ],
}


def _server_class(name: str) -> Any:
    top = name.split(".")[2]
    cls = _reference_class("MonitoringConfig" if top == "PrometheusConfig" else top)
    if top == "PrometheusConfig":
        return type(cls().prometheus_config)
    return cls


def test_the_descriptor_set_declares_what_tfship_reads_and_writes() -> None:
    assert len(OURS) >= 140
    for name in [
        "tensorflow.serving.PredictRequest",
        "tensorflow.SavedModel",
        "tensorflow.Example",
        "tensorflow.serving.PredictionLog",
        "tensorflow.serving.ModelServerConfig",
        "tensorflow.serving.SignatureDefMap",
        "tensorflow.serving.GetModelStatusResponse",
    ]:
        assert name in OURS


# ---------------------------------------------------------------- descriptors, field by field


def _cardinality(field: Any) -> str:
    """``repeated``, ``required`` or ``optional``: ``FieldDescriptor.label`` up to protobuf 6.x,
    ``is_repeated`` and ``is_required`` from 6.31 on (protobuf 7 removed ``label``)."""
    if hasattr(field, "is_repeated"):
        return "repeated" if field.is_repeated else "required" if field.is_required else "optional"
    named = {field.LABEL_REPEATED: "repeated", field.LABEL_REQUIRED: "required"}
    return named.get(field.label, "optional")


def _field_facts(field: Any, *, oneof_name: bool = True) -> tuple[Any, ...]:
    kind = field.message_type or field.enum_type
    oneof = field.containing_oneof
    where = None if oneof is None else oneof.name if oneof_name else "a oneof"
    # packing is checked on the bytes of the rich instances below
    return (field.name, field.type, _cardinality(field), kind.full_name if kind else None, where)


def _newer_reference() -> bool:
    """Whether the official classes are a newer TensorFlow's than 2.15 (the run lane).

    Newer ones add fields and enum values, which tfship's classes keep as unknown fields and
    plain numbers, and rename a oneof (TensorFlow 2.21's ``has_length_hack``), a name that is
    not on the wire: against them, what tfship declares must be part of theirs.
    """
    from importlib.metadata import version

    return not version("tensorflow").startswith("2.15.")


def _in_reference(name: str) -> bool:
    """Whether the reference classes declare a message or field tfship declares."""
    return _newer_reference() or not _added_after_2_15(name)


def _values_of(enum: Any) -> list[tuple[str, int]]:
    return sorted(((v.name, v.number) for v in enum.values), key=lambda pair: pair[1])


def _compare_descriptors(ours: Any, theirs: Any, *, newer: bool = False) -> list[str]:
    problems = []
    for field in ours.fields:
        if not newer and _added_after_2_15(field.full_name):
            continue
        other = theirs.fields_by_number.get(field.number)
        if other is None and not _in_reference(field.full_name):
            continue
        facts = _field_facts(field, oneof_name=not newer)
        if other is None or facts != _field_facts(other, oneof_name=not newer):
            problems.append(
                f"{ours.full_name}.{field.name}: {facts} vs {_field_facts(other) if other else None}"
            )
    for other in theirs.fields:
        if other.number not in ours.fields_by_number and other.full_name not in LEFT_OUT and not newer:
            problems.append(f"{other.full_name} is missing")
    for enum in ours.enum_types:
        mine, official = set(_values_of(enum)), set(_values_of(theirs.enum_types_by_name[enum.name]))
        if not newer:
            mine -= ADDED_ENUM_VALUES_AFTER_2_15.get(enum.full_name, set())
        if mine != official and not (newer and mine <= official):
            problems.append(f"{enum.full_name}: {sorted(mine ^ official)} differ")
    return problems


def test_every_declared_field_matches_the_official_descriptor(official: Any) -> None:
    problems = []
    for name in _official_names():
        ours = descriptor_pool().FindMessageTypeByName(name)
        problems += _compare_descriptors(ours, official.FindMessageTypeByName(name), newer=_newer_reference())
    assert problems == []


def test_what_is_left_out_is_exactly_the_session_run_options_and_metadata(official: Any) -> None:
    left_out = set()
    for name in _official_names():
        ours = descriptor_pool().FindMessageTypeByName(name)
        left_out |= {
            field.full_name
            for field in official.FindMessageTypeByName(name).fields
            if field.number not in ours.fields_by_number
        }
    if _newer_reference():  # and the fields added since 2.15
        assert LEFT_OUT <= left_out
    else:
        assert left_out == LEFT_OUT


def test_top_level_enums_match(official: Any) -> None:
    for name in [
        "tensorflow.DataType",
        "tensorflow.FullTypeId",
        "tensorflow.error.Code",
        "tensorflow.VariableSynchronization",
        "tensorflow.VariableAggregation",
        "tensorflow.serving.ModelType",
    ]:
        ours = _values_of(descriptor_pool().FindEnumTypeByName(name))
        theirs = _values_of(official.FindEnumTypeByName(name))
        if _newer_reference():  # values added since 2.15 read as plain numbers
            assert set(ours) <= set(theirs)
        else:
            added = ADDED_ENUM_VALUES_AFTER_2_15.get(name, set())
            assert [value for value in ours if value not in added] == theirs


def test_the_messages_the_rest_api_prints_whole_have_no_scalar_with_presence() -> None:
    # tfship serve writes model status and metadata with protobuf's JSON printer, unset fields
    # included as TF Serving prints them. protobuf 5.26 renamed that option and stopped printing
    # unset scalars with presence (proto2 optional); without any, every protobuf prints the same.
    todo = [
        message_class(name).DESCRIPTOR
        for name in (
            "tensorflow.serving.GetModelStatusResponse",
            "tensorflow.serving.ModelSpec",
            "tensorflow.serving.SignatureDefMap",
        )
    ]
    seen: set[str] = set()
    found = []
    while todo:
        descriptor = todo.pop()
        if descriptor.full_name in seen:
            continue
        seen.add(descriptor.full_name)
        for field in descriptor.fields:
            if field.message_type is not None:
                todo.append(field.message_type)
            elif field.has_presence and field.containing_oneof is None:
                found.append(field.full_name)
    assert found == [] and len(seen) > 10


@pytest.mark.parametrize("name", SERVER_BUILT)
def test_the_server_config_messages_match_tf_servings_sources(name: str) -> None:
    assert (
        _compare_descriptors(descriptor_pool().FindMessageTypeByName(name), _server_class(name).DESCRIPTOR)
        == []
    )


@pytest.mark.slow
def test_every_method_of_our_services_reaches_tf_servings_own_servicers(official: Any) -> None:
    """A real gRPC server with TF Serving's generated servicers, called on our methods' paths."""
    from concurrent import futures

    import grpc
    from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

    seen: list[str] = []

    def answer(method: Any) -> Any:
        def handler(request: Any, context: Any) -> Any:
            seen.append(request.DESCRIPTOR.full_name)
            return _official_class(official, method.output_type.full_name)()

        return handler

    services = {
        "tensorflow.serving.PredictionService": (prediction_service_pb2_grpc, "PredictionService"),
        "tensorflow.serving.ModelService": (model_service_pb2_grpc, "ModelService"),
    }
    server = grpc.server(futures.ThreadPoolExecutor(2))
    calls = []
    for full_name, (module, short) in services.items():
        service = descriptor_pool().FindServiceByName(full_name)
        servicer = getattr(module, f"{short}Servicer")()
        for method in service.methods:
            setattr(servicer, method.name, answer(method))
            calls.append(method)
        getattr(module, f"add_{short}Servicer_to_server")(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for method in calls:
                request_cls = message_class(method.input_type.full_name)
                response_cls = message_class(method.output_type.full_name)
                call = channel.unary_unary(
                    f"/{method.containing_service.full_name}/{method.name}",
                    request_serializer=request_cls.SerializeToString,
                    response_deserializer=response_cls.FromString,
                )
                assert type(call(request_cls(), timeout=10)) is response_cls
    finally:
        server.stop(None)
    assert seen == [method.input_type.full_name for method in calls]
    assert [m.name for m in calls] == [
        "Classify",
        "Regress",
        "Predict",
        "MultiInference",
        "GetModelMetadata",
        "GetModelStatus",
        "HandleReloadConfigRequest",
    ]


# ---------------------------------------------------------------- rich instances, byte for byte

_SCALARS: dict[str, list[Any]] = {
    "int32": [-7, 2**31 - 1],
    "int64": [-(2**40), 2**62],
    "sint64": [-12345, 2**50],
    "uint32": [2**31 + 5, 1],
    "uint64": [2**63 + 9, 3],
    "fixed64": [2**60 + 1, 2],
    "fixed32": [2**32 - 1, 4],
    "float": [1.5, -0.25],
    "double": [-2.25, 1e300],
    "bool": [True, True],
    "string": ["n\u00e9ron", "b"],
    "bytes": [b"\x00\xff", b"z"],
}
_TYPE_NAMES = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    18: "sint64",
}


def _values(field: Any) -> list[Any]:
    if field.enum_type is not None:
        numbers = [v.number for v in field.enum_type.values if v.number != 0]
        return [numbers[-1], numbers[0]]
    return _SCALARS[_TYPE_NAMES[field.type]]


def _fill(message: Any, descriptor: Any, variant: int, depth: int) -> None:
    """Set every field of ``descriptor`` on ``message`` (a class of either kind, same names)."""
    chosen = {oneof.name: oneof.fields[variant % len(oneof.fields)].name for oneof in descriptor.oneofs}
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if (oneof is not None and chosen[oneof.name] != field.name) or not _in_reference(field.full_name):
            continue
        if _added_after_2_15(field.full_name) and not _newer_reference():
            continue  # the 2.15 class has no such field: test_fields_added_after_2_15_survive_...
        _fill_field(message, field, variant, depth)


def _fill_field(message: Any, field: Any, variant: int, depth: int) -> None:
    target = field.message_type
    if target is not None and target.GetOptions().map_entry:
        key_field, value_field = target.fields_by_name["key"], target.fields_by_name["value"]
        entries = getattr(message, field.name)
        for key in _values(key_field):
            if value_field.message_type is None:
                entries[key] = _values(value_field)[variant % 2]
            elif depth > 0:
                _fill(entries[key], value_field.message_type, variant, depth - 1)
        return
    if target is not None:
        if depth == 0:
            return
        if _cardinality(field) == "repeated":
            for step in range(2):
                _fill(getattr(message, field.name).add(), target, variant + step, depth - 1)
        else:
            child = getattr(message, field.name)
            child.SetInParent()
            _fill(child, target, variant, depth - 1)
        return
    if _cardinality(field) == "repeated":
        getattr(message, field.name).extend(_values(field))
    else:
        setattr(message, field.name, _values(field)[variant % 2])


def _variants(descriptor: Any, depth: int = 3) -> int:
    widest = max([len(oneof.fields) for oneof in descriptor.oneofs] + [2])
    if depth == 0:
        return widest
    nested = [
        _variants(field.message_type, depth - 1)
        for field in descriptor.fields
        if field.message_type is not None and not field.message_type.GetOptions().map_entry
    ]
    return max([widest] + nested)


def _pairs(official: Any, name: str) -> Iterator[tuple[Any, Any]]:
    ours_cls = message_class(name)
    theirs_cls = _official_class(official, name) if official is not None else _server_class(name)
    descriptor = ours_cls.DESCRIPTOR
    for variant in range(_variants(descriptor)):
        ours, theirs = ours_cls(), theirs_cls()
        _fill(ours, descriptor, variant, depth=3)
        _fill(theirs, descriptor, variant, depth=3)
        yield ours, theirs


def _check_pair(ours: Any, theirs: Any) -> None:
    """Same bytes, and each side reads the other's bytes to an equal message."""
    wire = theirs.SerializeToString(deterministic=True)
    assert ours.SerializeToString(deterministic=True) == wire
    parsed = type(ours).FromString(wire)
    assert parsed == ours
    assert parsed.SerializeToString(deterministic=True) == wire
    back = type(theirs).FromString(ours.SerializeToString())
    assert back == theirs
    assert back.SerializeToString(deterministic=True) == wire


# On the 2.15 lane the messages TF Serving added since are not in the official package: the run
# lane compares them, and test_fields_added_after_2_15_survive_the_classes_of_2_15 covers them here.
@pytest.mark.parametrize("name", _official_names())
def test_rich_instances_write_the_same_bytes_and_read_each_other(official: Any, name: str) -> None:
    for ours, theirs in _pairs(official, name):
        assert theirs.ByteSize() > 0 or not ours.DESCRIPTOR.fields
        _check_pair(ours, theirs)


@pytest.mark.parametrize("name", SERVER_BUILT)
def test_config_messages_write_the_bytes_of_tf_servings_sources(name: str) -> None:
    for ours, theirs in _pairs(None, name):
        _check_pair(ours, theirs)


def test_a_proto2_field_set_to_zero_is_written_as_tensorflow_writes_it(official: Any) -> None:
    name = "tensorflow.GraphDebugInfo.FileLineCol"
    ours, theirs = message_class(name)(line=0, func=""), _official_class(official, name)(line=0, func="")
    assert ours.SerializeToString() == theirs.SerializeToString() == b"\x10\x00\x22\x00"
    assert ours.HasField("line") and not ours.HasField("col")


def test_text_format_reads_the_same_config(official: Any) -> None:
    from google.protobuf import text_format

    text = (
        'model_config_list { config { name: "penguins" base_path: "/models/penguins" '
        'model_platform: "tensorflow" model_version_policy { specific { versions: 1 versions: 2 } } '
        'version_labels { key: "stable" value: 1 } } }'
    )
    name = "tensorflow.serving.ModelServerConfig"
    ours = text_format.Parse(text, message_class(name)())
    theirs = text_format.Parse(text, _official_class(official, name)())
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    assert text_format.MessageToString(ours) == text_format.MessageToString(theirs)


# ---------------------------------------------------------------- unknown fields


def test_fields_added_after_2_15_survive_the_classes_of_2_15(official: Any) -> None:
    """A 2.20 client's request read by a 2.15 server (or stub) keeps the new fields it does not know."""
    request = message_class("tensorflow.serving.PredictRequest")()
    request.model_spec.name = "penguins"
    options = request.request_options
    options.client_id = b"shop-7"
    options.deterministic_mode = options.FIXED_DECODER_SLOT
    options.return_stoptokens.extend([2, 5])
    options.max_cache_length = 4096
    request.predict_streamed_options.request_state = request.predict_streamed_options.CANCEL
    request.predict_streamed_options.return_single_response = True
    log = message_class("tensorflow.serving.PredictionLog")()
    log.log_metadata.safe_aggregation_privacy_key = -42
    log.predict_log.request.CopyFrom(request)
    wire = log.SerializeToString(deterministic=True)
    theirs = _official_class(official, "tensorflow.serving.PredictionLog").FromString(wire)
    assert theirs.predict_log.request.model_spec.name == "penguins"
    assert theirs.SerializeToString(deterministic=True) == wire
    ours = message_class("tensorflow.serving.PredictionLog").FromString(wire)
    assert ours.predict_log.request.request_options.client_id == b"shop-7"
    assert ours.predict_log.request.HasField("request_options")
    assert list(ours.predict_log.request.request_options.return_stoptokens) == [2, 5]
    assert ours.log_metadata.safe_aggregation_privacy_key == -42


def test_left_out_fields_survive_a_round_trip_through_tfships_classes(official: Any) -> None:
    log = _official_class(official, "tensorflow.serving.PredictionLog")()
    run = log.session_run_log
    run.request.model_spec.name = "penguins"
    run.request.fetch.append("probabilities:0")
    run.request.options.timeout_in_ms = 2500
    run.request.options.trace_level = 3
    run.request.tensor_name_is_alias = True
    run.response.tensor.add(name="probabilities").tensor.float_val.extend([0.25, 0.75])
    run.response.metadata.step_stats.dev_stats.add(device="/cpu:0")
    wire = log.SerializeToString()

    ours = message_class("tensorflow.serving.PredictionLog").FromString(wire)
    assert ours.WhichOneof("log_type") == "session_run_log"
    assert ours.session_run_log.request.fetch == ["probabilities:0"]
    assert not hasattr(ours.session_run_log.request, "options")
    ours.session_run_log.request.model_spec.signature_name = "serving_default"  # an edit keeps them too
    back = type(log).FromString(ours.SerializeToString())
    assert back.session_run_log.request.options.timeout_in_ms == 2500
    assert back.session_run_log.request.options.trace_level == 3
    assert back.session_run_log.response.metadata.step_stats.dev_stats[0].device == "/cpu:0"
    assert back.session_run_log.request.model_spec.signature_name == "serving_default"
    back.session_run_log.request.model_spec.signature_name = ""
    assert back == log


def test_a_field_neither_side_knows_survives_byte_for_byte() -> None:
    request = message_class("tensorflow.serving.PredictRequest")()
    request.model_spec.name = "penguins"
    future_field = b"\xba\x3e\x03new"  # field 999, length-delimited
    wire = request.SerializeToString() + future_field
    assert message_class("tensorflow.serving.PredictRequest").FromString(wire).SerializeToString() == wire


# ---------------------------------------------------------------- real files


def _saved_models(tiny_model: Any) -> list[Path]:
    exports = [tiny_model.export("best") / "saved_model.pb"]
    return exports + sorted((ROOT / "tests" / "fixtures" / "newtf").glob("*/1/saved_model.pb"))


@pytest.mark.slow
def test_real_saved_models_parse_and_write_back_identical_bytes(official: Any, tiny_model: Any) -> None:
    from google.protobuf import text_format

    ours_cls = message_class("tensorflow.SavedModel")
    theirs_cls = _official_class(official, "tensorflow.SavedModel")
    paths = _saved_models(tiny_model)
    assert len(paths) > 1
    for path in paths:
        data = path.read_bytes()
        ours, theirs = ours_cls.FromString(data), theirs_cls.FromString(data)
        assert ours.meta_graphs[0].meta_info_def.tags
        assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
        assert theirs_cls.FromString(ours.SerializeToString()) == theirs
        if path.is_relative_to(tiny_model.workdir):  # written by this TensorFlow, deterministically
            assert ours.SerializeToString(deterministic=True) == data
            signature = ours.meta_graphs[0].signature_def["serving_default"]
            assert signature.method_name == "tensorflow/serving/classify"
            # saved_model.pbtxt: the same model in text format reads to the same bytes
            text = text_format.MessageToString(theirs)
            from_text = text_format.Parse(text, ours_cls(), descriptor_pool=descriptor_pool())
            assert from_text.SerializeToString(deterministic=True) == data


@pytest.mark.slow
def test_warmup_records_of_an_export_read_with_tfships_classes(
    official: Any, tiny_model: Any, tmp_path: Path
) -> None:
    from tfship._wire import read_tfrecord_file
    from tfship.inspect import example_request, read_saved_model, write_warmup

    info = read_saved_model(tiny_model.export("best"))
    signatures = sorted(info.meta_graphs[0].signatures)
    requests = [example_request(info, signature=key, batch=2) for key in signatures]
    warmup = tmp_path / "tf_serving_warmup_requests"
    assert write_warmup(warmup, requests) == len(signatures) > 1
    theirs_cls = _official_class(official, "tensorflow.serving.PredictionLog")
    kinds = set()
    for record in read_tfrecord_file(warmup):
        ours = message_class("tensorflow.serving.PredictionLog").FromString(record)
        kinds.add(ours.WhichOneof("log_type"))
        assert ours.WhichOneof("log_type") == theirs_cls.FromString(record).WhichOneof("log_type")
        assert ours.SerializeToString(deterministic=True) == record  # written with maps sorted
    assert len(kinds) > 1


# ---------------------------------------------------------------- two kinds in one process


def test_both_kinds_of_class_coexist_with_tensorflow_imported(tf: Any, official: Any) -> None:
    from google.protobuf import descriptor_pool as pools

    theirs = tf.make_tensor_proto([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float32)
    ours_cls = message_class("tensorflow.TensorProto")
    ours = ours_cls.FromString(theirs.SerializeToString())
    assert type(ours) is not type(theirs) and ours.DESCRIPTOR.full_name == theirs.DESCRIPTOR.full_name
    assert not isinstance(ours, type(theirs))
    # TensorFlow's default pool still answers with its own descriptor, and TensorFlow reads our bytes
    assert pools.Default().FindMessageTypeByName("tensorflow.TensorProto") is theirs.DESCRIPTOR
    assert descriptor_pool().FindMessageTypeByName("tensorflow.TensorProto") is ours.DESCRIPTOR
    ours.float_val[:] = []
    ours.tensor_content = struct.pack("<4f", 5, 6, 7, 8)
    again = type(theirs).FromString(ours.SerializeToString())
    assert tf.make_ndarray(again).tolist() == [[5.0, 6.0], [7.0, 8.0]]
    # an Any packed by our classes names the same type TensorFlow Serving unpacks
    signatures = message_class("tensorflow.serving.SignatureDefMap")()
    signatures.signature_def["serving_default"].method_name = "tensorflow/serving/predict"
    response = message_class("tensorflow.serving.GetModelMetadataResponse")()
    response.metadata["signature_def"].Pack(signatures)
    theirs_response = _official_class(official, "tensorflow.serving.GetModelMetadataResponse").FromString(
        response.SerializeToString()
    )
    unpacked = _official_class(official, "tensorflow.serving.SignatureDefMap")()
    assert theirs_response.metadata["signature_def"].Unpack(unpacked)
    assert unpacked.signature_def["serving_default"].method_name == "tensorflow/serving/predict"


def test_loading_tfships_classes_does_not_import_tensorflow() -> None:
    code = (
        "import sys\nfrom tfship._wire._messages import message_class\n"
        "message_class('tensorflow.serving.PredictRequest')()\nprint('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_unknown_name_is_refused_naming_the_closest() -> None:
    with pytest.raises(ValueError, match="did you mean tensorflow.serving.PredictRequest"):
        message_class("tensorflow.serving.PredictRequst")
    name = "tensorflow.serving.PredictRequest"
    assert message_class(name) is message_class(name)


def test_a_missing_descriptor_set_is_named_and_says_to_reinstall(tmp_path: Path) -> None:
    package = ROOT / "src" / "tfship"
    shutil.copytree(package, tmp_path / "tfship", ignore=shutil.ignore_patterns("__pycache__", "*.pb"))
    code = (
        "from tfship.errors import TfshipError\nfrom tfship._wire._messages import message_class\n"
        "try:\n    message_class('tensorflow.serving.ModelSpec')\n"
        "except TfshipError as exc:\n    print(exc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
    )
    assert out.stdout.strip() == (
        f"tfship's message descriptors are missing ({DESCRIPTOR_SET} in tfship._wire): reinstall tfship"
    )


def test_one_class_per_message_across_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        classes = set(pool.map(lambda _: message_class("tensorflow.serving.ModelSpec"), range(64)))
    assert len(classes) == 1


# ---------------------------------------------------------------- the shipped descriptor set


@pytest.mark.slow
def test_the_shipped_descriptor_set_is_compiled_from_the_sources(tmp_path: Path) -> None:
    fresh = tmp_path / "descriptors.pb"
    subprocess.run(
        ["make", "-s", "protos", f"PROTOS_OUT={fresh}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    shipped = (ROOT / "src" / "tfship" / "_wire" / DESCRIPTOR_SET).read_bytes()
    assert fresh.read_bytes() == shipped, "the .proto sources changed: run `make protos` and commit"
    assert descriptor_set_bytes() == shipped


def test_tfships_client_talks_to_a_server_on_tf_servings_own_servicers(tf: Any) -> None:
    """ServingClient over gRPC (tfship's classes, TF Serving's method paths) against a server
    built from TF Serving's generated servicers and classes: every answer read the same."""
    from concurrent import futures

    import grpc
    import numpy as np
    from tensorflow_serving.apis import (
        classification_pb2,
        get_model_metadata_pb2,
        get_model_status_pb2,
        model_management_pb2,
        model_service_pb2_grpc,
        predict_pb2,
        prediction_service_pb2_grpc,
    )
    from tensorflow_serving.config import model_server_config_pb2

    from tfship.serve_client import InvalidInputError, ServingClient

    reloaded: list[list[str]] = []

    class Prediction(prediction_service_pb2_grpc.PredictionServiceServicer):  # type: ignore[misc]
        def Predict(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC names
            assert type(request) is predict_pb2.PredictRequest
            response = predict_pb2.PredictResponse()
            response.model_spec.CopyFrom(request.model_spec)
            response.model_spec.version.value = 3
            x = tf.make_ndarray(request.inputs["x"])
            response.outputs["y"].CopyFrom(tf.make_tensor_proto(x * 2))
            return response

        def Classify(self, request: Any, context: Any) -> Any:  # noqa: N802
            response = classification_pb2.ClassificationResponse()
            response.model_spec.CopyFrom(request.model_spec)
            for example in request.input.example_list.examples:
                island = example.features.feature["island"].bytes_list.value[0].decode()
                response.result.classifications.add().classes.add(label=island, score=0.75)
            return response

        def GetModelMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
            signatures = get_model_metadata_pb2.SignatureDefMap()
            sig = signatures.signature_def["serving_default"]
            sig.method_name = "tensorflow/serving/predict"
            for key, name in (("x", "x:0"), ("y", "y:0")):
                info = (sig.inputs if key == "x" else sig.outputs)[key]
                info.name, info.dtype = name, 1
                info.tensor_shape.dim.add(size=-1)
                info.tensor_shape.dim.add(size=2)
            response = get_model_metadata_pb2.GetModelMetadataResponse()
            response.model_spec.CopyFrom(request.model_spec)
            response.model_spec.version.value = 3
            response.metadata["signature_def"].Pack(signatures)
            return response

    class Model(model_service_pb2_grpc.ModelServiceServicer):  # type: ignore[misc]
        def GetModelStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
            response = get_model_status_pb2.GetModelStatusResponse()
            response.model_version_status.add(
                version=3, state=get_model_status_pb2.ModelVersionStatus.AVAILABLE
            )
            return response

        def HandleReloadConfigRequest(self, request: Any, context: Any) -> Any:  # noqa: N802
            reloaded.append([c.name for c in request.config.model_config_list.config])
            return model_management_pb2.ReloadConfigResponse()

    server = grpc.server(futures.ThreadPoolExecutor(2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Prediction(), server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(Model(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with ServingClient(f"127.0.0.1:{port}", timeout=30) as client:
            result = client.predict("m", {"x": np.array([[1.0, 2.5]], np.float32)})
            np.testing.assert_array_equal(result.outputs["y"], np.array([[2.0, 5.0]], np.float32))
            assert (result.model_spec.name, result.model_spec.version) == ("m", 3)
            assert list(client.metadata("m").signatures["serving_default"].inputs) == ["x"]
            assert [(s.version, s.state) for s in client.status("m")] == [(3, "AVAILABLE")]
            assert client.classify("m", [{"island": "Dream"}]).classes == [[("Dream", 0.75)]]
            # a tf.train.Example of TensorFlow's class crosses by its bytes; another message is
            # refused, never read as an Example
            example = tf.train.Example()
            example.features.feature["island"].bytes_list.value.append(b"Torgersen")
            assert client.classify("m", [example]).classes == [[("Torgersen", 0.75)]]
            with pytest.raises(InvalidInputError, match="got a tensorflow.TensorProto message"):
                client.classify("m", [tf.make_tensor_proto(1.0)])
            # a config of TF Serving's own class crosses by its bytes
            config = model_server_config_pb2.ModelServerConfig()
            config.model_config_list.config.add(name="penguins", base_path="/models/penguins")
            client.reload_config(config)
            client.reload_config([{"name": "iris", "base_path": "/models/iris"}])
    finally:
        server.stop(None)
    assert reloaded == [["penguins"], ["iris"]]

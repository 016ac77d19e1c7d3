"""Run a plan of Open Inference Protocol calls with tritonclient's four clients (HTTP and gRPC,
blocking and asyncio) and the kserve SDK's two (REST and gRPC, asyncio; for the calls marked
``kserve``), in a venv of their own where their pins hold.

Usage: ``python v2_clients.py PLAN.json INPUTS.npz OUT_DIR triton|kserve``. The plan names the REST and gRPC
addresses and the calls; each input array is an entry of INPUTS.npz. Every answer is written to
``OUT_DIR/outputs-<family>.npz`` (arrays, keyed ``<call>/<client>/<output>``) and
``OUT_DIR/results-<family>.json``
(per call and client: the output keys, the echoed id, or the error's text), for the test to
compare with TF Serving's Predict on the same server. Nothing of tfship is imported here.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

CLIENTS = ("http", "grpc", "http_aio", "grpc_aio")


def _module(client: str) -> Any:
    """tritonclient's module for a client (imported here: kserve cannot share its process)."""
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    return {"http": httpclient, "grpc": grpcclient, "http_aio": httpclient, "grpc_aio": grpcclient}[client]


def _inputs(client: str, call: dict[str, Any], arrays: Any) -> list[Any]:
    module = _module(client)
    binary = call.get("binary", True)
    built = []
    for spec in call["inputs"]:
        value = arrays[spec["array"]]
        if spec["datatype"] == "BF16":
            value = value.astype(ml_dtypes.bfloat16)
        shape = spec.get("shape", list(value.shape))
        tensor = module.InferInput(spec["name"], shape, spec["datatype"])
        if client.startswith("http"):
            tensor.set_data_from_numpy(value, binary_data=spec.get("binary", binary))
        else:
            tensor.set_data_from_numpy(value)
        built.append(tensor)
    return built


def _outputs(client: str, call: dict[str, Any]) -> list[Any] | None:
    if call.get("outputs") is None:
        return None
    module = _module(client)
    if client.startswith("http"):
        return [module.InferRequestedOutput(n, binary_data=call.get("binary", True)) for n in call["outputs"]]
    return [module.InferRequestedOutput(n) for n in call["outputs"]]


def _kwargs(client: str, call: dict[str, Any], arrays: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model_name": call["model"],
        "inputs": _inputs(client, call, arrays),
        "outputs": _outputs(client, call),
        "request_id": call["name"],
    }
    if call.get("version"):
        kwargs["model_version"] = call["version"]
    if call.get("parameters"):
        kwargs["parameters"] = call["parameters"]
    return kwargs


def _record(
    result: Any, client: str, call: dict[str, Any], out: dict[str, Any], arrays: dict[str, Any]
) -> None:
    response = result.get_response()
    echoed = response["id"] if client.startswith("http") else response.id
    names = (
        [o["name"] for o in response["outputs"]]
        if client.startswith("http")
        else [o.name for o in response.outputs]
    )
    keys = {}
    for name in names:
        key = f"{call['name']}/{client}/{name}"
        value = result.as_numpy(name)
        if value.dtype == ml_dtypes.bfloat16:
            value = value.astype(np.float32)
        if value.dtype.kind == "O":  # JSON BYTES come back as str, binary ones as bytes
            value = np.array(
                [v.encode() if isinstance(v, str) else v for v in value.reshape(-1)], object
            ).reshape(value.shape)
        arrays[key] = value
        keys[name] = key
    out["id"] = echoed
    out["outputs"] = keys
    version = response["model_version"] if client.startswith("http") else response.model_version
    out["version"] = version


def _health(client: Any, plan: dict[str, Any]) -> dict[str, Any]:
    models = {}
    for model in plan["models"]:
        metadata = client.get_model_metadata(model["name"], model.get("version", ""))
        if not isinstance(metadata, dict):
            metadata = {
                "name": metadata.name,
                "versions": list(metadata.versions),
                "platform": metadata.platform,
                "inputs": [
                    {"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in metadata.inputs
                ],
                "outputs": [
                    {"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in metadata.outputs
                ],
            }
        models[model["name"]] = {
            "ready": client.is_model_ready(model["name"], model.get("version", "")),
            "metadata": metadata,
        }
    server = client.get_server_metadata()
    if not isinstance(server, dict):
        server = {"name": server.name, "version": server.version, "extensions": list(server.extensions)}
    return {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "server": server,
        "models": models,
        "unknown_ready": client.is_model_ready("no-such-model"),
    }


def run_blocking(
    client_name: str, plan: dict[str, Any], arrays: Any, saved: dict[str, Any]
) -> dict[str, Any]:
    url = plan["rest"] if client_name == "http" else plan["grpc"]
    client = _module(client_name).InferenceServerClient(url)
    results: dict[str, Any] = {"health": _health(client, plan), "calls": {}}
    for call in plan["calls"]:
        out: dict[str, Any] = {}
        try:
            _record(client.infer(**_kwargs(client_name, call, arrays)), client_name, call, out, saved)
        except Exception as exc:  # tritonclient's InferenceServerException: its text is compared
            out["error"] = str(exc)
        results["calls"][call["name"]] = out
    client.close()
    return results


async def run_async(
    client_name: str, plan: dict[str, Any], arrays: Any, saved: dict[str, Any]
) -> dict[str, Any]:
    if client_name == "http_aio":
        import tritonclient.http.aio as httpaio

        client: Any = httpaio.InferenceServerClient(plan["rest"])
    else:
        import tritonclient.grpc.aio as grpcaio

        client = grpcaio.InferenceServerClient(plan["grpc"])
    results: dict[str, Any] = {
        "health": {"live": await client.is_server_live(), "ready": await client.is_server_ready()},
        "calls": {},
    }
    for call in plan["calls"]:
        out: dict[str, Any] = {}
        try:
            result = await client.infer(**_kwargs(client_name, call, arrays))
            _record(result, client_name, call, out, saved)
        except Exception as exc:
            out["error"] = str(exc)
        results["calls"][call["name"]] = out
    await client.close()
    return results


def wire_differences(descriptors: Path) -> list[str]:
    """Where tfship's ``inference.*`` messages differ from tritonclient's own (a field's
    name, number, type or label), for the fields tfship declares."""
    from google.protobuf import descriptor_pb2
    from tritonclient.grpc import service_pb2

    ours: dict[str, Any] = {}

    def walk(prefix: str, messages: Any) -> None:
        for message in messages:
            ours[f"{prefix}.{message.name}"] = message
            walk(f"{prefix}.{message.name}", message.nested_type)

    for file in descriptor_pb2.FileDescriptorSet.FromString(descriptors.read_bytes()).file:
        if file.package == "inference":
            walk("inference", file.message_type)
    pool = service_pb2.DESCRIPTOR.pool
    differences = []
    for name, message in sorted(ours.items()):
        theirs = pool.FindMessageTypeByName(name)
        for field in message.field:
            other = theirs.fields_by_number.get(field.number)
            if other is None or (other.name, other.type, other.label) != (
                field.name,
                field.type,
                field.label,
            ):
                differences.append(f"{name}.{field.name} = {field.number}")
    services = [
        s
        for f in descriptor_pb2.FileDescriptorSet.FromString(descriptors.read_bytes()).file
        if f.package == "inference"
        for s in f.service
    ]
    triton = pool.FindServiceByName("inference.GRPCInferenceService")
    for service in services:
        for method in service.method:
            other = triton.methods_by_name.get(method.name)
            if other is None or (other.input_type.full_name, other.output_type.full_name) != (
                method.input_type.lstrip("."),
                method.output_type.lstrip("."),
            ):
                differences.append(f"rpc {method.name}")
    if not ours:
        differences.append("no inference.* messages")
    return differences


def _kserve_request(call: dict[str, Any], arrays: Any) -> Any:
    from kserve.protocol.infer_type import InferInput, InferRequest, RequestedOutput

    inputs = []
    for spec in call["inputs"]:
        value = arrays[spec["array"]]
        tensor = InferInput(spec["name"], list(value.shape), spec["datatype"])
        if spec.get("binary", call.get("binary", True)):
            tensor.set_data_from_numpy(value, binary_data=True)
        else:  # JSON over REST, typed contents over gRPC
            flat = value.reshape(-1).tolist()
            tensor.data = [v.decode() if isinstance(v, bytes) else v for v in flat]
        inputs.append(tensor)
    outputs = [RequestedOutput(name) for name in call["outputs"]] if call.get("outputs") else None
    return InferRequest(
        model_name=call["model"],
        infer_inputs=inputs,
        request_id=call["name"],
        parameters=call.get("parameters"),
        request_outputs=outputs,
        model_version=call.get("version") or None,
    )


async def run_kserve(
    client_name: str, plan: dict[str, Any], arrays: Any, saved: dict[str, Any]
) -> dict[str, Any]:
    """The kserve SDK's asyncio clients: InferenceRESTClient (V2) and InferenceGRPCClient."""
    from kserve import InferenceGRPCClient, InferenceRESTClient, RESTConfig

    rest = client_name == "kserve_rest"
    base = f"http://{plan['rest']}"
    client: Any = (
        InferenceRESTClient(RESTConfig(protocol="v2")) if rest else InferenceGRPCClient(plan["grpc"])
    )
    if rest:
        health = {
            "live": await client.is_server_live(base),
            "ready": await client.is_server_ready(base),
            "model_ready": await client.is_model_ready(base, "module"),
        }
    else:
        health = {
            "live": await client.is_server_live(),
            "ready": await client.is_server_ready(),
            "model_ready": await client.is_model_ready("module"),
        }
    results: dict[str, Any] = {"health": health, "calls": {}}
    for call in plan["calls"]:
        if not call.get("kserve"):
            continue
        out: dict[str, Any] = {}
        try:
            request = _kserve_request(call, arrays)
            if rest:
                # the REST client has no version argument: the model's path names it
                model = call["model"] + (f"/versions/{call['version']}" if call.get("version") else "")
                response = await client.infer(base, request, model_name=model)
            else:
                response = await client.infer(request)
            keys = {}
            for output in response.outputs:
                key = f"{call['name']}/{client_name}/{output.name}"
                value = output.as_numpy()
                if value.dtype.kind in "OU":
                    value = np.array(
                        [v.encode() if isinstance(v, str) else v for v in value.reshape(-1)], object
                    ).reshape(value.shape)
                saved[key] = value
                keys[output.name] = key
            out.update(id=response.id, outputs=keys, version=response.model_version)
        except Exception as exc:  # httpx's HTTPStatusError or grpc's RpcError: its text is compared
            out["error"] = str(exc)
        results["calls"][call["name"]] = out
    await client.close()
    return results


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    arrays = np.load(sys.argv[2], allow_pickle=True)
    out_dir, family = Path(sys.argv[3]), sys.argv[4]
    saved: dict[str, Any] = {}
    # tritonclient and kserve both register the inference.* messages in protobuf's default
    # pool, so each family runs in a process of its own
    if family == "triton":
        results = {
            "http": run_blocking("http", plan, arrays, saved),
            "grpc": run_blocking("grpc", plan, arrays, saved),
            "http_aio": asyncio.run(run_async("http_aio", plan, arrays, saved)),
            "grpc_aio": asyncio.run(run_async("grpc_aio", plan, arrays, saved)),
            "wire": wire_differences(Path(plan["descriptors"])),
        }
    else:
        results = {
            "kserve_rest": asyncio.run(run_kserve("kserve_rest", plan, arrays, saved)),
            "kserve_grpc": asyncio.run(run_kserve("kserve_grpc", plan, arrays, saved)),
        }
    np.savez(out_dir / f"outputs-{family}.npz", **saved)
    (out_dir / f"results-{family}.json").write_text(json.dumps(results, default=str))


if __name__ == "__main__":
    main()

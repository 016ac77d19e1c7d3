"""The REST face of the local server: TF Serving's ``/v1/models/...`` routes over HTTP/1.1.

Like ``http_rest_api_handler.cc``: a JSON body becomes the same request message a gRPC client
would send (tensors built from the signature's dtypes, Examples for classify/regress, with the
rules of :mod:`tfship._wire._json_values`), runs through the same ``ServingCore``, and the response is
written back as TF Serving writes it (``predictions``/``outputs``/``results``). Errors are
``{"error": "..."}`` with TF Serving's HTTP status for the code.

The HTTP side speaks as TF Serving's libevent server does: HTTP/1.1 with keep-alive (HTTP/1.0
only when asked), ``Content-Length`` on every answer, chunked and gzip request bodies,
``Expect: 100-continue``. Each answer leaves in one ``send`` on a ``TCP_NODELAY`` socket: an
answer split in two writes with Nagle's algorithm on waits ~40 ms for the client's delayed ACK.

Why the standard library's threading server and not an HTTP server library: measured on a
2-core machine, the HTTP layer alone (a canned answer, the body parsed with ``json.loads``,
server and ``http.client`` keep-alive clients in two processes) served 1 / 8 / 32 clients at
1959 / 3277 / 2729 requests/s with this handler, 1583 / 2109 / 3505 with waitress (8 threads)
and 1172 / 1858 / 2493 with uvicorn + httptools (853 / 3680 / 1709 when the blocking call is
handed to a thread, as a model run must be); each grew by under 1 MB of RSS with 32 open
connections. A batch-1 Predict costs ~1 ms in the model and JSON work, so no library would move
the REST rows of ``benchmarks/serving.py``, and each would add a dependency (and for uvicorn an
event loop to bridge to blocking model runs). One thread per connection, bounded by the idle
timeout below and by a limit on open connections: past it a new connection is answered
``503`` (UNAVAILABLE, which clients and proxies retry) and closed at once, rather than left
waiting in the listen queue, so that a proxy in front learns at once to try another server
and idle clients cannot use up the file descriptors that polling and loading need.
"""

from __future__ import annotations

import email.utils
import errno
import functools
import logging
import re
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import unquote

import grpc
from numpy.typing import NDArray

from tfship._wire import (
    DEFAULT_SIGNATURE,
    ClassificationRequest,
    ClassificationResult,
    JsonError,
    ModelSpecProto,
    PredictRequest,
    RegressionRequest,
    RegressionResult,
    SignatureDef,
    TensorProto,
    classification_json,
    decode_tensor,
    error_json,
    http_status,
    parse_json,
    predict_inputs_from_json,
    predict_json,
    protos,
    regression_json,
    signature_name_of,
    unset_fields_printed,
)
from tfship.records._shared import examples_from_json
from tfship.server._core import ServingCore
from tfship.server._health import Health
from tfship.server._metrics import handle_counted
from tfship.server._status import LocalServerError, RpcError, ServerConfigError, invalid

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from tfship.server._v2_rest import V2Rest

T = TypeVar("T")

logger = logging.getLogger(__name__)

_VERSION = r"(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
_PREDICT = re.compile(r"/v1/models/([^/:]+)" + _VERSION + r":(classify|regress|predict)", re.I)
_STATUS = re.compile(r"/v1/models(?:/([^/:]+))?" + _VERSION + r"(?:/(metadata))?", re.I)
_INT64_MAX = 2**63 - 1

# An idle kept-alive connection is closed after this long (libevent's evhttp default is 50 s).
IDLE_TIMEOUT_S = 50.0
# gzip request bodies inflate up to this size, TF Serving's (its ZLib::kMaxUncompressedBytes)
DEFAULT_MAX_INFLATED = 100 << 20
_INFLATE_STEP = 1 << 20  # inflated this much at a time, so that a bomb is stopped at the cap
_POLL_S = 0.05  # how often the accept loop checks for shutdown()
# REST connections open at once, unless told otherwise (and at most half the open-file limit)
DEFAULT_MAX_CONNECTIONS = 1024
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE)


def error_body(message: str) -> bytes:
    """The exact bytes of TF Serving's REST error body (valid JSON)."""
    return error_json(message)


def _infos(signature: SignatureDef) -> dict[str, int]:
    return {name: int(info.dtype) for name, info in signature.inputs.items()}


def predict_request_from_json(
    body: bytes, spec_fill: Callable[[ModelSpecProto], None], core: ServingCore
) -> tuple[PredictRequest, str]:
    """Build a PredictRequest from a REST body; returns it and the format ("row"/"columnar")."""
    request = protos().predict_pb2.PredictRequest()
    spec_fill(request.model_spec)
    doc = parse_json(body)
    name = signature_name_of(doc)
    if name is not None:
        request.model_spec.signature_name = name
    key = request.model_spec.signature_name or DEFAULT_SIGNATURE
    with core.manager.servable(request.model_spec) as servable:
        signature = servable.signatures.get(key)
        if signature is None:
            raise invalid(f'Serving signature name: "{key}" not found in signature def')
        infos = _infos(signature)
    if not infos:
        raise invalid(
            "Failed to get input map for signature: " + (request.model_spec.signature_name or "DEFAULT")
        )
    arrays, form = predict_inputs_from_json(doc, infos, body)
    for alias, array in arrays.items():
        _fill_tensor(request.inputs[alias], array, infos[alias])
    return request, form


def _fill_tensor(proto: TensorProto, array: NDArray[Any], dtype: int) -> None:
    """A request tensor: numbers as ``tensor_content`` (one copy), strings as ``string_val``."""
    proto.dtype = dtype
    for size in array.shape:
        proto.tensor_shape.dim.add().size = size
    if array.dtype == object:
        proto.string_val.extend(array.reshape(-1).tolist())
    else:
        proto.tensor_content = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def examples_request_from_json(body: bytes, request: ClassificationRequest | RegressionRequest) -> None:
    """Fill a Classification/RegressionRequest's signature and input from a REST body."""
    doc = parse_json(body)
    name = signature_name_of(doc)
    if name is not None:
        request.model_spec.signature_name = name
    examples_from_json(doc, request.input)


def predict_response_json(outputs: Mapping[str, TensorProto], form: str) -> str:
    """MakeJsonFromTensors over a PredictResponse's ``outputs`` map."""
    arrays = {name: (decode_tensor(proto), int(proto.dtype)) for name, proto in outputs.items()}
    return predict_json(arrays, form)


def classification_response_json(result: ClassificationResult) -> str:
    """MakeJsonFromClassificationResult over a ClassificationResult."""
    classes = [[(c.label, c.score) for c in item.classes] for item in result.classifications]
    return classification_json(classes)


def regression_response_json(result: RegressionResult) -> str:
    """MakeJsonFromRegressionResult over a RegressionResult."""
    return regression_json([r.value for r in result.regressions])


def _proto_json(message: Message) -> str:
    from google.protobuf import json_format

    text: str = json_format.MessageToJson(
        message, preserving_proto_field_name=True, indent=2, **unset_fields_printed()
    )
    return text


@functools.cache
# routing -------------------------------------------------------------------------------------
class RestApi:
    """Route one HTTP request to the core and produce (status, body).

    Model runs are bounded by ``timeout_s`` (TF Serving's ``--rest_api_timeout_in_ms``, 30 s):
    past it the caller gets 504 DEADLINE_EXCEEDED (the run itself finishes in the background).
    """

    def __init__(
        self, core: ServingCore, timeout_s: float | None = 30.0, health: Health | None = None
    ) -> None:
        self.core = core
        self.health = health  # the readiness, liveness and model list URLs
        self.timeout_s = timeout_s
        self.v2: V2Rest | None = None  # the Open Inference Protocol's routes, when served
        self._pool = (
            None
            if timeout_s is None
            else ThreadPoolExecutor(max_workers=64, thread_name_prefix="tfship-rest-run")
        )

    def close(self) -> None:
        """Release the threads that run requests (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _timed(self, call: Callable[[], T]) -> T:
        if self._pool is None:
            return call()
        future = self._pool.submit(call)
        try:
            return future.result(timeout=self.timeout_s)
        except FutureTimeout:
            # TensorFlow's text when a run outlives RunOptions.timeout_in_ms
            raise RpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "Timed out waiting for notification") from None

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        """Answer ``method path`` with TF Serving's status code and JSON body."""
        try:
            answer = None if self.health is None else self.health.rest(method, path.split("?", 1)[0])
            if answer is not None:
                return answer
            return 200, self._dispatch(method, path, body).encode("utf-8")
        except RpcError as exc:  # the REST API writes the whole message, gRPC cuts it
            return http_status(exc.code.name), error_body(exc.message)
        except JsonError as exc:
            return http_status(exc.code), error_body(exc.message)
        except RecursionError:
            return 400, error_body("JSON Parse error: document nested too deeply")
        except MemoryError:
            return 429, error_body("out of memory serving this request")
        except Exception as exc:  # a bug is a 500 with a message, never a dropped connection
            logger.exception("unexpected error while serving %s %s", method, path)
            return 500, error_body(f"{type(exc).__name__}: {exc}")

    def _dispatch(self, method: str, path: str, body: bytes) -> str:
        path = path.split("?", 1)[0]
        match = _PREDICT.fullmatch(path)
        if method == "POST" and match:
            name, version, label, verb = match.groups()
            return self._run(verb.lower(), _spec_filler(name, version, label), body)
        match = _STATUS.fullmatch(path)
        if method == "GET" and match:
            name, version, label, metadata = match.groups()
            if not name:
                raise invalid("Missing model name in request.")
            if metadata:
                return self._metadata(_spec_filler(name, version, label))
            return self._status(unquote(name), version)
        raise invalid(f"Malformed request: {method} {path}")

    def _run(self, verb: str, fill: Callable[[ModelSpecProto], None], body: bytes) -> str:
        pb = protos()
        if verb == "predict":
            request, form = predict_request_from_json(body, fill, self.core)
            outputs = self._timed(lambda: self.core.predict(request).outputs)
            return predict_response_json(outputs, form)
        if verb == "classify":
            creq = pb.classification_pb2.ClassificationRequest()
            fill(creq.model_spec)
            examples_request_from_json(body, creq)
            return classification_response_json(self._timed(lambda: self.core.classify(creq).result))
        rreq = pb.regression_pb2.RegressionRequest()
        fill(rreq.model_spec)
        examples_request_from_json(body, rreq)
        return regression_response_json(self._timed(lambda: self.core.regress(rreq).result))

    def _status(self, name: str, version: str | None) -> str:
        request = protos().get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = name
        if version is not None:
            request.model_spec.version.value = _version_number(version)
        return _proto_json(self.core.get_model_status(request))

    def _metadata(self, fill: Callable[[ModelSpecProto], None]) -> str:
        metadata_pb2 = protos().get_model_metadata_pb2
        request = metadata_pb2.GetModelMetadataRequest()
        fill(request.model_spec)
        request.metadata_field.append("signature_def")
        response = self.core.get_model_metadata(request)
        signature_map = metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signature_map)
        return (
            '{\n"model_spec":' + _proto_json(response.model_spec) + ',\n"metadata": {'
            '"signature_def": ' + _proto_json(signature_map) + "\n}\n}\n"
        )


def _version_number(text: str) -> int:
    number = int(text)
    if number > _INT64_MAX:
        raise invalid(f"Failed to convert version: {text} to numeric.")
    return number


def _spec_filler(name: str, version: str | None, label: str | None) -> Callable[[ModelSpecProto], None]:
    def fill(spec: ModelSpecProto) -> None:
        spec.name = unquote(name)
        if version is not None:
            spec.version.value = _version_number(version)
        elif label is not None:
            spec.version_label = unquote(label)

    return fill


def _date() -> str:
    """The ``Date`` header, formatted once per second."""
    now = int(time.time())
    cached = _DATE_CACHE
    if cached[0] != now:
        cached[:] = [now, email.utils.formatdate(now, usegmt=True)]
    return str(cached[1])


_DATE_CACHE: list[Any] = [0, ""]
_REASONS = {status.value: status.phrase for status in HTTPStatus}
_REASONS[499] = "Client Closed Request"


class BadBody(ValueError):
    """Raised when a request body cannot be read (bad chunk framing or Content-Length); the
    connection is answered ``status`` and closed, since where the next request starts is
    not known."""

    status = 400


class UnknownCoding(BadBody):
    """Raised for a transfer coding other than ``chunked`` (RFC 9112: 501)."""

    status = 501


class BodyTooLarge(ValueError):
    """Raised when a gzip request body inflates past the server's limit (answered 400 on a
    connection that goes on: the body was read to its end)."""


# RFC 9112: chunk-size is 1*HEXDIG, then optional whitespace and extensions; Content-Length
# is 1*DIGIT (str.isdigit() and int() also take "²", "+5", " 5", "5_0")
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r?\n")
_DIGITS = re.compile(r"[0-9]+")
_READ_STEP = 64 << 20  # a body is read in pieces: memory follows the bytes that came


_MAX_HEADERS = 100


class _Headers(dict[str, str]):
    """Request headers by lower-cased name; ``get`` takes any case."""

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


class _Handler(BaseHTTPRequestHandler):
    """One connection: requests in a loop while the client keeps it alive."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S
    api: RestApi
    server_version = "tfship"

    server: _Server

    def setup(self) -> None:
        super().setup()
        # no Nagle: an answer must never wait for the client's delayed ACK
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.closed(self.connection)

    def handle_one_request(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline, self.request_version, self.command = "", "", ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self._answer()
        except TimeoutError:  # idle past the timeout, or a client that stopped mid-request
            self.close_connection = True

    def parse_request(self) -> bool:
        """Request line and headers, as the standard library reads them but without the
        ``email`` parser (a third of this server's own time per request)."""
        # an error answer before the version is known still gets a status line (no HTTP/0.9)
        self.command, self.request_version = "", "HTTP/1.1"
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if not words:
            return False
        if len(words) != 3 or not words[2].startswith("HTTP/"):
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({self.requestline!r})")
            return False
        self.command, path, version = words
        try:
            major, minor = (int(part) for part in version[5:].split("."))
        except ValueError:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
            return False
        if major >= 2:
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version ({version})")
            return False
        self.request_version = version
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        headers = self._headers()
        if headers is None:
            return False
        self.headers = headers  # type: ignore[assignment]
        connection = headers.get("connection", "").lower()
        self.close_connection = (major, minor) < (1, 1) or connection == "close"
        if connection == "keep-alive" and (major, minor) >= (1, 0):
            self.close_connection = False
        if (major, minor) >= (1, 1) and headers.get("expect", "").lower() == "100-continue":
            return self.handle_expect_100()
        return True

    def _headers(self) -> _Headers | None:
        headers = _Headers()
        name = ""
        for _ in range(_MAX_HEADERS + 1):
            line = self.rfile.readline(65537)
            if len(line) > 65536:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return None
            if line in (b"\r\n", b"\n", b""):
                return headers
            text = line.decode("iso-8859-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and name:  # an obsolete folded continuation line
                headers[name] += " " + text.strip()
                continue
            name, _, value = text.partition(":")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
        return None

    def _answer(self) -> None:
        method = self.command
        if method not in ("GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"):
            self.send_error(HTTPStatus.NOT_IMPLEMENTED)
            return
        try:
            body = self._body()
        except BadBody as exc:
            self.close_connection = True
            self._reply(exc.status, "application/json", error_body(str(exc)))
            return
        except BodyTooLarge as exc:  # read to its end: the connection can go on
            self._reply(400, "application/json", error_body(str(exc)))
            return
        metrics = self.api.core.metrics  # --monitoring_config_file's Prometheus page
        if method == "GET" and metrics is not None and metrics.serves(self.path):
            self._reply(200, metrics.content_type, metrics.page())
            return
        v2 = self.api.v2
        if v2 is not None and v2.serves(self.path):
            headers = cast(_Headers, self.headers)  # what parse_request put there
            status, content_type, payload, extra = v2.handle(method, self.path, headers, body)
            self._reply(status, content_type, payload, extra)
            return
        if not self.path.lower().startswith("/v1/"):
            self._reply(404, "text/html", b"<h1>404 Not Found</h1>")
            return
        status, payload = handle_counted(self.api.handle, metrics, method, self.path, body)
        self._reply(status, "application/json", payload)

    def _reply(self, status: int, content_type: str, payload: bytes, extra: Sequence[str] = ()) -> None:
        """Status line, headers (``extra`` header lines too) and body in one write."""
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, '')}",
            f"Content-Type: {content_type}",
            f"Date: {_date()}",
            f"Content-Length: {len(payload)}",
            *extra,
        ]
        if self.close_connection:
            lines.append("Connection: close")
        elif self.request_version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head if self.command == "HEAD" else head + payload)
        self.log_request(status, len(payload))

    def _body(self) -> bytes:
        coding = self.headers.get("Transfer-Encoding")
        length = self.headers.get("Content-Length")
        if coding is not None:
            if length is not None:  # RFC 9112 6.3: a smuggling attempt, or a broken client
                raise BadBody("a request must not have both Transfer-Encoding and Content-Length")
            if coding.strip().lower() != "chunked":
                raise UnknownCoding(f"transfer coding {coding!r} is not implemented; only chunked is")
            body = self._chunks()
        elif length is None:
            return b""
        else:
            body = self._exactly(_size(length, "Content-Length"))
        if "gzip" in self.headers.get("Content-Encoding", ""):
            return _inflate(body, self.server.max_inflated)
        return body

    def _exactly(self, size: int) -> bytes:
        """``size`` bytes of body, read in pieces (a claimed size allocates nothing)."""
        parts: list[bytes] = []
        left = size
        while left:
            part = self.rfile.read(min(left, _READ_STEP))
            if not part:
                raise BadBody(f"request body ended after {size - left} of {size} bytes")
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def _chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            line = self.rfile.readline(1026)
            match = _CHUNK_LINE.fullmatch(line)
            if match is None:
                raise BadBody(f"invalid chunk size line: {line[:40]!r}")
            size = _size(match.group(1).decode("ascii"), "chunk size", base=16)
            if size == 0:
                break
            try:
                chunk = self._exactly(size)
            except BadBody:
                raise BadBody("request body ended inside a chunk") from None
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise BadBody("request body ended inside a chunk")
            parts.append(chunk)
        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
            pass  # trailer fields are ignored
        return b"".join(parts)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        logger.debug("rest: " + format, *args)


def _size(text: str, what: str, base: int = 10) -> int:
    """A Content-Length (decimal digits) or chunk size (hex digits, checked by the caller)
    below 2**63.

    Raises:
        BadBody: anything else.
    """
    text = text.strip()
    if base == 10 and not _DIGITS.fullmatch(text):
        raise BadBody(f"invalid {what}: {text[:40]!r}")
    digits = text.lstrip("0")
    if len(digits) > 19 or int(digits or "0", base) > _INT64_MAX:
        raise BadBody(f"{what} {text[:40]} is too large: the most is 2**63 - 1")
    return int(digits or "0", base)


def _inflate(body: bytes, limit: int) -> bytes:
    """A gzip body inflated; an unreadable one becomes empty, as in TF Serving's server.

    Inflated a step at a time, so that memory grows with the limit, never with what a small
    body could inflate to (2 MB of gzip hold 2 GiB of zeros).

    Raises:
        BodyTooLarge: the body inflates past ``limit`` bytes.
    """
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    steps: list[bytes] = []
    size, pending = 0, body
    try:
        while not inflater.eof:
            step = inflater.decompress(pending, min(_INFLATE_STEP, limit + 1 - size))
            steps.append(step)
            size += len(step)
            if size > limit:
                raise BodyTooLarge(f"gzip request body inflates past {limit} bytes, the server's limit")
            pending = inflater.unconsumed_tail
            if not step and not pending:
                break  # the stream ends before its end: unreadable
    except zlib.error:
        return b""
    return b"".join(steps) if inflater.eof else b""


def connection_limit(requested: int | None) -> int:
    """The most REST connections open at once: ``requested``, or by default 1024 or half the
    soft open-file limit, whichever is lower."""
    if requested is not None:
        return requested
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # no such limit on this platform
        return DEFAULT_MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_MAX_CONNECTIONS
    return max(1, min(DEFAULT_MAX_CONNECTIONS, soft // 2))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # SO_REUSEADDR, as gRPC binds: a restart may take the port back while connections of the
    # previous process linger in TIME_WAIT; a port another process listens on is still refused.
    allow_reuse_address = True
    request_queue_size = 128
    api: RestApi

    def __init__(self, address: tuple[str, int], handler: type[_Handler], max_connections: int) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self.max_connections = max_connections
        self.max_inflated = DEFAULT_MAX_INFLATED
        self._open = 0  # accepted and not yet closed, counted from accept() on
        self._starved = False  # accept() failed for want of descriptors
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept; out of descriptors, pause a poll interval instead of spinning on a listening
        socket that stays readable."""
        try:
            request = super().get_request()
        except OSError as exc:
            if exc.errno in _OUT_OF_FILES:
                if not self._starved:
                    logger.error("rest: cannot accept connections: %s", exc.strerror)
                self._starved = True
                time.sleep(_POLL_S)
            raise  # socketserver drops this one accept
        self._starved = False
        return request

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            full = self._open >= self.max_connections
            if not full:
                self._open += 1
        if full:
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread for it: the connection is closed, not counted
            self._done()
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._done()

    def _done(self) -> None:
        with self._connections_lock:
            self._open -= 1

    def _refuse(self, request: socket.socket) -> None:
        """Answer 503 at once and close, without reading the request."""
        metrics = self.api.core.metrics
        if metrics is not None:
            metrics.count_refused_connection()
        body = error_body(
            f"The server has {self.max_connections} REST connections open, its limit; try again later"
        )
        head = (
            f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Date: {_date()}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        try:
            request.settimeout(1.0)
            request.sendall(head.encode("latin-1") + body)
        except OSError:
            pass  # the client went away: nothing to tell it
        self.shutdown_request(request)

    def opened(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer is routine; anything else is logged with its trace."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            logger.debug("rest: client %s went away", client_address)
        else:
            logger.exception("rest: error on the connection from %s", client_address)

    def server_close(self) -> None:
        """Stop listening and end kept-alive connections: an idle client sees the close at
        once, rather than a request served by a stopped server."""
        super().server_close()
        with self._connections_lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RD)  # an answer being written still leaves
            except OSError:
                pass  # already gone
        api = getattr(self, "api", None)  # absent when binding failed in __init__
        if api is not None:
            api.close()


def start_rest(
    core: ServingCore,
    host: str,
    port: int,
    *,
    timeout_s: float | None = 30.0,
    max_connections: int | None = None,
    max_inflated: int = DEFAULT_MAX_INFLATED,
    health: Health | None = None,
    open_inference: bool = False,
) -> tuple[_Server, int]:
    """Start the REST API in a background thread; returns the server and its bound port.

    ``max_connections`` bounds the connections open at once (:func:`connection_limit`);
    ``max_inflated`` the size a gzip request body may inflate to (past it: 400); ``health``
    answers the readiness, liveness and model list URLs; ``open_inference`` also serves the
    Open Inference Protocol's ``/v2`` routes.

    Raises:
        LocalServerError: when the address cannot be bound.
    """
    api = RestApi(core, timeout_s, health)
    if open_inference:
        from tfship.server._v2 import V2Core
        from tfship.server._v2_rest import V2Rest

        api.v2 = V2Rest(V2Core(core), api._timed)
    handler = type("Handler", (_Handler,), {"api": api})
    try:
        server = _Server((host, port), handler, connection_limit(max_connections))
    except OSError as exc:
        api.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServerConfigError(f"REST port {host}:{port} is already in use") from None
        raise LocalServerError(f"cannot bind REST to {host}:{port}: {exc.strerror}") from exc
    server.api = api
    server.max_inflated = max_inflated
    # shutdown() waits for the loop to notice it: poll often, so that a stop is quick
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": _POLL_S}, name="tfship-rest", daemon=True
    )
    thread.start()
    return server, int(server.server_address[1])

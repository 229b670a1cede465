"""Requests that are not valid protobuf get INVALID_ARGUMENT naming the field, never UNKNOWN.

gRPC decodes a request before any servicer code runs; when the bytes do not parse (bad UTF-8 in a
string field, a truncated varint or length, a wire type that does not exist, random bytes) grpc.aio
answers UNKNOWN with the exception's class in the message. ``add_service`` registers a servicer
through its generated ``add_..._to_server`` function with every method handler wrapped:

- the request deserializer never raises; bytes that do not parse become an ``Undecodable`` holding
  the InvalidArgumentError that ``locate_decode_error`` finds by walking the wire format against
  the request's descriptor (``observation.history: not valid UTF-8``);
- a method that takes one request answers an Undecodable with INVALID_ARGUMENT (counted in the
  metrics like any other refusal) before the servicer sees it;
- a streaming method's request iterator raises that InvalidArgumentError where the message stood,
  so what the servicer acknowledged before it stands and the stream ends with INVALID_ARGUMENT.

``server/app.py`` registers every service this way, the standard health and reflection ones too.
A servicer method marked ``takes_undecodable`` (ours: every ``_rpc`` method and ``Observe``)
refuses Undecodable requests itself, the same way, so its handler keeps only the total
deserializer: the layers that would do it cost the event loop a coroutine per call, and an async
generator per streamed message.

``add_totally_decoded`` registers a service with the total deserializers only, its handlers kept:
for Ray Serve's gRPC proxy, which replaces the handlers with its own and hands each decoded request
(an Undecodable too) on to a replica, where the servicer refuses it (``server/ray_proxy.py``).

The walk follows the protobuf encoding spec as the upb parser applies it (tags of at most 5 bytes,
varints of at most 10, field number 0 and wire types 6 and 7 refused, groups skipped when they nest
properly, strings checked as UTF-8, packed scalars checked element by element, at most 100 levels of
nesting); a test holds the walk and the parser to agree on mutated messages.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.server.errors import error_details
from oppmodel.server.metrics import Metrics

MAX_DEPTH = 100  # upb's default nesting limit (messages and groups)
_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = range(6)
_FIXED_SIZE = {
    FieldDescriptor.TYPE_DOUBLE: 8,
    FieldDescriptor.TYPE_FIXED64: 8,
    FieldDescriptor.TYPE_SFIXED64: 8,
    FieldDescriptor.TYPE_FLOAT: 4,
    FieldDescriptor.TYPE_FIXED32: 4,
    FieldDescriptor.TYPE_SFIXED32: 4,
}
_VARINT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_BOOL,
        FieldDescriptor.TYPE_ENUM,
    }
)


# -- finding what is wrong -------------------------------------------------------------------------
class _Malformed(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(field, reason)
        self.field = field
        self.reason = reason


def malformation(descriptor: Descriptor, data: bytes) -> InvalidArgumentError | None:
    """What makes ``data`` not a valid ``descriptor`` message, as an InvalidArgumentError naming
    the innermost field the fault lies in ("request" when it lies in no field); None if the walk
    finds nothing wrong."""
    try:
        _walk(descriptor, data, 0, len(data), "", depth=0, group=None)
    except _Malformed as exc:
        return InvalidArgumentError(exc.field, exc.reason)
    return None


def locate_decode_error(descriptor: Descriptor, data: bytes) -> InvalidArgumentError:
    """The InvalidArgumentError for bytes that failed to parse as a ``descriptor`` message."""
    return malformation(descriptor, data) or InvalidArgumentError(
        "request", f"is not a valid {descriptor.full_name} message"
    )


def _varint(
    data: bytes, pos: int, end: int, *, max_bytes: int, where: str, what: str
) -> tuple[int, int]:
    """(value, position after it) of the varint at ``pos``."""
    value = shift = 0
    for i in range(max_bytes):
        if pos + i >= end:
            raise _Malformed(where, f"truncated {what} at byte {pos}")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos + i + 1
    raise _Malformed(where, f"{what} at byte {pos} is longer than {max_bytes} bytes")


def _walk(
    descriptor: Descriptor | None,
    data: bytes,
    pos: int,
    end: int,
    path: str,
    *,
    depth: int,
    group: int | None,
) -> int:
    """Check the fields in ``data[pos:end]`` (of a message, or of a group numbered ``group``, whose
    fields are not ours to know); returns where they end."""
    seen: dict[int, int] = {}
    where = path or "request"
    while pos < end:
        start = pos
        tag, pos = _varint(data, pos, end, max_bytes=5, where=where, what="field tag")
        number, wire = tag >> 3, tag & 7
        # upb refuses field number 0 only where it looks fields up: in a message that has some
        if tag >> 32 or (number == 0 and descriptor is not None and descriptor.fields):
            raise _Malformed(where, f"invalid field tag {tag} at byte {start}")
        field = descriptor.fields_by_number.get(number) if descriptor is not None else None
        here = where if field is None else _field_path(path, field, seen.get(number, 0))
        seen[number] = seen.get(number, 0) + 1
        if wire == _VARINT:
            _, pos = _varint(data, pos, end, max_bytes=10, where=here, what="varint")
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            if pos + size > end:
                raise _Malformed(here, f"truncated {size}-byte value at byte {pos}")
            pos += size
        elif wire == _LENGTH:
            length, pos = _varint(data, pos, end, max_bytes=10, where=here, what="length")
            if length > end - pos:
                raise _Malformed(here, f"length {length} at byte {start} runs past the end")
            if field is not None:
                _check_payload(field, data, pos, pos + length, here, depth=depth)
            pos += length
        elif wire == _START_GROUP:
            if depth + 1 > MAX_DEPTH:
                raise _Malformed(here, f"nested more than {MAX_DEPTH} levels deep")
            pos = _walk(None, data, pos, end, here, depth=depth + 1, group=number)
        elif wire == _END_GROUP:
            if group != number:
                raise _Malformed(where, f"end-group tag for field {number} without its start")
            return pos
        else:
            raise _Malformed(here, f"invalid wire type {wire} for field {number}")
    if group is not None:
        raise _Malformed(where, f"group of field {group} never ends")
    return pos


def _field_path(path: str, field: FieldDescriptor, index: int) -> str:
    name = f"{path}.{field.name}" if path else field.name
    return f"{name}[{index}]" if field.is_repeated else name


def _check_payload(
    field: FieldDescriptor, data: bytes, pos: int, end: int, here: str, *, depth: int
) -> None:
    """Check a length-delimited value of a known field as that field's type reads it."""
    if field.type == FieldDescriptor.TYPE_STRING:
        try:
            data[pos:end].decode("utf-8")
        except UnicodeDecodeError:
            raise _Malformed(here, "not valid UTF-8") from None
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        if depth + 1 > MAX_DEPTH:
            raise _Malformed(here, f"nested more than {MAX_DEPTH} levels deep")
        _walk(field.message_type, data, pos, end, here, depth=depth + 1, group=None)
    elif field.is_repeated:  # packed scalars
        packed = here.rpartition("[")[0]
        size = _FIXED_SIZE.get(field.type)
        if size is not None and (end - pos) % size:
            raise _Malformed(packed, f"packed {size}-byte values: {end - pos} bytes")
        if field.type in _VARINT_TYPES:
            while pos < end:
                _, pos = _varint(data, pos, end, max_bytes=10, where=packed, what="varint")


# -- wrapping the handlers -------------------------------------------------------------------------
@dataclass(frozen=True)
class Undecodable:
    """What the deserializer hands on in place of a request whose bytes do not parse."""

    error: InvalidArgumentError


def _total(
    decode: Callable[[bytes], Any] | None, descriptor: Descriptor
) -> Callable[[bytes], Any] | None:
    """``decode`` made total: bytes it cannot decode become :class:`Undecodable`. A handler without
    a deserializer takes the raw bytes, which cannot fail, and keeps none."""
    if decode is None:
        return None

    def deserialize(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception:  # the bytes are the client's: any failure to decode them is theirs
            return Undecodable(locate_decode_error(descriptor, data))

    return deserialize


def takes_undecodable(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a servicer method that refuses ``Undecodable`` requests itself (with ``refuse``, or as
    the InvalidArgumentError that ends its stream) and maps every error of its own to a status:
    the guard registers it as it is, without the layers that would do both for it (on the
    Observe path each layer cost the event loop a coroutine or an async generator per message)."""
    behaviour.takes_undecodable = True  # type: ignore[attr-defined]
    return behaviour


async def refuse(
    error: InvalidArgumentError, context: grpc.aio.ServicerContext, *, method: str, metrics: Metrics
) -> None:
    """End the call with INVALID_ARGUMENT for a request that could not be decoded, counted as a
    refusal of ``method`` (without a latency: the call never reached its handler)."""
    code, message, metadata = error_details(error)
    metrics.count(method, code, None)
    context.set_trailing_metadata(metadata)
    await context.abort(code, message)


async def checked(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``requests`` as they come, raising the InvalidArgumentError of one that did not parse."""
    async for request in requests:
        if isinstance(request, Undecodable):
            raise request.error
        yield request


# (request streaming, response streaming) -> the handler attribute and its constructor
_KINDS = {
    (False, False): ("unary_unary", grpc.unary_unary_rpc_method_handler),
    (False, True): ("unary_stream", grpc.unary_stream_rpc_method_handler),
    (True, False): ("stream_unary", grpc.stream_unary_rpc_method_handler),
    (True, True): ("stream_stream", grpc.stream_stream_rpc_method_handler),
}


def total_decoding(service: str, method: str, handler: grpc.RpcMethodHandler) -> Any:
    """``handler`` (of ``method`` of ``service``) with a deserializer that never raises: bytes that
    do not parse become :class:`Undecodable`; its behaviour is kept as it is."""
    descriptor = descriptor_pool.Default().FindServiceByName(service)
    input_type = descriptor.methods_by_name[method].input_type
    deserialize = _total(handler.request_deserializer, input_type)
    attribute, make = _KINDS[handler.request_streaming, handler.response_streaming]
    return make(getattr(handler, attribute), deserialize, handler.response_serializer)


def _guard(
    service: str, method: str, handler: grpc.RpcMethodHandler, metrics: Metrics
) -> grpc.RpcMethodHandler:
    """``handler`` with a deserializer that never raises and behaviour that refuses Undecodable
    (streamed responses may be yielded or written with ``context.write``: both are kept)."""
    total = total_decoding(service, method, handler)
    attribute, make = _KINDS[handler.request_streaming, handler.response_streaming]
    behaviour = getattr(handler, attribute)
    if getattr(behaviour, "takes_undecodable", False):
        return total

    async def admit(request: Any, context: grpc.aio.ServicerContext) -> Any:
        """What the servicer gets: a stream checked message by message, or the single request
        (refused here if it could not be decoded)."""
        if handler.request_streaming:
            return checked(request)
        if isinstance(request, Undecodable):
            await refuse(request.error, context, method=method, metrics=metrics)
        return request

    # A servicer that does not map errors itself (health, reflection) lets the stream's
    # InvalidArgumentError escape: it is refused here as ours are.
    async def streamed(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            async for response in behaviour(await admit(request, context), context):
                yield response
        except InvalidArgumentError as exc:
            await refuse(exc, context, method=method, metrics=metrics)

    async def single(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await behaviour(await admit(request, context), context)
        except InvalidArgumentError as exc:
            await refuse(exc, context, method=method, metrics=metrics)

    guarded = streamed if inspect.isasyncgenfunction(behaviour) else single
    return make(guarded, total.request_deserializer, handler.response_serializer)


Transform = Callable[[str, str, grpc.RpcMethodHandler], Any]  # (service, method, handler)


@dataclass(frozen=True)
class _CallDetails(grpc.HandlerCallDetails):
    """What a generic handler is asked for: a method (by its full path), no metadata."""

    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()


class _Registration:
    """Stands in for the server in a generated ``add_..._to_server`` call and registers every
    method handler it is given as ``transform`` makes it."""

    def __init__(self, server: Any, transform: Transform) -> None:
        self._server = server
        self._transform = transform

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.ServiceRpcHandler]) -> None:
        """Register each service's handler with its methods' handlers transformed."""
        self._server.add_generic_rpc_handlers(tuple(self._transformed(h) for h in handlers))

    def _transformed(self, handler: grpc.ServiceRpcHandler) -> grpc.GenericRpcHandler:
        service = handler.service_name()
        methods = descriptor_pool.Default().FindServiceByName(service).methods
        handlers = {m.name: handler.service(_CallDetails(f"/{service}/{m.name}")) for m in methods}
        return grpc.method_handlers_generic_handler(
            service,
            {m: self._transform(service, m, h) for m, h in handlers.items() if h is not None},
        )

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler]
    ) -> None:
        """Register each method handler transformed (these take precedence over generic ones)."""
        self._server.add_registered_method_handlers(
            service, {m: self._transform(service, m, h) for m, h in handlers.items()}
        )


def add_service(
    add_to_server: Callable[[Any, Any], None],
    servicer: Any,
    server: grpc.aio.Server,
    *,
    metrics: Metrics,
) -> None:
    """``add_to_server(servicer, server)`` (a generated ``add_..._to_server`` function) with every
    method handler guarded: undecodable requests get INVALID_ARGUMENT naming the field."""

    def guard(service: str, method: str, handler: grpc.RpcMethodHandler) -> Any:
        return _guard(service, method, handler, metrics)

    add_to_server(servicer, _Registration(server, guard))


def add_totally_decoded(
    add_to_server: Callable[[Any, Any], None], servicer: Any, server: Any
) -> None:
    """``add_to_server(servicer, server)`` with every handler's deserializer made total (bytes
    that do not parse become :class:`Undecodable`), for a server that hands requests on to code
    which refuses them (Ray Serve's gRPC proxy, ``server/ray_proxy.py``)."""
    add_to_server(servicer, _Registration(server, total_decoding))

"""OTLP/HTTP trace requests (protobuf or JSON, gzip or not) decoded with the official
``opentelemetry-proto`` definitions into ``domain.otlp.Span``; answers in the request's encoding.

OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping would read base64: the ids
are turned to base64 before ``json_format`` parses the document into the same message the
protobuf path decodes, so both encodings go through one definition.
"""
from __future__ import annotations

import base64
import zlib
from typing import Any

from ..domain.errors import InvalidInput, PayloadTooLarge
from ..domain.otlp import Span

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"


def media_type(content_type: str | None) -> str:
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind not in (PROTOBUF, JSON):
        raise UnsupportedMediaType(f"OTLP/HTTP takes {PROTOBUF} or {JSON}, not {kind or 'no Content-Type'}")
    return kind


def inflate(raw: bytes, encoding: str | None, limit: int) -> bytes:
    """The body, gunzipped when ``Content-Encoding: gzip``; at most ``limit`` bytes once inflated."""
    enc = (encoding or "identity").strip().lower()
    if enc == "identity":
        return raw
    if enc != "gzip":
        raise InvalidInput(f"Content-Encoding {enc!r} is not supported (gzip or none)")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise InvalidInput(f"the gzip body is corrupt: {exc}") from exc
    if len(out) > limit:
        raise PayloadTooLarge(f"the trace request inflates past {limit} bytes")
    if not inflater.eof:
        raise InvalidInput("the gzip body is truncated")
    return out


def _hex_ids_to_base64(doc: Any) -> Any:
    for rs in doc.get("resourceSpans") or [] if isinstance(doc, dict) else []:
        for ss in rs.get("scopeSpans") or [] if isinstance(rs, dict) else []:
            for span in ss.get("spans") or [] if isinstance(ss, dict) else []:
                for key in ("traceId", "spanId", "parentSpanId"):
                    value = span.get(key) if isinstance(span, dict) else None
                    if isinstance(value, str) and value:
                        try:
                            span[key] = base64.b64encode(bytes.fromhex(value)).decode()
                        except ValueError as exc:
                            raise InvalidInput(f"{key} {value[:40]!r} is not hex") from exc
                for ev in span.get("links") or [] if isinstance(span, dict) else []:
                    for key in ("traceId", "spanId"):
                        if isinstance(ev, dict) and isinstance(ev.get(key), str) and ev[key]:
                            ev[key] = base64.b64encode(bytes.fromhex(ev[key])).decode()
    return doc


def decode(body: bytes, kind: str) -> Any:
    """The ``ExportTraceServiceRequest`` of an OTLP body (InvalidInput if it is not one)."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        if kind == PROTOBUF:
            request.ParseFromString(body)
        else:
            import json

            doc = json.loads(body)
            if not isinstance(doc, dict):
                raise ValueError(f"the body is a JSON {type(doc).__name__}, not an object")
            json_format.ParseDict(_hex_ids_to_base64(doc), request, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"not an OTLP trace export request: {str(exc)[:200]}") from exc
    return request


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return getattr(v, which)


_SCALARS = frozenset({"string_value", "bool_value", "int_value", "double_value"})


def _attrs(kvs: Any) -> dict[str, Any]:
    out = {}
    for kv in kvs:  # most values are scalars (strings, mostly): read them without _value's call
        v = kv.value
        which = v.WhichOneof("value")
        out[kv.key] = getattr(v, which) if which in _SCALARS else _value(v)
    return out


def spans(request: Any) -> list[Span]:
    """The request's spans; a span without a 16-byte trace id or an 8-byte span id is refused."""
    out = []
    traces: dict[bytes, str] = {}  # a batch's spans share few trace ids: each made hex once
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                trace_id, span_id, parent = s.trace_id, s.span_id, s.parent_span_id
                if len(trace_id) != 16 or len(span_id) != 8 or len(parent) not in (0, 8):
                    raise InvalidInput(f"span {s.name[:80]!r}: a trace id is 16 bytes, a span id 8")
                status = s.status
                events = s.events
                out.append(Span(
                    trace_id=traces.get(trace_id) or traces.setdefault(trace_id, trace_id.hex()), span_id=span_id.hex(),
                    parent_span_id=parent.hex(), name=s.name, start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano,
                    attributes=_attrs(s.attributes), status_code=int(status.code), status_message=status.message,
                    events=tuple((e.name, _attrs(e.attributes)) for e in events) if events else (), resource=resource,
                ))
    return out


def answer(kind: str, rejected: int, message: str) -> tuple[bytes | str, str]:
    """``ExportTraceServiceResponse`` in the request's encoding: partial success names the spans
    refused, empty otherwise."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    resp = ExportTraceServiceResponse()
    if rejected:
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = message[:1000]
    if kind == PROTOBUF:
        return resp.SerializeToString(), PROTOBUF
    import json

    return json.dumps(json_format.MessageToDict(resp)), JSON


__all__ = ["answer", "decode", "inflate", "media_type", "spans"]

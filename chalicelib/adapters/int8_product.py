"""A matrix-vector product in 8-bit integers: an index's first pass over every row, a quarter of
the memory float32 reads.

At 100k lessons the float32 product reads 150 MB per query and is bound by memory, not arithmetic;
the same rows in uint8 are 38 MB. numpy has no fast integer product, so it runs on onnxruntime
(already the embedder's runtime): one ``MatMulInteger`` node, uint8 rows by an int8 column, int32
sums, computed by its quantized kernels. The graph is encoded here by hand (a few protobuf fields)
so that no ``onnx`` package is needed.

``Int8Rows`` holds a matrix's rows as ``round(x * scale) + 128`` in uint8. The product of those rows
with a query quantized the same way orders the rows as their cosines do, up to the rounding: the
added 128 adds the same amount to every row's sum. The callers rank on it only to pick a few times
more rows than they return, then score those in float32.
"""
from __future__ import annotations

import logging
import threading

import numpy as np

log = logging.getLogger("hindsight.index")

# onnx TensorProto.DataType
_UINT8, _INT8, _INT32 = 2, 3, 6


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value: bytes | str | int) -> bytes:
    """One protobuf field: a varint for an int, else length-delimited bytes."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _tensor_info(name: str, elem_type: int, dims: tuple[str | int, ...]) -> bytes:
    """ValueInfoProto: name, TypeProto{tensor_type{elem_type, shape{dim...}}}."""
    shape = b"".join(_field(1, _field(1, d) if isinstance(d, int) else _field(2, d)) for d in dims)
    tensor = _field(1, elem_type) + _field(2, shape)
    return _field(1, name) + _field(2, _field(1, tensor))


def model_bytes() -> bytes:
    """ModelProto of Y[n, 1] (int32) = MatMulInteger(A[n, d] uint8, B[d, 1] int8), opset 13."""
    node = _field(1, "A") + _field(1, "B") + _field(2, "Y") + _field(3, "product") + _field(4, "MatMulInteger")
    graph = (
        _field(1, node) + _field(2, "int8_product")
        + _field(11, _tensor_info("A", _UINT8, ("n", "d"))) + _field(11, _tensor_info("B", _INT8, ("d", 1)))
        + _field(12, _tensor_info("Y", _INT32, ("n", 1)))
    )
    opset = _field(1, "") + _field(2, 13)
    return _field(1, 8) + _field(7, graph) + _field(8, opset)


_session = None
_session_lock = threading.Lock()
_unavailable = False


def _get_session():
    """The process's session (thread-safe to run from many threads), or None without onnxruntime
    (or once a product failed)."""
    global _session, _unavailable
    if _unavailable:
        return None
    if _session is None:
        with _session_lock:
            if _session is None and not _unavailable:
                try:
                    import onnxruntime as ort

                    options = ort.SessionOptions()
                    # one thread per call: the index splits a product into blocks on its own threads
                    options.intra_op_num_threads = 1
                    options.inter_op_num_threads = 1
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    options.log_severity_level = 3
                    _session = ort.InferenceSession(model_bytes(), options, providers=["CPUExecutionProvider"])
                except Exception as exc:  # no onnxruntime, or one that refuses the graph: float32 alone
                    disable(exc)
                    return None
    return _session


def available() -> bool:
    return _get_session() is not None


def disable(exc: BaseException) -> None:
    """A product failed: the process's searches go back to float32 alone (logged once)."""
    global _unavailable
    if not _unavailable:
        _unavailable = True
        log.error("8-bit product failed, searches use float32 alone from now on: %r", exc)


def quantized_query(q: np.ndarray) -> np.ndarray:
    """``q`` as the int8 column the product takes (its own scale: a query's scale orders nothing)."""
    top = float(np.abs(q).max()) if q.size else 0.0
    scale = 127.0 / top if top > 0 else 1.0
    return np.rint(q * scale).astype(np.int8).reshape(-1, 1)


def product(rows: np.ndarray, column: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = rows @ column`` in int32 (``rows``: uint8, C-contiguous; ``column``: int8 [d, 1])."""
    out[:] = _get_session().run(None, {"A": rows, "B": column})[0].reshape(-1)


class Int8Rows:
    """A float32 matrix's rows in uint8 (``round(x * scale) + 128``), kept beside it row by row.

    ``scale`` is set when the copy is made, from its largest absolute value with some headroom; a
    later row beyond it (which would be clipped) asks for a new copy (``fits``)."""

    HEADROOM = 1.25

    def __init__(self, vecs: np.ndarray, n: int) -> None:
        top = float(np.abs(vecs[:n]).max()) if n else 0.0
        self.scale = 127.0 / (top * self.HEADROOM) if top > 0 else 127.0
        self.limit = 127.0 / self.scale
        self.codes = np.empty(vecs.shape, dtype=np.uint8)
        for start in range(0, n, 8192):  # a few MB of float32 temporaries at a time
            end = min(n, start + 8192)
            self.codes[start:end] = self._quantized(vecs[start:end])

    def _quantized(self, x: np.ndarray) -> np.ndarray:
        return (np.clip(np.rint(x * self.scale), -127, 127) + 128).astype(np.uint8)

    def fits(self, vec: np.ndarray) -> bool:
        return not vec.size or not float(np.abs(vec).max()) > self.limit  # NaN: nothing to rescale for

    def grow(self, capacity: int) -> None:
        if capacity > len(self.codes):
            codes = np.empty((capacity, self.codes.shape[1]), dtype=np.uint8)
            codes[: len(self.codes)] = self.codes
            self.codes = codes

    def set(self, row: int, vec: np.ndarray) -> None:
        self.codes[row] = self._quantized(vec)

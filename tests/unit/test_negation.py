from chalicelib.domain.lexical import terms
from chalicelib.domain.negation import split_negation


def test_a_cue_negates_the_words_after_it_up_to_the_end_of_its_clause():
    n = split_negation("renewal refused, no one else has it on hold; the patron owes fines")
    assert n.negated == "one else has it on hold"
    assert n.asserted == "renewal refused, ; the patron owes fines"
    assert "hold" not in terms(n.asserted) and "fin" in terms(n.asserted)


def test_a_conjunction_that_starts_another_clause_ends_the_scope():
    n = split_negation("the guests have not paid but they want to leave")
    assert n.negated == "paid"
    assert "leav" in terms(n.asserted) and "paid" not in terms(n.asserted)


def test_the_scope_is_a_few_content_words_at_most():
    n = split_negation("there is no reason to restart the primary database cluster in region eu-west-1 today")
    # five content words negated (reason, restart, primary, database, cluster), the rest asserted
    assert n.negated.split()[-1] == "cluster"
    assert "eu-west-1" in n.asserted and "today" in n.asserted


def test_contractions_and_negative_pronouns_are_cues():
    assert split_negation("the guests haven't paid").negated == "paid"
    assert split_negation("the guests haven\u2019t paid").negated == "paid"
    # a negative pronoun as object empties the predicate before it too
    n = split_negation("renewal refused; the patron owes nothing")
    assert n.negated == "owes"
    assert n.asserted == "renewal refused; the patron"


def test_phrases_that_only_look_negative_negate_nothing():
    for text in ("not only the invoice but the receipt", "no matter the region, deploy", "plain text"):
        n = split_negation(text)
        assert not n.has_negation and n.asserted == text


def test_what_no_token_covers_stays_in_the_asserted_text():
    n = split_negation("post to #design, not to @omar")
    assert n.negated == "to omar"
    assert "#*" in terms(n.asserted) and "@*" not in terms(n.asserted)

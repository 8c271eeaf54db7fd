import pytest

from chalicelib.domain.lexical import saturate, terms
from tests.support.fakes import term_score


def test_identifiers_are_kept_whole_and_split_into_words():
    assert terms("Call get_weather") == ["call", "get_weather", "get", "weather"]
    assert terms("MissingParameter: city", "plural") == ["missingparameter", "missing", "parameter", "city"]
    assert terms("MissingParameter: city") == ["missingparameter", "miss", "parameter", "city"]  # light: parts folded
    assert terms("HTTPError 404") == ["httperror", "http", "error", "404"]


def test_stopwords_are_dropped():
    assert terms("what is the weather in the city") == ["weather", "city"]


def test_rare_terms_weigh_more_and_repetition_saturates():
    rare, common = term_score(1, 1, 100, 10, 10), term_score(1, 50, 100, 10, 10)
    assert rare > common > 0
    assert term_score(10, 1, 100, 10, 10) < 10 * rare


def test_saturation_maps_scores_into_the_unit_interval():
    assert saturate(0) == 0 and saturate(4.0) == 0.5 and 0.9 < saturate(100) < 1


def test_a_channel_and_a_person_are_different_kinds_of_reference():
    from chalicelib.domain.lexical import terms

    assert "#*" in terms("Post the summary to #growth") and "@*" not in terms("Post the summary to #growth")
    assert "@*" in terms("DM @omar.farouk") and "#*" not in terms("DM @omar.farouk")
    # placeholders keep the kind; emails and number references (#59871, #<n>) are not sigils
    assert terms("channel_not_found: '#<channel>'").count("#*") == 1
    assert not {"#*", "@*"} & set(terms("mail ops@example.com about ticket #59871 and #<n>"))


def test_plurals_match_their_singular_but_identifiers_stay_whole():
    from chalicelib.domain.lexical import stem, terms

    assert terms("travel requests") == terms("travel request")
    assert stem("policies") == "policy" and stem("status") == "status" and stem("address") == "address"
    # a tool name is matched whole; its parts are plain words and are stemmed
    assert terms("list_channels")[:3] == ["list_channels", "list", "channel"]
    assert "v2.4.1" in terms("deploy v2.4.1")


def test_saturate_fusion_scores_each_hit_on_its_own():
    from chalicelib.domain.lexical import scaled

    assert scaled({"a": 4.0, "b": 12.0}, "saturate") == {"a": 0.5, "b": 0.75}
    assert scaled({"a": 4.0, "b": 40.0}, "saturate")["a"] == 0.5  # whatever the other hits score


def test_relative_fusion_scores_each_hit_against_the_query_best():
    from chalicelib.domain.lexical import scaled

    # half 0: a ratio to the best, the same whatever scale the backend's BM25 has
    assert scaled({"a": 6.0, "b": 3.0}, "relative", 0.0) == {"a": 1.0, "b": 0.5}
    assert scaled({"a": 6.0 / 2.2, "b": 3.0 / 2.2}, "relative", 0.0) == pytest.approx({"a": 1.0, "b": 0.5})
    # half > 0 damps a query whose best match is weak: a common word alone does not reach 1
    weak, strong = scaled({"a": 1.0}, "relative", 4.0), scaled({"a": 36.0}, "relative", 4.0)
    assert weak == {"a": 0.2} and strong == {"a": 0.9}
    assert scaled({}, "relative", 0.0) == {} and scaled({"a": 0.0}, "relative", 0.0) == {"a": 0.0}


def test_an_unknown_fusion_is_refused():
    from chalicelib.domain.lexical import scaled

    with pytest.raises(ValueError):
        scaled({"a": 1.0}, "sum")


def test_the_light_stemmer_folds_ing_ed_and_a_final_e_on_both_sides_alike():
    from chalicelib.domain.lexical import terms

    assert terms("painted painting paints paint", "light") == ["paint"] * 4
    assert terms("loved loving love", "light") == ["lov"] * 3
    assert terms("stopped running", "light") == ["stop", "run"] and terms("called passed", "light") == ["call", "pass"]
    # short words keep their ending; identifiers stay whole, their parts are folded like words
    assert terms("thing need", "light") == ["thing", "need"]
    assert terms("failed_login", "light") == ["failed_login", "fail", "login"]
    # "plural" folds plurals only; the default is light
    assert terms("painted paints", "plural") == ["painted", "paint"] and terms("painted paints") == ["paint", "paint"]


def test_an_unknown_stemmer_is_refused():
    from chalicelib.domain.lexical import Bm25Params

    with pytest.raises(ValueError):
        Bm25Params(stemmer="porter")

"""A human lesson that corrects another: ``supersedes`` on a manual write, and the probable
corrections the answer names (``correction_of``)."""
from __future__ import annotations

import pytest

from chalicelib.domain.errors import Conflict, NotFound
from chalicelib.domain.models import ExperienceStatus
from chalicelib.services import experiences, recall

SITUATION = "Choosing the database for the orders service"


def write(deps, advice: str, situation: str = SITUATION, **kw):
    return experiences.write_experience(deps, "t1", situation, advice=advice, agent_id="bot", **kw)


def test_a_lesson_that_names_what_it_supersedes_archives_it_and_chains_both(deps, clock):
    old = write(deps, "Use SQLite for the orders service.").experience
    clock.advance(seconds=60)
    new = write(deps, "Use PostgreSQL for the orders service: SQLite cannot take concurrent writers.",
                supersedes=[old.experience_id]).experience
    stored = deps.experiences.get("t1", old.experience_id)
    assert stored.status is ExperienceStatus.ARCHIVED and stored.superseded_by == new.experience_id
    assert "superseded by" in (stored.status_reason or "")
    assert new.supersedes == old.experience_id and new.version == old.version + 1
    hits, _ = recall.recall(deps, "t1", "which database for orders", agent_id="bot")
    assert [h.experience.experience_id for h in hits] == [new.experience_id]


@pytest.mark.parametrize("where", [{"tenant": "t2"}, {"agent_id": "other-bot"}, {"user_id": "u1"}])
def test_an_id_of_another_tenant_or_scope_is_not_found_and_nothing_is_written(deps, where):
    theirs = experiences.write_experience(deps, where.get("tenant", "t1"), SITUATION, advice="Use SQLite.",
                                          agent_id=where.get("agent_id", "bot"), user_id=where.get("user_id")).experience
    with pytest.raises(NotFound):
        write(deps, "Use PostgreSQL.", supersedes=[theirs.experience_id], experience_id="mine")
    assert deps.experiences.get_many("t1", ["mine"]) == {}
    assert deps.experiences.get(where.get("tenant", "t1"), theirs.experience_id).status is ExperienceStatus.ACTIVE


def test_an_unknown_id_is_not_found(deps):
    with pytest.raises(NotFound):
        write(deps, "Use PostgreSQL.", supersedes=["exp_nope"])


def test_a_forgotten_lesson_cannot_be_superseded(deps):
    old = write(deps, "Use SQLite.").experience
    experiences.forget(deps, "t1", old.experience_id, "wrong")
    with pytest.raises(Conflict):
        write(deps, "Use PostgreSQL.", supersedes=[old.experience_id])
    assert deps.experiences.get("t1", old.experience_id).status is ExperienceStatus.FORGOTTEN


def test_a_lesson_replaced_by_another_already_cannot_be_replaced_again(deps):
    old = write(deps, "Use SQLite.").experience
    write(deps, "Use PostgreSQL.", supersedes=[old.experience_id])
    with pytest.raises(Conflict):
        write(deps, "Use MySQL.", supersedes=[old.experience_id])


def test_a_human_lesson_about_the_same_situation_with_other_advice_is_flagged_as_a_probable_correction(deps, clock):
    old = write(deps, "Use SQLite for the orders service.").experience
    clock.advance(seconds=60)
    written = write(deps, "Use PostgreSQL for the orders service.")
    assert written.correction_of == [old.experience_id]
    assert deps.experiences.get("t1", old.experience_id).status is ExperienceStatus.ACTIVE  # flagged, not applied


def test_the_same_advice_again_or_another_situation_is_not_a_correction(deps):
    write(deps, "Use SQLite for the orders service.")
    assert write(deps, "use sqlite for the orders service").correction_of == []
    assert write(deps, "Send the invoice as a PDF attachment.", situation="Emailing invoices to customers").correction_of == []


def test_auto_supersedes_the_probable_corrections(deps, clock):
    old = write(deps, "Use SQLite for the orders service.").experience
    clock.advance(seconds=60)
    written = write(deps, "Use PostgreSQL for the orders service.", supersedes="auto")
    assert written.correction_of == []
    assert written.experience.supersedes == old.experience_id
    assert deps.experiences.get("t1", old.experience_id).superseded_by == written.experience.experience_id


def test_auto_with_nothing_to_correct_writes_the_lesson_alone(deps):
    written = write(deps, "Use PostgreSQL for the orders service.", supersedes="auto")
    assert written.created and written.experience.supersedes is None


def test_recall_ranks_a_newer_human_correction_above_the_lesson_it_contradicts_and_says_why(deps, clock):
    # worded as the question is, the old lesson would outrank its correction
    old = write(deps, "Which database for the orders service: use SQLite for the orders service database.").experience
    clock.advance(seconds=60)
    new = write(deps, "Use PostgreSQL instead: concurrent writers.").experience
    assert new.contradicts == [old.experience_id]
    hits, _ = recall.recall(deps, "t1", "which database for the orders service", agent_id="bot")
    order = [h.experience.experience_id for h in hits]
    assert order.index(new.experience_id) < order.index(old.experience_id)
    assert hits[order.index(new.experience_id)].explanation.corrects == (old.experience_id,)
    assert hits[order.index(old.experience_id)].explanation.corrects == ()


def test_an_agents_lesson_never_jumps_a_human_one(deps, clock):
    from chalicelib.domain.corrections import corrections_first
    from chalicelib.domain.models import Explanation, Hit, Source

    human = write(deps, "Use SQLite.").experience
    clock.advance(seconds=60)
    agent = write(deps, "Use PostgreSQL.", source="agent").experience
    from dataclasses import replace

    agent = replace(agent, contradicts=[human.experience_id], source=Source.AGENT)
    blank = Explanation(semantic=0, tag_match=0, freshness=1, utility=0.5, confidence=0.5)
    hits = [Hit(human, 0.9, blank), Hit(agent, 0.5, blank)]
    assert [h.experience for h in corrections_first(hits)] == [human, agent]


def test_a_correction_that_rewords_the_situation_more_broadly_and_names_what_it_replaces_is_flagged(deps, clock):
    old = write(deps, "Return dates as DD/MM/YYYY strings.", situation="Formatting dates in the public API responses").experience
    clock.advance(seconds=60)
    written = write(deps, "Return dates as ISO 8601 timestamps in UTC; clients in the US misread DD/MM/YYYY.",
                    situation="Date format of the public API")
    assert written.correction_of == [old.experience_id]
    assert written.experience.contradicts == [old.experience_id]
    hits, _ = recall.recall(deps, "t1", "what date format do API responses use", agent_id="bot")
    order = [h.experience.experience_id for h in hits]
    assert order[0] == written.experience.experience_id


@pytest.mark.parametrize(("old", "new"), [
    # narrower: a special case beside the general lesson, not its correction
    (("Refunding an order", "Refund to the card the order was paid with."),
     ("Refunding an order paid with a gift card", "Refund a gift card order as store credit, never to a card.")),
    # broader, but the new advice does not answer what the old one said
    (("Deploying the billing service on Fridays", "Never deploy the billing service on Fridays."),
     ("Deploying the billing service", "Deploy the billing service blue-green, one zone at a time.")),
    # broader, and the old advice is about what only the old situation says: a special case it keeps
    (("Adding logs to the ingestion worker for failed batches", "Log each failed batch with its id and the first error."),
     ("Adding logs to the ingestion worker", "Log through the structured JSON logger with the request id.")),
    # too short to say which lesson it rewords
    (("Formatting dates in the public API responses", "Return dates as DD/MM/YYYY strings."),
     ("Dates", "Return dates in the reader's locale, never DD/MM/YYYY.")),
])
def test_a_look_alike_situation_is_not_flagged_by_its_words(deps, clock, old, new):
    first = write(deps, old[1], situation=old[0]).experience
    clock.advance(seconds=60)
    second = write(deps, new[1], situation=new[0])
    assert first.experience_id not in second.correction_of

"""The ingest benchmark's HTTP clients send what its in-process rows send: batches of the same mix,
encoded before the level is timed, each with the trajectory id of the call written in."""
from __future__ import annotations

import json
import random

from bench.ingest_throughput import encoded_batches, make_events

NOW_MS = 1_764_600_000_000


def test_an_encoded_batch_holds_the_events_of_its_trajectory_and_seqs():
    batches = encoded_batches(seed=7, batch=20, traj_events=100, now_ms=NOW_MS)
    rng = random.Random(1)
    for seq in (0, 20, 80):
        events = json.loads(batches(rng, "h8c3-t12", seq, 20, "goal", NOW_MS))["events"]
        assert [e["event_id"] for e in events] == [f"h8c3-t12-e{n}" for n in range(seq, seq + 20)]
        assert [e["node_id"] for e in events] == [f"n{n}" for n in range(seq, seq + 20)]
        assert "@traj@" not in json.dumps(events)


def test_encoded_batches_are_the_in_process_mix_and_vary_between_calls():
    batches = encoded_batches(seed=7, batch=20, traj_events=100, now_ms=NOW_MS)
    rng = random.Random(2)
    sent = [json.loads(batches(rng, f"t{i}", 0, 20, "goal", NOW_MS))["events"] for i in range(30)]
    types = {e["type"] for events in sent for e in events}
    reference = {e["type"] for i in range(30) for e in make_events(random.Random(i), "t", 0, 20, "g", NOW_MS)}
    assert types == reference  # the same kinds of events as the in-process rows generate
    contents = {json.dumps([e["content"] for e in events]) for events in sent}
    assert len(contents) > 1  # not one batch over and over

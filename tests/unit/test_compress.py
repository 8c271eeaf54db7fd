from chalicelib.domain.compress import compress_event, compress_trajectory, estimate_tokens, raw_size_tokens

from tests.support.builders import call, said, traj


def test_a_failed_call_keeps_tool_params_status_and_error():
    line = compress_event(call("get_weather", {"date": "tomorrow"}, ok=False, error="MissingParameter: city is required"))
    assert line.endswith("CALL get_weather(date=tomorrow) -> ERROR MissingParameter: city is required")


def test_long_results_and_reasoning_are_truncated_to_the_decision():
    big = call("search", {"q": "x"}, result={"rows": list(range(500))})
    assert len(compress_event(big)) < 180
    thought = said("I will ask the user for the city first. Then I call the weather tool with it and more words.", kind="llm_reasoning")
    assert compress_event(thought).endswith("THINK I will ask the user for the city first.")


def test_compression_shrinks_a_verbose_trajectory_severalfold():
    events = [
        said("Please find me the cheapest flight from Paris to Rome next Friday, I am flexible on time " * 3),
        said("The user wants a flight. First I need airport codes. Let me think about which tool to use " * 5, kind="llm_reasoning"),
        call("search_flights", {"from": "Paris", "to": "Rome"}, ok=False, error="InvalidAirport: expected IATA code " + "x" * 300),
        call("lookup_airport", {"city": "Paris"}, result={"code": "CDG", "details": "y" * 2000}),
        call("search_flights", {"from": "CDG", "to": "FCO"}, result=[{"flight": f"AZ{i}", "price": 100 + i} for i in range(50)]),
    ]
    t = traj(goal="cheapest flight Paris to Rome")
    compact = compress_trajectory(t, events)
    assert estimate_tokens(compact) * 4 < raw_size_tokens(t, events)
    assert "ERROR InvalidAirport" in compact and "lookup_airport(city=Paris)" in compact

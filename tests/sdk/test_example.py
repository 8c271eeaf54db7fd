"""The example agent (examples/weather_agent.py) learns from its first run, end to end."""
from __future__ import annotations

import importlib.util
import io
import sys

from hindsight_xp import Hindsight

from devtools.server_process import ROOT


def load_example():
    spec = importlib.util.spec_from_file_location("weather_agent", ROOT / "examples" / "weather_agent.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_the_second_run_recalls_the_lesson_and_needs_fewer_steps(client: Hindsight) -> None:
    example = load_example()
    out = io.StringIO()
    first, second = example.demo(client, "weather-bot", out=out)

    assert first.advice == ""
    assert first.steps[0].startswith('get_weather({"date": "tomorrow"}) -> error: MissingParameter')
    assert [s.split("(")[0] for s in first.steps] == ["get_weather", "ask_user", "get_weather", "answer: Here is the forecast: tomorrow in Lyon: rain, 14°C."]

    assert "Call `ask_user` before `get_weather`" in second.advice
    assert [s.split("(")[0] for s in second.steps][:2] == ["ask_user", "get_weather"]
    assert len(second.steps) < len(first.steps) and second.answer == first.answer
    assert not any("error" in s for s in second.steps)

    printed = out.getvalue()
    assert "run 1 (no memory): 4 steps" in printed and "run 2 (with hindsight): 3 steps" in printed

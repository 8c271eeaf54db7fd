"""Settings come from keyword arguments, then HINDSIGHT_* variables (any case), then defaults."""
import pydantic
import pytest

from chalicelib.settings import Settings, from_environment


def test_the_environment_fills_what_the_arguments_do_not(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_BACKEND", "aws")
    monkeypatch.setenv("hindsight_worker", "false")  # any case, as pydantic-settings read it
    monkeypatch.setenv("HINDSIGHT_RATE_LIMIT_PER_SECOND", "2.5")
    monkeypatch.setenv("HINDSIGHT_EMBEDDER_THREADS", "4")
    s = Settings(worker=True)
    assert (s.backend, s.worker, s.rate_limit_per_second, s.embedder_threads) == ("aws", True, 2.5, 4)
    assert Settings().worker is False and Settings().review_min_events == 3  # the default


def test_the_port_is_hindsight_port_else_the_platforms_port():
    assert from_environment(["port"], {"PORT": "7", "HINDSIGHT_PORT": "9"}) == {"port": "9"}
    assert from_environment(["port"], {"PORT": "7"}) == {"port": "7"}
    assert from_environment(["port", "host"], {"OTHER": "1"}) == {}


def test_a_bad_value_is_refused_with_its_name(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_REVIEW_MIN_EVENTS", "three")
    with pytest.raises(pydantic.ValidationError, match="review_min_events"):
        Settings()
    monkeypatch.setenv("HINDSIGHT_REVIEW_MIN_EVENTS", "3")
    monkeypatch.setenv("HINDSIGHT_BACKEND", "gcp")
    with pytest.raises(pydantic.ValidationError, match="backend"):
        Settings()


def test_the_embedded_backend_refuses_to_start_in_lambda(tmp_path, monkeypatch):
    """``chalice deploy`` of .chalice/config.json would ship the embedded backend: each Lambda
    instance would keep its own SQLite files in /tmp and lose them. It refuses, naming the way."""
    from chalicelib import container

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "hindsight-dev-api_handler")
    with pytest.raises(container.EmbeddedInLambda, match="infra/"):
        container.build(Settings(data_dir=str(tmp_path), embedder="hash"))
    assert not any(tmp_path.iterdir())  # nothing written before refusing

"""`chalice package` / `chalice deploy` read app.py with Chalice's policy analyzer (autogen_policy is
on in .chalice/config.json); code it cannot parse breaks packaging for everyone who deploys with
Chalice directly (bench/cold_start.py does)."""
from pathlib import Path

from chalice.analyzer import get_client_calls_for_app

APP = Path(__file__).resolve().parents[2] / "app.py"


def test_chalices_policy_analyzer_reads_app_py():
    # app.py makes no boto3 client calls of its own: the adapters do, and infra/ grants them
    assert get_client_calls_for_app(APP.read_text()) == {}

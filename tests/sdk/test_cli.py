"""The `hindsight-xp` command against the real server (in process, through typer's runner)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from hindsight_xp import Hindsight, Unauthorized
from hindsight_xp.cli import app

from .conftest import FAST_RETRY
from .servers import HindsightServer

runner = CliRunner()


def hindsight(server: HindsightServer, *args: str, api_key: str | None = None, admin: bool = True):
    env = {"HINDSIGHT_URL": server.url, "COLUMNS": "200", "HINDSIGHT_API_KEY": api_key,
           "HINDSIGHT_ADMIN_KEY": server.admin_key if admin else None}  # fmt: skip
    return runner.invoke(app, list(args), env=env)


def needs(server: HindsightServer, method: str, path: str) -> None:
    if not server.has_endpoint(method, path):
        pytest.skip(f"the service has no {method} {path} yet (being added in parallel)")


def tenant_client(server: HindsightServer, key: str) -> Hindsight:
    return Hindsight(server.url, key, retry=FAST_RETRY)


def test_tenant_create_prints_a_working_key(server: HindsightServer) -> None:
    result = hindsight(server, "tenants", "create", "acme", "--json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    with tenant_client(server, created["api_key"]) as c:
        assert c.list_experiences().items == ()
    table = hindsight(server, "tenants", "create", "beta")
    assert "api_key" in table.stdout and "cannot show it again" in table.stderr


def test_tenants_list_shows_the_new_tenant(server: HindsightServer) -> None:
    needs(server, "GET", "/v1/tenants")
    tenant_id = json.loads(hindsight(server, "tenants", "create", "listed-co", "--json").stdout)["tenant_id"]
    listed = json.loads(hindsight(server, "tenants", "list", "--json").stdout)
    assert {"tenant_id": tenant_id, "name": "listed-co"}.items() <= next(t for t in listed if t["tenant_id"] == tenant_id).items()
    assert "listed-co" in hindsight(server, "tenants", "list").stdout


def test_the_sdk_follows_the_tenant_listings_cursor(server: HindsightServer) -> None:
    for _ in range(3):
        server.new_tenant()
    with Hindsight(server.url, admin_key=server.admin_key, retry=FAST_RETRY) as admin:
        first = admin.list_tenants_page(limit=2)
        assert len(first.tenants) == 2 and first.cursor
        every = [t.tenant_id for t in admin.list_tenants_page(limit=1000).tenants]
        assert [t.tenant_id for t in admin.list_tenants(page_size=2)] == every
        assert [t.tenant_id for t in admin.iter_tenants(page_size=1)] == every
        assert admin.set_retention(every[0], 30).event_retention_days == 30
        assert admin.list_tenants_page(limit=1).tenants[0].event_retention_days == 30
        assert admin.set_retention(every[0], None).event_retention_days is None
    assert len(json.loads(hindsight(server, "tenants", "list", "--json").stdout)) == len(every)
    set_ = json.loads(hindsight(server, "tenants", "retention", every[0], "7", "--json").stdout)
    assert set_ == {"tenant_id": every[0], "event_retention_days": 7}
    assert json.loads(hindsight(server, "tenants", "list", "--json").stdout)[0]["event_retention_days"] == 7
    assert "default" in hindsight(server, "tenants", "retention", every[0], "default").stdout


def test_rotating_a_key_revokes_the_old_one_unless_kept(server: HindsightServer) -> None:
    needs(server, "POST", "/v1/tenants/{tenant_id}/keys")
    created = json.loads(hindsight(server, "tenants", "create", "rotating", "--json").stdout)
    kept = json.loads(hindsight(server, "tenants", "rotate-key", created["tenant_id"], "--keep-old", "--json").stdout)
    newest = json.loads(hindsight(server, "tenants", "rotate-key", created["tenant_id"], "--json").stdout)["api_key"]
    with tenant_client(server, newest) as c:
        assert c.list_experiences().items == ()
    for old in (created["api_key"], kept["api_key"]):
        with tenant_client(server, old) as c, pytest.raises(Unauthorized):
            c.list_experiences()


def _seed(c: Hindsight) -> list[str]:
    a = c.write_experience("Paying invoices", lesson="Needs approval", advice="Ask for approval before paying.",
                           tags=["finance"], tools=["pay"], agent_id="ap-bot", source="agent", confidence=0.7)  # fmt: skip
    b = c.write_experience("Sending emails", lesson="Use the template", advice="Use the approved template.")
    d = c.write_experience("Old rule", lesson="Obsolete", advice="Fax the form.")
    c.forget(d.experience_id, "we have no fax")
    return [a.experience_id, b.experience_id, d.experience_id]


def _by_id(path: Path) -> dict[str, dict]:
    return {doc["experience_id"]: doc for doc in map(json.loads, path.read_text().splitlines())}


def test_export_then_import_restores_every_experience_and_a_second_import_changes_nothing(
    server: HindsightServer, api_key: str, tmp_path: Path
) -> None:
    with tenant_client(server, api_key) as c:
        ids = _seed(c)
    backup = tmp_path / "backup.jsonl"
    result = hindsight(server, "export", "--out", str(backup), api_key=api_key)
    assert result.exit_code == 0, result.output
    assert "exported 3 experiences" in result.stderr and "exporting" in result.stderr  # the progress bar
    exported = _by_id(backup)
    assert set(exported) == set(ids) and exported[ids[2]]["status"] == "forgotten"

    other = server.new_tenant("restore-target")
    for _ in range(2):  # the second import must change nothing
        result = hindsight(server, "import", str(backup), api_key=other)
        assert result.exit_code == 0, result.output
        restored_file = tmp_path / "restored.jsonl"
        assert hindsight(server, "export", "-o", str(restored_file), api_key=other).exit_code == 0
        restored = _by_id(restored_file)
        assert set(restored) == set(ids)
        for exp_id, doc in exported.items():
            same = ("situation", "lesson", "advice", "tags", "tools", "agent_id", "source", "confidence", "status", "status_reason")
            assert {k: restored[exp_id][k] for k in same} == {k: doc[k] for k in same}
            assert restored[exp_id]["version"] == (1 if doc["status"] == "active" else restored[exp_id]["version"])
        first_run = result.stderr if _ == 0 else first_run
    assert "imported 3 experiences: 3 created, 0 unchanged" in first_run and "1 forgotten again" in first_run
    assert "imported 3 experiences: 0 created, 3 unchanged" in result.stderr  # second run: all already there
    assert "0 forgotten again" in result.stderr


def test_import_reports_bad_lines_and_exits_non_zero(server: HindsightServer, api_key: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"experience_id": "ok-1", "situation": "s", "lesson": "l"}\nnot json\n{"situation": ""}\n'
                   '{"lesson": "l"}\n{"situation": "s"}\n{"experience_id": "ok-1", "situation": "s", "lesson": "other"}\n')
    result = hindsight(server, "import", str(bad), api_key=api_key)
    assert result.exit_code == 1
    errors = " ".join(result.stderr.split())  # rich wraps long lines
    assert "line 2: not JSON" in errors
    assert "line 3: field 'situation' is missing or empty" in errors
    assert "line 4: field 'situation' is missing or empty" in errors
    assert "line 5: neither field 'lesson' nor field 'advice' is given" in errors
    assert "4 lines failed" in errors and "KeyError" not in errors
    assert "1 created, 0 unchanged, 1 already there with other content" in errors
    with tenant_client(server, api_key) as c:
        assert c.get_experience("ok-1").lesson == "l"


def test_recall_prints_ranked_lessons_and_the_advice_block(server: HindsightServer, api_key: str) -> None:
    with tenant_client(server, api_key) as c:
        exp = c.write_experience("Uploading large files to storage", lesson="Single PUT fails over 5 GB",
                                 advice="Use multipart upload for files over 5 GB.", tools=["upload"])  # fmt: skip
    table = hindsight(server, "recall", "upload a 10 GB video to storage", "--tools", "upload,list", api_key=api_key)
    assert table.exit_code == 0, table.output
    assert exp.experience_id in table.stdout and "Use multipart upload" in table.stdout
    assert "<hindsight>" in table.stdout and "advice block" in table.stdout
    as_json = json.loads(hindsight(server, "recall", "upload a video", "--json", api_key=api_key).stdout)
    assert as_json["hits"][0]["experience"]["experience_id"] == exp.experience_id
    assert as_json["advice"].startswith("<hindsight>")


def test_an_empty_recall_names_the_agent_whose_lessons_it_hid(server: HindsightServer, api_key: str) -> None:
    with tenant_client(server, api_key) as c:
        c.write_experience("Uploading large files to storage", lesson="Single PUT fails over 5 GB",
                           advice="Use multipart upload for files over 5 GB.", tools=["upload"], agent_id="uploader")  # fmt: skip
        assert c.recall("upload a 10 GB video to storage", tools=["upload"]).hidden_by_scope == {"agent_id": {"uploader": 1}}
        assert c.recall("upload a 10 GB video to storage", tools=["upload"], agent_id="uploader").hidden_by_scope == {}
    printed = hindsight(server, "recall", "upload a 10 GB video to storage", "--tools", "upload", api_key=api_key)
    assert printed.exit_code == 0, printed.output
    assert "nothing recalled" in printed.stdout and "multipart" not in printed.stdout
    assert "1 matching lesson of agent 'uploader', hidden by scope: add --agent-id uploader" in " ".join(printed.stdout.split())
    as_json = json.loads(hindsight(server, "recall", "upload a 10 GB video", "--tools", "upload", "--json", api_key=api_key).stdout)
    assert as_json["hits"] == [] and as_json["hidden_by_scope"] == {"agent_id": {"uploader": 1}}


def test_a_missing_key_is_a_one_line_error(server: HindsightServer) -> None:
    result = hindsight(server, "recall", "anything", admin=False)
    assert result.exit_code == 1 and "HINDSIGHT_API_KEY" in result.stderr and "Traceback" not in result.output


def test_stats_counts_by_status_and_shows_freshness(server: HindsightServer, api_key: str) -> None:
    needs(server, "GET", "/v1/stats")
    with tenant_client(server, api_key) as c:
        _seed(c)
    stats = json.loads(hindsight(server, "stats", "--json", api_key=api_key).stdout)
    assert stats["experiences"] == {"active": 2, "archived": 0, "forgotten": 1}
    assert sum(b["count"] for b in stats["freshness_histogram"]) >= 2
    table = hindsight(server, "stats", api_key=api_key).stdout
    assert "experiences" in table and "freshness" in table and "0.9-1.0" in table


def test_reindex_keeps_recall_working(server: HindsightServer, api_key: str) -> None:
    needs(server, "POST", "/v1/maintenance/reindex")
    with tenant_client(server, api_key) as c:
        exp = c.write_experience("Reindexing", lesson="l", advice="Reindex after restoring a backup.")
        result = hindsight(server, "reindex", api_key=api_key)
        assert result.exit_code == 0, result.output
        assert "reindexed 1 experiences" in result.stdout
        assert c.recall("restoring a backup").hits[0].experience.experience_id == exp.experience_id


@pytest.fixture(scope="module")
def lonely_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HindsightServer]:
    """Decay runs for every tenant: it gets a server of its own so it cannot age other tests' data."""
    srv = HindsightServer(tmp_path_factory.mktemp("decay") / "data").start()
    yield srv
    srv.stop()


def test_decay_as_of_a_later_date_archives_stale_lessons_and_import_skips_them(lonely_server: HindsightServer,
                                                                             tmp_path: Path) -> None:  # fmt: skip
    key = lonely_server.new_tenant()
    with tenant_client(lonely_server, key) as c:
        exp = c.write_experience("Stale", lesson="old", advice="Do the old thing.")
    assert "archived 0" in hindsight(lonely_server, "decay").stdout  # today nothing is stale yet
    year = (datetime.now(timezone.utc) + timedelta(days=365)).replace(tzinfo=None).isoformat()
    assert "as_of must be between" in hindsight(lonely_server, "decay", "--as-of", "2031-01-01T00:00:00").output
    rehearsal = hindsight(lonely_server, "decay", "--as-of", year, "--dry-run")
    assert "dry run: would decay 1, archive 1" in rehearsal.stdout and exp.experience_id in rehearsal.stdout
    with tenant_client(lonely_server, key) as c:
        assert c.get_experience(exp.experience_id).status == "active"
    result = hindsight(lonely_server, "decay", "--as-of", year)
    assert result.exit_code == 0, result.output
    assert "archived 1" in result.stdout
    backup = tmp_path / "b.jsonl"
    hindsight(lonely_server, "export", "-o", str(backup), api_key=key)
    assert _by_id(backup)[exp.experience_id]["status"] == "archived"

    target = lonely_server.new_tenant()
    skipped = hindsight(lonely_server, "import", str(backup), api_key=target)
    assert "skipped 1 archived" in skipped.stderr
    revived = hindsight(lonely_server, "import", str(backup), "--archived", "active", api_key=target)
    assert revived.exit_code == 0
    with tenant_client(lonely_server, target) as c:
        assert c.get_experience(exp.experience_id).status == "active"


WEATHER = [
    {"event_id": "e1", "type": "user_input", "content": {"text": "weather tomorrow?"}},
    {"event_id": "e2", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                                                        "error": "MissingParameter: city is required"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"event_id": "e4", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"},
                                                        "result": "rain"}},
]  # fmt: skip


def test_a_failed_review_is_listed_with_its_reason_and_redriven_once_the_llm_is_back(tmp_path: Path) -> None:
    from devtools.openai_stub import OpenAIStub

    with OpenAIStub() as stub:
        stub.faults(fail=1000)
        srv = HindsightServer(tmp_path / "data", env={"HINDSIGHT_OPENAI_BASE_URL": stub.base_url, "HINDSIGHT_LLM_MAX_RETRIES": "0",
                                                      "HINDSIGHT_REVIEW_MAX_ATTEMPTS": "1"}).start()  # fmt: skip
        try:
            key = srv.new_tenant("llm-down")
            with tenant_client(srv, key) as c:
                c.start_trajectory("weather-bot", "Will it rain tomorrow?", trajectory_id="w1", tools=["get_weather", "ask_user"])
                c.append_events("w1", WEATHER)
                c.finalize("w1", "success")
                assert c.wait_for_review("w1", timeout=30).status == "review_failed"
            failed = json.loads(hindsight(srv, "reviews", "failed", "--json").stdout)
            assert [(f["trajectory_id"], f["kind"], f["attempts"]) for f in failed] == [("w1", "full", 1)]
            assert "stub failure" in failed[0]["error"]
            table = hindsight(srv, "reviews", "failed").stdout
            assert "w1" in table and "stub failure" in table

            refused = hindsight(srv, "reviews", "redrive")  # which ones? it will not guess "all"
            assert refused.exit_code == 2 and "--all" in refused.output
            stub.faults()
            done = hindsight(srv, "reviews", "redrive", "--tenant-id", failed[0]["tenant_id"])
            assert done.exit_code == 0, done.output
            assert "redriven 1" in done.stdout
            with tenant_client(srv, key) as c:
                traj = c.wait_for_review("w1", timeout=30)
                assert traj.status == "reviewed" and len(traj.experience_ids) == 1
                assert c.get_experience(traj.experience_ids[0]).raw["sources"] == ["w1"]
            assert "no failed reviews" in hindsight(srv, "reviews", "failed").stdout
            assert "redriven 0" in hindsight(srv, "reviews", "redrive", "--all").stdout
        finally:
            srv.stop()


def test_the_admin_key_where_docs_sdk_md_puts_it_creates_a_tenant(server: HindsightServer, tmp_path: Path) -> None:
    """docs/sdk.md's line, run as written by a shell from a directory where `make run` left its key."""
    import os
    import re
    import subprocess
    import sys

    from devtools.server_process import ROOT

    doc = (ROOT / "docs" / "sdk.md").read_text()
    (line,) = [m.group(1) for m in re.finditer(r"^(hindsight-xp tenants create .*?)\s+#", doc, re.M)]
    assert "--admin-key" in line.split("tenants create", 1)[1]  # after the command, where the CLI used to refuse it
    (tmp_path / ".hindsight").mkdir()
    (tmp_path / ".hindsight" / "admin_key").write_text(server.admin_key + "\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "hindsight-xp"  # the console script pip makes, pointed at this checkout's SDK
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT / 'sdk' / 'python' / 'src'} exec {sys.executable} -m hindsight_xp \"$@\"\n")
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "HINDSIGHT_URL": server.url, "COLUMNS": "200"}
    out = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    key = re.search(r"api_key:\s+(\S+)", out.stdout).group(1)
    with tenant_client(server, key) as c:
        assert c.list_experiences().items == ()


@pytest.mark.parametrize("argv, expected", [
    (["tenants", "create", "a", "--admin-key", "K"], ["--admin-key", "K", "tenants", "create", "a"]),
    (["recall", "q", "--url=http://h", "--api-key", "k", "--json"], ["--url=http://h", "--api-key", "k", "recall", "q", "--json"]),
    (["--admin-key", "K", "decay"], ["--admin-key", "K", "decay"]),
    (["recall", "--", "--admin-key"], ["recall", "--", "--admin-key"]),
    (["tenants", "list", "--admin-key"], ["tenants", "list", "--admin-key"]),
])  # fmt: skip
def test_global_options_move_before_the_command(argv, expected) -> None:
    from hindsight_xp._entry import hoist_global_options

    assert hoist_global_options(argv) == expected


def test_write_supersedes_the_lessons_it_corrects(server: HindsightServer, api_key: str) -> None:
    first = hindsight(server, "write", "Storing prices in the billing database", "--advice",
                      "Store prices as floating point numbers of dollars.", "--agent-id", "billing",
                      "--experience-id", "price-v1", api_key=api_key)  # fmt: skip
    assert first.exit_code == 0, first.output
    assert "price-v1: active (version 1)" in first.stdout
    flagged = hindsight(server, "write", "Storing prices in the billing database", "--advice",
                        "Store prices as integer cents with a currency code.", "--agent-id", "billing", "--json",
                        api_key=api_key)  # fmt: skip
    assert flagged.exit_code == 0, flagged.output
    assert json.loads(flagged.stdout)["correction_of"] == ["price-v1"]
    with tenant_client(server, api_key) as c:
        c.forget(json.loads(flagged.stdout)["experience_id"], "written twice")

    fixed = hindsight(server, "write", "Storing prices in the billing database", "--advice",
                      "Store prices as integer cents with a currency code; floats lost cents.", "--agent-id", "billing",
                      "--supersedes", "price-v1", "--experience-id", "price-v2", api_key=api_key)  # fmt: skip
    assert fixed.exit_code == 0, fixed.output
    assert "price-v2: active (version 2)" in fixed.stdout
    assert "supersedes price-v1: now archived (superseded by price-v2)" in fixed.stdout
    with tenant_client(server, api_key) as c:
        assert c.get_experience("price-v1").superseded_by == "price-v2"

    elsewhere = hindsight(server, "write", "Storing prices", "--advice", "Use decimals.", "--agent-id", "other",
                          "--supersedes", "price-v2", api_key=api_key)  # fmt: skip
    assert elsewhere.exit_code == 1 and "error: 404 not_found" in elsewhere.output
    mixed = hindsight(server, "write", "Storing prices", "--advice", "Use decimals.", "--supersedes", "auto,price-v2",
                      api_key=api_key)  # fmt: skip
    assert mixed.exit_code == 2 and "stands alone" in mixed.output
    auto = hindsight(server, "write", "Storing prices in the billing database", "--agent-id", "billing", "--advice",
                     "Store prices as integer minor units with an ISO 4217 currency code.", "--supersedes", "auto",
                     api_key=api_key)  # fmt: skip
    assert auto.exit_code == 0, auto.output
    assert "(version 3)" in auto.stdout and "supersedes price-v2: now archived" in auto.stdout

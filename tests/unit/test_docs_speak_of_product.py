"""The project's documents speak of the product: no diary of who worked on it, or when.

README.md, every Markdown file under docs/ and bench/, and the prose of bench/'s Python (comments
and docstrings: the evaluation sets' strings are data, and a task may well be "push the branch at
14:00") hold no development diary: sessions, rounds, helpers, the lead, development branches, clock
times, dates, or paths of a development machine. Why a design was chosen goes to docs/decisions/,
figures to docs/benchmarks.md with the command that reproduces them.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DIARY = {
    "a session": r"\bsessions?\s+\d+\b|\bthis session\b",
    "a round": r"\b(?:this|next|last|latest|previous|that) round\b|\brounds? before\b|\bthe round'?s\b"
               r"|\bround of (?:the day|\d{4})\b|\b(?:first|second|third|fourth|fifth) round of\b",
    "the lead": r"\bthe lead(?:'s)?\b",
    "a helper": r"\b(?:a|the|other|another|each) helper(?:s|'s|s')?\b",
    "a development branch": r"\bbranch(?:es)? `|\b(?:this|that) branch\b|\bbranch of (?:its|their) own\b",
    "a clock time": r"(?<![\w:.\-/])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])",
    "a date": r"\b20\d\d-[01]\d-[0-3]\d\b(?!T)",
    "a development path": r"(?<![\w.])/(?:work|tmp|root|home)/",
}  # fmt: skip
PATTERNS = {name: re.compile(pattern, re.I) for name, pattern in DIARY.items()}


def documents() -> list[Path]:
    found = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "bench").rglob("*.md")]
    found += (ROOT / "bench").rglob("*.py")
    return sorted(p for p in found if p.is_file())


def python_prose(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a module, each line with its number."""
    lines = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            lines.append((tok.start[0], tok.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                first = node.body[0].lineno
                lines += [(first + i, line) for i, line in enumerate(doc.splitlines())]
    return lines


def prose(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return python_prose(text)
    return list(enumerate(text.splitlines(), 1))


def diary_words(lines: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """(line, what, the words around it) for each diary word in ``lines``."""
    return [(n, name, line[max(0, m.start() - 40):m.end() + 40].strip())
            for n, line in lines for name, pattern in PATTERNS.items() for m in pattern.finditer(line)]


def test_no_document_keeps_a_diary():
    hits = [f"{path.relative_to(ROOT)}:{n}: {name}: ...{words}..."
            for path in documents() for n, name, words in diary_words(prose(path))]
    assert not hits, "these speak of the project's development, not of the product:\n" + "\n".join(hits)


def test_the_documents_are_found():
    names = {str(p.relative_to(ROOT)) for p in documents()}
    assert {"README.md", "docs/configuration.md", "docs/benchmarks.md", "bench/README.md"} <= names
    assert any(n.startswith("docs/decisions/") for n in names)
    assert any(n.startswith("bench/") and n.endswith(".py") for n in names)


@pytest.mark.parametrize("line", [
    "Session 33 (quiet, load 0.2-3.6): main read 10,762 events/s",
    "what was tried in sessions 31 and 32",
    "This round, `--before` main on the same data",
    "The round before moved blind2 from 0.864",
    "Two rounds before (one run of every set)",
    "the round's one held-out run",
    "Round of 2026-12-02, fourth of the day",
    "the third round of the day",
    "with the lead's evaluations running (load 2.6-4.6)",
    "written blind by a helper who read only the contract",
    "after the other helpers stopped",
    "the helper's three same-run comparisons",
    "This round (branch `cold16`)",
    "the adapter is on branch `strongembed`, not merged",
    "each prototype on a branch of its own",
    "measured on this branch against main",
    "main at the start of this round (15:45) -> now (17:42)",
    "a quiet machine (load below 1, 20:25)",
    "the last default run (9 / 11 / 15 per side, 08:45)",
    "Figures of 2026-12-01, first round",
    "cd /work/main && make eval",
    "--out /tmp/xr.json",
    "the key in /root/.hindsight",
])
def test_a_diary_word_is_caught(line):
    assert diary_words([(1, line)])


@pytest.mark.parametrize("line", [
    "The key stays in the tab's session storage",
    "session R@10 0.885; tags `dia:<dia_id>` and `session:<n>`",
    "the hits' sessions, deduplicated in rank order",
    "every push to the protected branch, `<branch>` for the branch names of the fixes",
    "a fork vs a branch, a PR opened from a branch of the same repo",
    "an event with explicit decision-graph links (branches after a failure)",
    "Shared helpers of the benchmarks; the event helpers of the blind format",
    "## Testing helpers",
    "the leading candidates, re-scored in two rounds that alternate",
    "`--before REF [--rounds N]`, after/before of the same round",
    "serves http://127.0.0.1:8000 and OpenSearch on 127.0.0.1:9200",
    "a timestamp such as 2026-12-01T10:15:00Z in the API reference",
    "HTTP p50 / p99 24.80 / 49.30 ms, ratio 1:3",
    "the data directory ./.hindsight, or $TMPDIR/hindsight-browser-artifacts",
])
def test_a_product_word_is_not_caught(line):
    assert not diary_words([(1, line)])


def test_python_prose_is_its_comments_and_docstrings_not_its_data():
    source = ('"""Module doc: this round."""\n'
              'TASK = "Push the branch at 14:00"  # a comment, session 3\n'
              'def f():\n    """The lead\'s function."""\n    return "the round before"\n')
    assert sorted(n for n, _ in python_prose(source)) == [1, 2, 4]
    assert {name for _, name, _ in diary_words(python_prose(source))} == {"a round", "a session", "the lead"}

"""docs/api.md is the OpenAPI document the server serves, rendered: regenerated, it does not change."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def reference_module():
    spec = importlib.util.spec_from_file_location("api_reference", ROOT / "devtools" / "api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_api_md_is_up_to_date_with_the_openapi_document():
    ref = reference_module()
    assert (ROOT / "docs" / "api.md").read_text() == ref.render(ref.document()), "run devtools/api_reference.py"


def test_the_reference_names_every_operation_and_schema_of_the_document():
    ref = reference_module()
    doc = ref.document()
    text = ref.render(doc)
    for path, item in doc["paths"].items():
        for method in item:
            assert f"### {method.upper()} {path}\n" in text
    for name in doc["components"]["schemas"]:
        assert f"### {name}\n" in text


def test_a_schema_reads_as_types_a_person_understands():
    ref = reference_module()
    assert ref.type_of({"type": "array", "items": {"$ref": "#/components/schemas/EventIn"}}) == "list of [EventIn](#eventin)"
    assert ref.type_of({"anyOf": [{"type": "string"}, {"type": "null"}]}) == "string or null"
    assert ref.type_of({"enum": ["a", "b"]}) == 'one of `"a"`, `"b"`'
    assert ref.limits({"type": "string", "minLength": 1, "maxLength": 200}) == "min length 1; max length 200"


def test_the_reference_lists_every_field_of_every_event_types_content():
    from chalicelib.api.schemas import CONTENT_MODELS

    text = (ROOT / "docs" / "api.md").read_text()
    for kind, model in CONTENT_MODELS.items():
        heading = f"### `{kind}` content\n"
        assert heading in text, kind
        section = text.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        for field in model.model_fields:
            assert f"| `{field}` |" in section, (kind, field)
    tool_call = text.split("### `tool_call` content\n", 1)[1].split("\n### ", 1)[0]
    assert "Other fields: refused (422)." in tool_call and '"ok" beside an `error` is 422' in tool_call

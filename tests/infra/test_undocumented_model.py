"""The package's botocore service models lose their documentation and nothing else: the same
operations, shapes, members and wire metadata, and a client built from them serializes a request
as one built from botocore's own model."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import botocore
import pytest
from botocore.model import ServiceModel

from infra.hindsight_infra.lambda_package import BOTOCORE_SERVICES, undocumented_model

DATA = Path(botocore.__file__).parent / "data"


def models() -> list[Path]:
    return sorted(p for name in BOTOCORE_SERVICES for p in (DATA / name).glob("*/service-2.json.gz"))


def without_docs(node, parent_key: str = ""):
    """The model with every documentation string removed, keys of ``members`` maps left alone."""
    if isinstance(node, dict):
        return {k: without_docs(v, k) for k, v in node.items()
                if parent_key == "members" or k not in ("documentation", "documentationUrl")}
    if isinstance(node, list):
        return [without_docs(v) for v in node]
    return node


@pytest.mark.parametrize("path", models(), ids=lambda p: p.parts[-3])
def test_the_model_loses_its_documentation_and_nothing_else(path):
    raw = gzip.decompress(path.read_bytes())
    original, bare = json.loads(raw), json.loads(undocumented_model(raw))
    assert bare == without_docs(original)
    assert len(json.dumps(bare)) < len(raw) / 2
    assert '"documentation"' not in json.dumps(bare)  # no member of these services is named so


def test_a_member_named_documentation_is_kept():
    model = {"metadata": {}, "documentation": "service", "operations": {},
             "shapes": {"S": {"type": "structure", "documentation": "s",
                              "members": {"documentation": {"shape": "T", "documentation": "m"}}},
                        "T": {"type": "string"}}}
    assert json.loads(undocumented_model(json.dumps(model).encode()))["shapes"] == {
        "S": {"type": "structure", "members": {"documentation": {"shape": "T"}}}, "T": {"type": "string"}}


def test_a_client_on_the_bare_model_builds_the_same_request(tmp_path):
    import botocore.session
    from botocore.loaders import Loader

    path = next(p for p in models() if p.parts[-3] == "dynamodb")
    bare_dir = tmp_path / "dynamodb" / path.parent.name
    bare_dir.mkdir(parents=True)
    (bare_dir / "service-2.json").write_bytes(undocumented_model(gzip.decompress(path.read_bytes())))
    for other in path.parent.iterdir():
        if not other.name.startswith("service-2"):
            (bare_dir / other.name).write_bytes(other.read_bytes())
    requests = []
    for extra in ([], [str(tmp_path)]):
        session = botocore.session.get_session()
        session.register_component("data_loader", Loader(extra_search_paths=extra))
        client = session.create_client("dynamodb", region_name="eu-west-1", aws_access_key_id="a",
                                       aws_secret_access_key="b")
        model = client.meta.service_model
        seen = []
        client.meta.events.register("before-send", lambda request, **_: seen.append(request) or _Sent())
        client.query(TableName="t", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}})
        requests.append((seen[0].body, seen[0].headers["X-Amz-Target"], model.operation_names,
                         model.operation_model("Query").documentation == ""))
    assert requests[0][:3] == requests[1][:3]
    assert (requests[0][3], requests[1][3]) == (False, True)  # the second client read the bare model


class _Sent:
    """What a before-send handler returns instead of sending: an empty 200 answer."""
    status_code = 200
    headers: dict = {}
    content = b"{}"
    raw = None

    @property
    def text(self):
        return "{}"

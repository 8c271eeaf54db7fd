"""The OpenSearch node of this test process (see devtools/opensearch_node.py)."""
from __future__ import annotations

import pytest

from devtools import opensearch_node


def node_url() -> str:
    """The node's URL; a node that cannot start fails the test with its log (never a skip)."""
    try:
        return opensearch_node.node_url()
    except RuntimeError as exc:
        pytest.fail(f"the opensearch tests have {exc}", pytrace=False)

"""Fixtures of the command-line tests: the fake hub a hub-id row of the bad-input table runs
against."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from tests.pipelines.fake_hub import FakeHub, fake_hub


@pytest.fixture
def hub_for_row(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[FakeHub]:
    """The fake hub of HUB_ROWS, huggingface_hub pointed at it (its constants: it reads the
    environment once, at import) in the state the row's id names."""
    import huggingface_hub.constants as constants

    files = tmp_path_factory.mktemp("hub-files")
    native = {"model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    custom = {**native, "model_type": "geosee_custom", "auto_map": {"AutoModel": "m.M"}}
    with fake_hub() as fake:
        for repo, config in (("org/llm", native), ("org/custom", custom)):
            (files / repo).mkdir(parents=True)
            (files / repo / "config.json").write_text(json.dumps(config))
            fake.publish(repo, files / repo)
        endpoint = fake.endpoint
        if request.node.callspec.id.endswith("-unreachable"):
            with socket.socket() as closed:  # a port nothing listens on once closed
                closed.bind(("127.0.0.1", 0))
                endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
        offline = request.node.callspec.id.endswith("-offline")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
        yield fake

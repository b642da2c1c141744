"""What clients send reaches the upstream, but never a field that routes or keys the request.

The real `openai` client (its `extra_body` puts vendor fields at the top of the JSON body, as every
OpenAI-compatible client does) -> a real memvault server -> a recording OpenAI-shaped upstream. One
test per vendor family whose clients send their own fields, and the refusal of what would choose where
the operator's key goes (memvault.server.request_fields).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import httpx
import pytest

from memvault.server.run import running
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import Upstream, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    base = tmp_path_factory.mktemp("fields")
    upstream = Upstream()
    with isolated_env(base / "home"), serving(upstream.app()) as root:
        settings = server_settings(base / "vault", root + "/v1", llm_key="operator-key")
        with running(settings) as url:
            yield SimpleNamespace(url=url, upstream=upstream)


def create(net, **extra):
    import openai

    client = openai.OpenAI(base_url=net.url + "/v1", api_key="client-key", max_retries=0, timeout=120)
    return client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hello"}],
                                          extra_body=extra)


def received(net) -> dict:
    return net.upstream.chat_requests()[-1]


def test_llama_cpp_sampling_fields_reach_the_upstream(net):
    fields = {"cache_prompt": True, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1, "n_keep": -1,
              "dry_base": 1.75, "samplers": ["top_k", "min_p"], "id_slot": 0}
    create(net, **fields, memory_id="llama")
    sent = received(net)
    assert {name: sent.get(name) for name in fields} == fields
    assert "memory_id" not in sent  # memory fields are memvault's, never forwarded


def test_vllm_guided_decoding_and_thinking_switch_reach_the_upstream(net):
    fields = {"guided_json": {"type": "object", "properties": {"a": {"type": "integer"}}},
              "chat_template_kwargs": {"enable_thinking": False}, "repetition_penalty": 1.05,
              "return_tokens_as_token_ids": True, "stop_token_ids": [2]}
    create(net, **fields)
    sent = received(net)
    assert {name: sent.get(name) for name in fields} == fields


def test_open_webui_custom_params_and_openai_params_reach_the_upstream(net):
    fields = {"custom_field": "x", "num_ctx": 8192, "keep_alive": "5m", "temperature": 0.3, "seed": 7,
              "response_format": {"type": "json_object"}}
    create(net, **fields)
    sent = received(net)
    assert {name: sent.get(name) for name in fields} == fields


def test_a_literal_extra_body_is_merged_and_checked_like_the_rest(net):
    reply = httpx.post(net.url + "/v1/chat/completions", timeout=120, json={
        "model": "demo", "messages": [{"role": "user", "content": "hi"}], "extra_body": {"top_k": 3}})
    assert reply.status_code == 200, reply.text
    assert received(net)["top_k"] == 3 and "extra_body" not in received(net)
    before = len(net.upstream.requests)
    for nested in ({"api_base": "http://evil.example/v1"}, {"extra_body": {"api_key": "x"}}):
        refused = httpx.post(net.url + "/v1/chat/completions", timeout=120, json={
            "model": "demo", "messages": [{"role": "user", "content": "hi"}], "extra_body": nested})
        assert refused.status_code == 400 and next(iter(nested)) in refused.json()["error"]["message"]
    assert len(net.upstream.requests) == before


@pytest.mark.parametrize("field", [
    "api_base", "base_url", "api_key", "custom_llm_provider", "extra_headers", "headers", "api_version",
    "organization", "model_list", "fallbacks", "callbacks", "success_callback", "logger_fn", "metadata",
    "mock_response", "litellm_credential_name", "aws_secret_access_key", "aws_region_name", "vertex_credentials",
    "vertex_project", "azure_ad_token", "langfuse_secret_key", "deployment_id", "timeout", "memory_idd"])
def test_a_field_that_routes_keys_or_runs_callbacks_is_refused_by_name(net, field):
    import openai

    before = len(net.upstream.requests)
    with pytest.raises(openai.BadRequestError) as refused:
        create(net, **{field: "http://evil.example/v1"})
    assert field in refused.value.body["message"]
    assert len(net.upstream.requests) == before  # nothing was sent anywhere


def test_every_routing_parameter_of_the_installed_litellm_is_refused():
    """litellm's own parameters (its completion() signature and all_litellm_params) are never forwarded,
    whatever version is installed; OpenAI's chat parameters always are."""
    import inspect

    from memvault.curate.llm import import_litellm
    from memvault.server.request_fields import MODEL_PARAMETERS, refused_fields

    litellm = import_litellm()
    from litellm.types.utils import all_litellm_params

    own = (set(inspect.signature(litellm.completion).parameters) | set(all_litellm_params)) - {
        "kwargs", "model", "messages", "stream"}
    assert set(refused_fields(own)) == own - MODEL_PARAMETERS
    assert {"api_base", "base_url", "api_key", "custom_llm_provider", "extra_headers", "model_list"} <= set(
        refused_fields(own))
    assert refused_fields(MODEL_PARAMETERS) == []

"""The loopback server's batch APIs, driven by the providers' own SDKs over real HTTP: OpenAI's files and batches
(status transitions on the accelerated clock, output and error files, expiry, cancellation, a failed validation)
and Anthropic's Message Batches."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from scorers.testing import LoopbackLLM, Reply
from scorers.testing.batches import BatchClock

openai = pytest.importorskip("openai")

KEY = "test-key"


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(default=Reply.text("yes"), api_key=KEY) as running:
        running.batches.clock = BatchClock(validating_s=10, in_progress_s=100, finalizing_s=10)
        yield running


def chat_line(custom_id: str, question: str) -> dict[str, Any]:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def submit(client: Any, lines: list[dict[str, Any]]) -> Any:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    uploaded = client.files.create(file=("requests.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")


def lines_of(client: Any, file_id: str | None) -> dict[str, Any]:
    if file_id is None:
        return {}
    content = client.files.content(file_id).content
    return {line["custom_id"]: line for line in map(json.loads, content.splitlines())}


def test_a_batch_goes_through_each_state_and_answers_every_line_as_online(server: LoopbackLLM) -> None:
    server.script(Reply.text("no"), match="second")
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY)
    batch = submit(client, [chat_line("a", "first?"), chat_line("b", "second?")])
    states = [batch.status]
    for seconds in (10, 100, 10):
        server.batches.advance(seconds)
        states.append(client.batches.retrieve(batch.id).status)
    assert states == ["validating", "in_progress", "finalizing", "completed"]
    done = client.batches.retrieve(batch.id)
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (2, 2, 0)
    output = lines_of(client, done.output_file_id)
    answers = {key: line["response"]["body"]["choices"][0]["message"]["content"] for key, line in output.items()}
    assert answers == {"a": "yes", "b": "no"} and done.error_file_id is None
    assert all(line["response"]["status_code"] == 200 and line["error"] is None for line in output.values())
    assert server.batches.lines_received == 2 and server.batches.created == 1 and server.chat_requests == []


def test_a_scripted_error_is_a_failed_line_in_the_error_file(server: LoopbackLLM) -> None:
    server.script(Reply.error(500, "overloaded"), match="second")
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY)
    batch = submit(client, [chat_line("a", "first?"), chat_line("b", "second?")])
    server.batches.advance()
    done = client.batches.retrieve(batch.id)
    errors = lines_of(client, done.error_file_id)
    assert list(lines_of(client, done.output_file_id)) == ["a"] and list(errors) == ["b"]
    assert errors["b"]["response"]["status_code"] == 500
    assert errors["b"]["response"]["body"]["error"]["message"] == "overloaded"


@pytest.mark.parametrize("fate", ["expired", "cancelled"])
def test_an_expired_or_cancelled_batch_answers_its_first_lines_and_fails_the_rest(
    server: LoopbackLLM, fate: Any
) -> None:
    server.batches.script(fate, answered=0.5, times=1)
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY)
    batch = submit(client, [chat_line(str(i), f"question {i}?") for i in range(4)])
    server.batches.advance(50)
    assert client.batches.retrieve(batch.id).status == "in_progress"
    server.batches.advance()
    done = client.batches.retrieve(batch.id)
    errors = lines_of(client, done.error_file_id)
    assert done.status == fate and list(lines_of(client, done.output_file_id)) == ["0", "1"]
    assert {line["error"]["code"] for line in errors.values()} == {f"batch_{fate}"} and set(errors) == {"2", "3"}
    assert submit(client, [chat_line("x", "next?")]).status == "validating"  # the script held for one batch


def test_a_batch_that_fails_validation_has_errors_and_no_files(server: LoopbackLLM) -> None:
    server.batches.script("failed")
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY)
    batch = submit(client, [chat_line("a", "first?")])
    server.batches.advance()
    done = client.batches.retrieve(batch.id)
    assert done.status == "failed" and done.output_file_id is None and done.error_file_id is None
    assert done.errors.data[0].message == "scripted (loopback)"


def test_cancelling_a_batch_in_progress_cancels_every_line(server: LoopbackLLM) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY)
    batch = submit(client, [chat_line("a", "first?")])
    assert client.batches.cancel(batch.id).status == "cancelling"
    server.batches.advance()
    done = client.batches.retrieve(batch.id)
    assert (
        done.status == "cancelled" and lines_of(client, done.error_file_id)["a"]["error"]["code"] == "batch_cancelled"
    )


def test_the_batch_api_checks_the_key(server: LoopbackLLM) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.files.create(file=("requests.jsonl", b"{}\n"), purpose="batch")
    with pytest.raises(openai.AuthenticationError):
        client.batches.retrieve("batch_missing")


@pytest.mark.slow  # importing the anthropic SDK takes about 2 s
def test_anthropic_message_batches_through_the_anthropic_sdk(server: LoopbackLLM) -> None:
    anthropic = pytest.importorskip("anthropic")
    server.batches.script("expired", answered=0.5, times=1)
    client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.port}", api_key=KEY, max_retries=0)
    params = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi?"}]}
    batch = client.messages.batches.create(requests=[{"custom_id": f"r{i}", "params": params} for i in range(4)])
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 4
    server.batches.advance()
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.results_url
    results = {entry.custom_id: entry.result.type for entry in client.messages.batches.results(batch.id)}
    assert [results[f"r{i}"] for i in (2, 3)] == ["expired", "expired"]
    assert ended.request_counts.expired == 2 and server.batches.lines_received == 4
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(
            base_url=f"http://127.0.0.1:{server.port}", api_key="wrong", max_retries=0
        ).messages.batches.retrieve(batch.id)


@pytest.mark.slow  # importing google-genai takes seconds
def test_gemini_batch_mode_through_the_google_genai_sdk(server: LoopbackLLM) -> None:
    genai = pytest.importorskip("google.genai")
    server.script(Reply.error(500, "overloaded"), match="second")
    client = genai.Client(api_key=KEY, http_options={"base_url": f"http://127.0.0.1:{server.port}"})
    questions = {"a": "first?", "b": "second?"}
    requests = [
        {"contents": [{"role": "user", "parts": [{"text": text}]}], "metadata": {"key": key}}
        for key, text in questions.items()
    ]
    job = client.batches.create(model="gemini-2.5-flash", src=requests)
    assert job.name.startswith("batches/") and job.state.name == "JOB_STATE_PENDING"
    server.batches.advance()
    job = client.batches.get(name=job.name)
    replies = {r.metadata["key"]: r for r in job.dest.inlined_responses}
    assert job.state.name == "JOB_STATE_SUCCEEDED" and replies["a"].response.text == "yes"
    assert (replies["b"].error.code, replies["b"].error.message) == (500, "overloaded")
    assert server.batches.lines_received == 2

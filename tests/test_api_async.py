"""AsyncMemory: the same API as coroutines, run in worker threads so the event loop never blocks."""

import asyncio
import json
import threading
import time

import pytest

import memvault
from tests.support.scripted_llm import ScriptedLLM

EXTRACT = "Latest user message (extract from this only):\n"


def slow_extraction(intervals, seconds=0.5):
    """An extraction reply that takes `seconds` and records when it ran (start, end, thread)."""

    def reply(prompt):
        start = time.monotonic()
        time.sleep(seconds)
        intervals.append((start, time.monotonic(), threading.get_ident()))
        message = prompt.split(EXTRACT)[1].strip()
        return json.dumps([f"The user said: {message}"])

    return reply


@pytest.fixture
def vault(tmp_path):
    return tmp_path / "vault"


def test_every_method_is_a_coroutine_with_the_sync_results(vault):
    async def scenario():
        async with memvault.AsyncMemory(vault=vault) as m:
            [added] = (await m.add("The user likes tea.", user_id="alice", infer=False))["results"]
            await m.add("The user likes chess.", user_id="bob", infer=False)
            found = await m.search("tea", user_id="alice")
            item = await m.get(added["id"])
            listed = await m.get_all(user_id="alice")
            updated = await m.update(added["id"], "The user likes green tea.")
            history = await m.history(added["id"])
            deleted = await m.delete(added["id"])
            gone = await m.get(added["id"])
            await m.delete_all(user_id="bob")
            bob = await m.get_all(user_id="bob")
            await m.add("The user likes cake.", user_id="carol", infer=False)
            reset = await m.reset()
            carol = await m.get_all(user_id="carol")
            return added, found, item, listed, updated, history, deleted, gone, bob, reset, carol

    added, found, item, listed, updated, history, deleted, gone, bob, reset, carol = asyncio.run(scenario())
    assert [i["id"] for i in found["results"]] == [added["id"]]
    assert item["memory"] == "The user likes tea."
    assert listed["results"] == [{k: v for k, v in item.items() if k != "score"}]
    assert updated == {"message": "Memory updated successfully!"}
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert deleted == {"message": "Memory deleted successfully!"} and gone is None
    assert bob == carol == {"results": []} and reset is None


def test_the_loop_stays_responsive_during_a_slow_llm_call(vault):
    intervals = []
    llm = ScriptedLLM([(EXTRACT, slow_extraction(intervals))], default="[]")
    ticks = []

    async def ticker(stop):
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def scenario():
        m = memvault.AsyncMemory(vault=vault, llm=llm)
        await m.get_all(user_id="alice")  # load the model and index first: the test is about the LLM call
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        result = await m.add("I collect stamps", user_id="alice")
        stop.set()
        await task
        m.close()
        return result

    result = asyncio.run(scenario())
    assert [e["memory"] for e in result["results"]] == ["The user said: I collect stamps"]
    [(start, end, thread)] = intervals
    assert thread != threading.main_thread().ident
    # A blocked loop could not tick at all while the call runs; a free one ticks every 10 ms (a few
    # ticks are demanded, not 50: on a loaded machine a wake-up can take far longer than 10 ms).
    during = [t for t in ticks if start <= t <= end]
    assert len(during) >= 3, f"only {len(during)} ticks while the LLM call took {end - start:.2f} s"


def test_calls_on_one_instance_never_interleave(vault):
    intervals = []
    llm = ScriptedLLM([(EXTRACT, slow_extraction(intervals, seconds=0.3))], default="[]")

    async def scenario():
        m = memvault.AsyncMemory(vault=vault, llm=llm)
        results = await asyncio.gather(m.add("I like tea", user_id="alice"), m.add("I like cake", user_id="bob"))
        listed = [await m.get_all(user_id=user) for user in ("alice", "bob")]
        m.close()
        return results, listed

    results, listed = asyncio.run(scenario())
    assert sorted(r["results"][0]["memory"] for r in results) == [
        "The user said: I like cake", "The user said: I like tea"]
    assert [len(x["results"]) for x in listed] == [1, 1]
    first, second = sorted(intervals)
    assert first[1] <= second[0], "two adds of one instance ran their LLM calls at the same time"


def test_errors_come_out_of_the_coroutines(vault):
    async def scenario():
        m = memvault.AsyncMemory(vault=vault)
        with pytest.raises(memvault.ScopeError):
            await m.search("anything")
        with pytest.raises(memvault.NotFoundError):
            await m.delete("00000000-0000-4000-8000-000000000000")
        m.close()

    asyncio.run(scenario())

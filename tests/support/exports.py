"""Generated chat exports in the published shapes (ChatGPT's conversations.json), of any size: for the
interrupted-import test and scripts/bench_import.py."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

TOPICS = ["tea", "Lisbon", "the cello", "running", "tomatoes", "a cat called Miso", "jazz", "Porto", "sourdough",
          "chess", "the garden", "a trip to Kyoto"]


def chatgpt_conversation(number: int, turns: int, rng: random.Random) -> dict:
    """One conversation of `turns` messages (user and assistant alternating), as a mapping tree."""
    conversation_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    start = 1_700_000_000 + number * 3600
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for index in range(turns):
        node = f"{conversation_id[:8]}-{index}"
        role = "user" if index % 2 == 0 else "assistant"
        topic = rng.choice(TOPICS)
        text = (f"Message {index} of conversation {number}: I keep thinking about {topic}."
                if role == "user" else f"Tell me more about {topic} (answer {index}).")
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": role, "name": None, "metadata": {}}, "create_time": start + index * 7.5,
            "update_time": None, "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully", "metadata": {}, "recipient": "all"}}
        parent = node
    return {"title": f"Conversation {number} about {rng.choice(TOPICS)}", "create_time": start,
            "update_time": start + turns * 7.5, "mapping": mapping, "current_node": parent,
            "conversation_id": conversation_id, "id": conversation_id, "is_archived": False}


def write_chatgpt_export(path: Path, conversations: int, turns: int = 10, seed: int = 7) -> Path:
    rng = random.Random(seed)
    data = [chatgpt_conversation(number, turns, rng) for number in range(conversations)]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path

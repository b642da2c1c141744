"""`memvault mcp` as an agent meets it: spawned per session over stdio by the real MCP client SDK.

    python scripts/bench_mcp.py [--size 10000] [--repeat 10] [--recalls 20]

On the cached synthetic vault of `--size` memories (scripts/bench_scale.py builds it under
.bench/scale/ on first use, index included):
- start-up: spawn `python -m memvault mcp`, initialize, then time to the first tool answer (list_tools)
  and to the first `recall` answer (the index caught up and the model loaded), median of `--repeat`;
- recall round trip: `--recalls` recalls in one open session after a first one, p50 / p95 (ms).
The 1-minute load average is printed beside each figure: other work on the machine skews them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import GIT_ENV, cached_vault, load, percentile, queries  # noqa: E402


def server_parameters(vault: Path):
    from mcp import StdioServerParameters

    env = {**os.environ, **GIT_ENV}
    return StdioServerParameters(command=sys.executable, args=["-m", "memvault", "mcp", "--vault", str(vault)],
                                 env=env)


async def one_session(vault: Path, recalls: list[str]) -> tuple[float, float, list[float]]:
    """(seconds to the list_tools answer, seconds to the first recall answer, each later recall's seconds)."""
    from mcp import ClientSession, stdio_client

    started = time.perf_counter()
    async with stdio_client(server_parameters(vault)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        first_tools = time.perf_counter() - started
        result = await session.call_tool("recall", {"query": "green tea in Lisbon"})
        assert not result.is_error, result.content
        first_recall = time.perf_counter() - started
        rounds = []
        for query in recalls:
            began = time.perf_counter()
            result = await session.call_tool("recall", {"query": query, "top_k": 5})
            assert not result.is_error, result.content
            rounds.append(time.perf_counter() - began)
    return first_tools, first_recall, rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--recalls", type=int, default=20)
    args = parser.parse_args()

    vault, _ = cached_vault(args.size)
    print(f"vault: {vault} ({args.size} memories); {load()}")
    tools, recalls = [], []
    for _ in range(args.repeat):
        first_tools, first_recall, _ = asyncio.run(one_session(vault, []))
        tools.append(first_tools)
        recalls.append(first_recall)
    print(f"start-up to first tool answer (list_tools): median {statistics.median(tools):.2f} s, "
          f"max {max(tools):.2f} s over {args.repeat} spawns; {load()}")
    print(f"start-up to first recall answer: median {statistics.median(recalls):.2f} s, "
          f"max {max(recalls):.2f} s; {load()}")
    _, _, rounds = asyncio.run(one_session(vault, queries(args.recalls)))
    print(f"recall round trip at {args.size} memories (warm session): p50 {percentile(rounds, 50) * 1000:.0f} ms, "
          f"p95 {percentile(rounds, 95) * 1000:.0f} ms over {len(rounds)}; {load()}")


if __name__ == "__main__":
    main()

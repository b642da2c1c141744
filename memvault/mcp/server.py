"""The MCP server: memvault's memory as tools, resources and a prompt for an agent.

The tools (tools.py) call the library facade; a MemvaultError becomes an MCP tool error (`isError`
result) and the server keeps serving. What a model reads is in descriptions.py.
"""

from __future__ import annotations

import functools
import threading

from mcp.server.mcpserver import MCPServer

from memvault import __version__
from memvault.core.workspace import PURPOSES
from memvault.mcp.descriptions import INSTRUCTIONS, TOOLS
from memvault.mcp.tools import MemoryTools
from memvault.settings import Settings
from memvault.shapes import layout


def build_server(settings: Settings, warm: bool = True) -> MCPServer:
    """The MCP server over the vault `settings` name (created if missing)."""
    tools = MemoryTools(settings)
    if warm:
        threading.Thread(target=tools.warm_up, name="memvault-mcp-warm-up", daemon=True).start()
    server = MCPServer("memvault", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for fn in (tools.remember, tools.recall, tools.get_memory, tools.list_memories, tools.update_memory,
               tools.forget, tools.memory_history, tools.list_rules, tools.add_rule, tools.scratchpad_write,
               tools.scratchpad_read, tools.scratchpad_list, tools.read_core, tools.update_core):
        description, hints = TOOLS[fn.__name__]
        server.add_tool(tools.guarded(fn), name=fn.__name__, description=description, annotations=hints)
    server.resource("memvault://conversations", name="conversations", mime_type="application/json",
                    description="The conversations in the vault (folder names), as JSON.")(tools.conversations)
    server.resource("memvault://conversations/{conversation}/summary", name="conversation-summary",
                    mime_type="text/markdown",
                    description="The rolling summary of a conversation (kept up to date by curated adds)."
                    )(tools.summary)
    for name in layout.CORE_NAMES:
        server.resource(f"memvault://core/{name}.md", name=f"core-{name.lower()}", mime_type="text/markdown",
                        description=f"The core memory file {name}.md: {PURPOSES[name]}"
                        )(functools.partial(tools.core_resource, name))
    server.memory_tools = tools  # the transport ends its session (scratchpads) when the client goes
    server.prompt("with-memory", title="Message with memory", description=(
        "The message wrapped in what memvault remembers: the core files, the conversation's summary, then "
        "the most relevant memories, then the message itself (what `memvault chat` sends the model)."
    ))(tools.with_memory)
    return server

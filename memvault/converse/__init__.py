"""Conversations with memory: prompt assembly (prompt.py) and a chat turn's life (chat.py), shared by
`memvault chat`, the proxy and the MCP server."""

from memvault.converse.chat import ChatTurn, MemoryChat
from memvault.converse.prompt import MemoryContext, gather, inject, render

__all__ = ["ChatTurn", "MemoryChat", "MemoryContext", "gather", "inject", "render"]

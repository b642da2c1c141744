"""`memvault mcp`: the vault's memory offered to agents over the Model Context Protocol.

server.py builds the MCP server (tools, resources, the `with-memory` prompt) on the official `mcp`
SDK; transport.py runs it over stdio or streamable HTTP. Both import the SDK, so nothing here is
imported until the command runs (`memvault --help` stays fast).
"""

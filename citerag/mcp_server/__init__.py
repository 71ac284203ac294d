"""The MCP server: the engine's cited answers as Model Context Protocol tools and resources,
over stdio (`main.py mcp`, for desktop clients) and streamable HTTP (mounted at `/mcp` in
`main.py serve`, behind the API key). Built on the official SDK (`mcp`, its `MCPServer`)."""

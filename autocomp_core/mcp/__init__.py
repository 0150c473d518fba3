"""The MCP server (``autocomp-core mcp``): the tools a coding agent drives autocomp with.

``server`` declares the tools and serves them (stdio, or streamable HTTP on 127.0.0.1 with
a bearer token); ``runs`` starts, follows and stops runs as processes of their own;
``command`` is the command line's entry point. Needs the ``[mcp]`` extra (the SDK is
imported only here)."""

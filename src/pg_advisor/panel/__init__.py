"""The dashboard panel: a static page, the JSON and metrics it reads, and the HTTP server."""

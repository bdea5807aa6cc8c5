"""The dashboard page: a static file beside this one (installed with the package).

The page is static: its script fetches the JSON API and builds every element with
textContent and SVG nodes, never from markup, so pool and host names cannot inject
anything.
"""
from pathlib import Path

PAGE = (Path(__file__).parent / "panel.html").read_text(encoding="utf-8")

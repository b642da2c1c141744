"""The web page: a door to the vault like the CLI (docs/architecture.md, The web page), served by
`memvault ui` and, at /ui, by `memvault serve`. Server-rendered (Jinja2, every stored text escaped),
one small script of our own (static/ui.js) for keyboard shortcuts, nothing fetched from elsewhere.
Reads and writes go through the core facade (`memvault.core.Memvault`) only.

- `routes.py`: the router, assembled from the page groups of `pages/` (browse, finding, audit,
  workspace, editing); `views.py`: what they show, shaped from the facade's answers
- `security.py`: Content-Security-Policy, same-origin + CSRF checks for writes, key login for browsers
- `graph_svg.py`: an entity's neighbourhood laid out as SVG
- `app.py`: the app of `memvault ui`, and `mount` for `memvault serve`
"""

PREFIX = "/ui"

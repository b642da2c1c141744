"""The web page's routes by page group, each a thin door: parse the request, make one or two facade
calls, render a template. `memvault.ui.routes.make_router` assembles them.

- `door.py`: what every page shares (the core per request, error pages, the moment shown, write checks)
- `browse.py`: overview, memories, a conversation, a memory
- `finding.py`: search and the graph
- `audit.py`: the log and the changes between two moments
- `workspace.py`: core files and the daily log
- `editing.py`: a memory's edits, delete, restore, erase; rules added and removed
"""

"""Finding: search (hits with how each was ranked, and the relations the query names) and the graph."""

from __future__ import annotations

from fastapi import APIRouter, Request

from memvault.ui.pages.door import Door, key_scopes
from memvault.ui.render import page
from memvault.ui.views import explain_rows, workspace_links


def add_routes(router: APIRouter, door: Door) -> None:
    @router.get("/search")
    @door.view
    def search(request: Request, q: str = "", conversation: str = "", at: str = ""):
        core, moment = door.core(), door.travelled(at)
        hits, relations = [], []
        if q.strip():
            with core.holding_past(moment):  # opened once for both
                hits = core.search(q, conversation or None, key_scopes(request), as_of=moment)
                relations = core.relations(q, conversation or None, key_scopes(request), as_of=moment)
        wanted = any(h.role in ("core", "journal") for h in hits)
        links = workspace_links(core.journal_days(366, moment)) if wanted else {}
        return page("search.html", **door.common(request, moment), title="Search", q=q, conversation=conversation,
                    hits=hits, links={h.id: links.get(h.id, f"/m/{h.id}") for h in hits},
                    stages=[explain_rows(hit) for hit in hits], relations=relations)

    @router.get("/graph")
    @door.view
    def graph(request: Request, entity: str = "", depth: int = 1, conversation: str = "", at: str = ""):
        from memvault.ui.graph_svg import layout

        moment = door.travelled(at)
        found = drawing = None
        if entity.strip():
            found = door.core().graph(entity, depth, conversation or None, key_scopes(request), moment)
            drawing = layout(found)
        return page("graph.html", **door.common(request, moment), title="Graph", entity=entity, depth=depth,
                    conversation=conversation, found=found, drawing=drawing)

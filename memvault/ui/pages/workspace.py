"""The workspace: core files (read and saved) and the daily log. They show the whole vault, so a
scoped key cannot open them."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request

from memvault.ui.pages.door import UNCHANGED, Door, moved, whole_vault
from memvault.ui.render import page


def add_routes(router: APIRouter, door: Door) -> None:
    @router.get("/core/{name}")
    @door.view
    def core_file(request: Request, name: str, saved: str = "", at: str = ""):
        whole_vault(request)
        moment = door.travelled(at)
        rel, text = door.core().read_core(name, moment)
        return page("core.html", **door.common(request, moment), title=rel.name, rel=rel, name=rel.stem, text=text,
                    saved=saved)

    @router.get("/journal/{day}")
    @door.view
    def journal(request: Request, day: str, at: str = ""):
        whole_vault(request)
        moment = door.travelled(at)
        rel, text = door.core().journal(day, moment)
        return page("journal.html", **door.common(request, moment), title=f"Journal {day}", rel=rel, day=day,
                    text=text)

    @router.post("/core/{name}")
    @door.view
    def save_core(request: Request, name: str, text: str = Form(""), csrf_token: str = Form("")):
        door.checked_write(request, csrf_token)
        whole_vault(request)
        rel, changed = door.core().update_core(name, text.replace("\r\n", "\n"))
        return moved(f"/core/{rel.stem}", saved="1" if changed else UNCHANGED)

"""Editing (POST: same origin and the CSRF token): a memory's text or whole file, delete, restore,
erase; a conversation's rules added and removed."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request

from memvault.errors import EntryFormatError, UsageError
from memvault.ui.pages.door import Door, key_scopes, moved, saved
from memvault.ui.render import conversation_path


def add_routes(router: APIRouter, door: Door) -> None:
    @router.post("/m/{memory_id}/text")
    @door.view
    def edit_text(request: Request, memory_id: str, text: str = Form(""), csrf_token: str = Form("")):
        core, entry = door.written(request, csrf_token, memory_id)
        return moved(f"/m/{entry.id}", saved=saved(core.update(entry.id, text=text), entry))

    @router.post("/m/{memory_id}/file")
    @door.view
    def edit_file(request: Request, memory_id: str, content: str = Form(""), csrf_token: str = Form("")):
        from memvault.shapes import parse

        core, entry = door.written(request, csrf_token, memory_id)
        try:  # validated as `memvault edit` validates the file a person saved
            replacement = core.require_scopes(parse(content, "the edited file"), key_scopes(request))
            updated = core.update(entry.id, replacement=replacement)
        except (EntryFormatError, UsageError) as exc:
            raise UsageError(f"{exc}; nothing changed") from None
        return moved(f"/m/{entry.id}", saved=saved(updated, entry))

    @router.post("/m/{memory_id}/delete")
    @door.view
    def delete(request: Request, memory_id: str, csrf_token: str = Form("")):
        core, entry = door.written(request, csrf_token, memory_id)
        core.delete([entry.id])
        return moved(f"/m/{entry.id}", saved="deleted")

    @router.post("/m/{memory_id}/restore")
    @door.view
    def restore(request: Request, memory_id: str, csrf_token: str = Form("")):
        core, entry = door.written(request, csrf_token, memory_id, live=False)
        core.restore(entry.id)
        return moved(f"/m/{entry.id}", saved="restored")

    @router.post("/m/{memory_id}/erase")
    @door.view
    def erase(request: Request, memory_id: str, confirm: str = Form(""), csrf_token: str = Form("")):
        # `Memvault.erase` removes the memory from every commit: irreversible, so the id is typed back first.
        core, entry = door.written(request, csrf_token, memory_id, live=False)
        if confirm.strip() != entry.id[:8]:
            raise UsageError(f"type the memory's short id ({entry.id[:8]}) to confirm erasing it")
        core.erase([entry.id], reason="erased from the web page")
        return moved("/memories", saved="erased")

    @router.post("/c/{conversation}/rules")
    @door.view
    def add_rule(request: Request, conversation: str, text: str = Form(""), csrf_token: str = Form("")):
        door.checked_write(request, csrf_token)
        core = door.core()
        conversation = core.conversation_named(conversation)
        core.add_rule(text, conversation, key_scopes(request))
        return moved(conversation_path(conversation))

    @router.post("/rules/{rule_id}/remove")
    @door.view
    def remove_rule(request: Request, rule_id: str, csrf_token: str = Form("")):
        core, entry = door.written(request, csrf_token, rule_id)
        core.remove_rule(entry.id)
        return moved(conversation_path(entry.conversation_id))

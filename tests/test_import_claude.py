"""`memvault import` of a Claude data export (conversations.json: `chat_messages` with `sender`, text in
`content` blocks or `text`)."""

from pathlib import Path

from tests.support.cli import Cli

FIXTURE = Path(__file__).parent / "fixtures" / "claude" / "conversations.json"


def test_claude_conversations_become_turns_of_their_text_blocks(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    report = cli.ok("import", str(FIXTURE), "--json").json()
    assert (report["format"], report["imported"], report["turns"]) == ("claude", 2, 4)
    rows = cli.ok("list", "--json").json()
    assert [(r["conversation_id"], r["role"], r["text"]) for r in rows] == [
        ("claude-garden-plans-5e1f0c2a", "user", "I grow tomatoes on my balcony in Berlin."),
        # text blocks joined; the tool use and its result are left out
        ("claude-garden-plans-5e1f0c2a", "assistant",
         "Tomatoes love a sunny balcony.\n\nCherry varieties do well in pots."),
        ("claude-untitled-6f2a1d3b", "user", "My cat is called Miso."),
        ("claude-untitled-6f2a1d3b", "assistant", "Miso is a lovely name for a cat."),
    ]
    assert rows[1]["created_at"] == "2025-04-10T08:15:40.500+00:00"
    assert rows[0]["metadata"]["source_message"] == "c1a0b2c3-0001-4000-8000-000000000001"
    again = cli.ok("import", str(FIXTURE), "--json").json()
    assert (again["imported"], again["entries"], again["unchanged"]) == (0, 0, 2)


def test_progress_is_told_for_each_conversation_then_the_end(tmp_path):
    from memvault.core import Memvault
    from memvault.settings import Settings
    from memvault.transfer import import_source

    settings = Settings()
    settings.vault.path = str(tmp_path / "vault")
    told = []
    import_source(Memvault.open(settings, create=True), [str(FIXTURE)],
                  on_progress=lambda done, total, title: told.append((done, total, title)))
    assert told == [(0, 2, "Garden plans"), (1, 2, "untitled"), (2, 2, "")]


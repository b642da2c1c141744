"""Secrets never reach the vault: every text on its way to disk has each secret replaced by a marker
(`[redacted: github-token]`). docs/architecture.md, "Redaction".

The token shapes are Yelp's detect-secrets 1.5.0 plugins' own regular expressions (Apache-2.0,
copied below as they are; tests/test_redact.py checks them against the installed package), plus the
kinds it has no plugin for (Anthropic, Google, Hugging Face, fine-grained GitHub, whole private-key
blocks, "my password is X") written after gitleaks' rules of the same names. Copied rather than
imported: `import detect_secrets` costs 0.57 s (it loads requests and its scanner), paid by every
command that writes.

All of memvault's secret patterns live here: the write policy's hard guard (`looks_secret`) drops a
candidate that merely talks about a secret; `redact` keeps the text and removes the secret itself.
The vault's transaction (`vault/transaction.py`) and the JSON state files (`vault/jsonlines.py`, the
scratchpad) call `redact`; `configure` applies the settings (`redaction.enabled`, `redaction.allow`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from memvault.vault.fields import MAX_METADATA_DEPTH

MARKER = "[redacted: {kind}]"

# The secret is the whole match, but for these kinds, whose patterns capture it in their last group
# (the password of a URL, the key after "aws_secret_access_key ="); other groups are only prefixes.
IN_GROUP = ("aws-access-key", "basic-auth-credentials", "password")
# detect-secrets 1.5.0's token plugins: (plugin, kind: its secret_type slugged, pattern[, flags]). Left out:
# the keyword and entropy scanners (source-code assignments and quoted strings: chat is neither), public
# IPs (not secrets), and the IBM/Cloudant/SoftLayer/Artifactory assignment forms (config files, not prose).
DETECT_SECRETS = [
    ('AWSKeyDetector', 'aws-access-key', '(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}'),
    ('AWSKeyDetector', 'aws-access-key',
     'aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\\\'\\"]([0-9a-zA-Z/+]{40})[\\\'\\"]', re.IGNORECASE),
    ('AzureStorageKeyDetector', 'azure-storage-account-access-key', 'AccountKey=[a-zA-Z0-9+\\/=]{88}'),
    ('BasicAuthDetector', 'basic-auth-credentials',
     "://[^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+:([^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+)@"),
    ('DiscordBotTokenDetector', 'discord-bot-token',
     '[MNO][a-zA-Z\\d_-]{23,25}\\.[a-zA-Z\\d_-]{6}\\.[a-zA-Z\\d_-]{27}'),
    ('GitHubTokenDetector', 'github-token', '(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}'),
    ('GitLabTokenDetector', 'gitlab-token', '(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\\-]{20,50}(?!\\w)'),
    ('GitLabTokenDetector', 'gitlab-token', 'GR1348941[A-Za-z0-9_\\-]{20,50}(?!\\w)'),
    ('GitLabTokenDetector', 'gitlab-token', 'glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\\-]{20,50}(?!\\w)'),
    ('GitLabTokenDetector', 'gitlab-token', 'glimt-[A-Za-z0-9_\\-]{25}(?!\\w)'),
    ('GitLabTokenDetector', 'gitlab-token', 'glptt-[A-Za-z0-9_\\-]{40}(?!\\w)'),
    ('GitLabTokenDetector', 'gitlab-token', 'glagent-[A-Za-z0-9_\\-]{50,1024}(?!\\w)'),
    ('GitLabTokenDetector', 'gitlab-token', 'gloas-[A-Za-z0-9_\\-]{64}(?!\\w)'),
    ('JwtTokenDetector', 'json-web-token', 'eyJ[A-Za-z0-9-_=]+\\.[A-Za-z0-9-_=]+\\.?[A-Za-z0-9-_.+/=]*?'),
    ('MailchimpDetector', 'mailchimp-access-key', '[0-9a-z]{32}-us[0-9]{1,2}'),
    ('NpmDetector', 'npm-tokens', '\\/\\/.+\\/:_authToken=\\s*((npm_.+)|([A-Fa-f0-9-]{36})).*'),
    ('OpenAIDetector', 'openai-token', 'sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}'),
    ('PypiTokenDetector', 'pypi-token', 'pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}'),
    ('PypiTokenDetector', 'pypi-token', 'pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}'),
    ('SendGridDetector', 'sendgrid-api-key', 'SG\\.[a-zA-Z0-9_-]{22}\\.[a-zA-Z0-9_-]{43}'),
    ('SlackDetector', 'slack-token', 'xox(?:a|b|p|o|s|r)-(?:\\d+-)+[a-z0-9]+', re.IGNORECASE),
    ('SlackDetector', 'slack-token',
     'https://hooks\\.slack\\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+', re.IGNORECASE),
    ('SquareOAuthDetector', 'square-oauth-secret', 'sq0csp-[0-9A-Za-z\\\\\\-_]{43}'),
    ('StripeDetector', 'stripe-access-key', '(?:r|s)k_live_[0-9a-zA-Z]{24}'),
    ('TelegramBotTokenDetector', 'telegram-bot-token', '\\d{8,10}:[0-9A-Za-z_-]{35}'),
    ('TwilioKeyDetector', 'twilio-api-key', 'AC[a-z0-9]{32}'),
    ('TwilioKeyDetector', 'twilio-api-key', 'SK[a-z0-9]{32}'),
]
# Kinds detect-secrets has no plugin for (after gitleaks' rules), and looser forms of the ones above
# that people paste (a GitHub token of another length, a Stripe test key). Order matters where two
# overlap: the first match wins.
MEMVAULT = [
    ("private-key", r"-----BEGIN[A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                    r"(?:-----END[A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    ("private-key", r"PuTTY-User-Key-File-[23]:[\s\S]*?(?:Private-MAC: \S+|\Z)"),
    ("anthropic-api-key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai-token", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,}|\bgh[pousr]_[A-Za-z0-9_]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{30,}"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-tokens", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe-access-key", r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}"),
    ("azure-ad-client-secret", r"(?<![A-Za-z0-9_~.])[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}"),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    ("digitalocean-token", r"\bdo[pro]_v1_[a-f0-9]{64}\b"),
    # "my password is hunter2", "PIN: 4821", "password=...": the word after the keyword. Only words that
    # name a credential outright; "secret" or "token" alone are everyday words ("the secret is patience").
    ("password", r"(?i)\b(?:pass(?:word|wd|phrase|code)|pwd|pin(?: code| number)?)s?\b"
                 r"(?:\s+(?:is|was|=|:)|\s*[:=])\s*(?:now\s+)?[\"'`]?(?!(?:the|a|an|my|your|same|not|still|"
                 r"now|still|too|very|so|just|easy|hard|strong|weak|long|short|changed|wrong|correct|right)\b)"
                 r"([^\s\"'`]{3,}[^\s\"'`.,;:!?)\]])"),  # trailing punctuation is the sentence's
]

# The write policy's guard (dropped, never stored, as a memory): a candidate that names a credential or
# holds a token-like string, even one `redact` would not recognise.
SECRET_WORDS = re.compile(
    r"\b(pass(?:word|wd|phrase|code)s?|pwd|pin(?: code)?|api[ _-]?keys?|secret(?: key)?s?|access[ _-]?tokens?|"
    r"auth(?:entication)?[ _-]?tokens?|bearer tokens?|private[ _-]?keys?|credentials?|seed phrase|"
    r"recovery (?:phrase|codes?)|2fa codes?|otp)\b", re.IGNORECASE)
LONG_TOKEN = re.compile(r"\b(?=[A-Za-z0-9_\-+/]*\d)(?=[A-Za-z0-9_\-+/]*[A-Za-z])[A-Za-z0-9_\-+/]{32,}\b")


@functools.cache
def compiled_rules() -> list[tuple[str, re.Pattern]]:
    rules = [(kind, re.compile(pattern)) for kind, pattern in MEMVAULT]
    return rules + [(kind, re.compile(pattern, *flags)) for _, kind, pattern, *flags in DETECT_SECRETS]


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int

# How deep redact_value walks: twice the deepest metadata an entry may hold.
MAX_DEPTH = 2 * MAX_METADATA_DEPTH

class Redactor:
    """The secret rules in force: all of them, an allow-list (a regex a secret may match whole to be
    kept, such as a documentation example), or none (`enabled=False`)."""

    def __init__(self, enabled: bool = True, allow: str = "") -> None:
        self.enabled = enabled
        self.allow = re.compile(allow) if allow else None
        self.rules = compiled_rules()

    def find(self, text: str) -> list[Finding]:
        """The secrets in `text`, left to right, none overlapping (the first rule to claim a span wins)."""
        if not self.enabled or not text:
            return []
        found: list[Finding] = []
        for kind, rule in self.rules:
            for match in rule.finditer(text):
                group = next((i for i in range(rule.groups, 0, -1) if match.group(i)), 0) if kind in IN_GROUP else 0
                start, end = match.span(group)
                if end <= start or self.allowed(match.group(group)):
                    continue
                if any(start < f.end and f.start < end for f in found):
                    continue
                found.append(Finding(kind, start, end))
        return sorted(found, key=lambda f: f.start)

    def allowed(self, secret: str) -> bool:
        return self.allow is not None and self.allow.fullmatch(secret) is not None

    def redact(self, text: str) -> str:
        """`text` with each secret replaced by its marker."""
        findings = self.find(text)
        for finding in reversed(findings):
            text = text[:finding.start] + MARKER.format(kind=finding.kind) + text[finding.end:]
        return text

    def redact_value(self, value, depth: int = 0):
        """Every string inside a JSON-like value redacted (dict keys too): the state files' records.
        Past MAX_DEPTH levels the value is left as it is: nothing that deep is written (metadata is
        refused past 32 levels, with its own message), and recursing further would overflow the stack."""
        if isinstance(value, str):
            return self.redact(value)
        if depth > MAX_DEPTH:
            return value
        if isinstance(value, dict):
            return {self.redact_value(k): self.redact_value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(item, depth + 1) for item in value]
        return value


_EVERY_RULE = Redactor()  # the guard's: the settings turn redaction off, never the guard
_active = _EVERY_RULE


def configure(enabled: bool = True, allow: str = "") -> None:
    """Apply the settings (`redaction.*`) for this process; memvault calls it when a vault is opened.
    An allow pattern that is not a regular expression is a ConfigError."""
    global _active
    from memvault.errors import ConfigError

    try:
        _active = Redactor(enabled, allow)
    except re.error as exc:
        raise ConfigError(f"redaction.allow is not a regular expression: {exc}") from None


def active() -> Redactor:
    return _active


def redact(text: str) -> str:
    """`text` as memvault may keep it: each secret replaced by `[redacted: <kind>]`."""
    return _active.redact(text)


def redact_value(value):
    return _active.redact_value(value)


def looks_secret(text: str) -> bool:
    """Whether a candidate memory talks about or holds a secret (the write policy drops what a model
    extracted when it does: "the user's bank PIN hint is their cat's name" is not kept either)."""
    return bool(SECRET_WORDS.search(text) or holds_secret(text))


def holds_secret(text: str) -> bool:
    """Whether `text` holds a secret's value (a token, a key, "my password is ..."), not just names
    one: a person's own "I keep my secrets in a notebook" is a memory like any other."""
    return bool(LONG_TOKEN.search(text) or _EVERY_RULE.find(text))


REDACTED_FIELDS = ("text", "category", "subject", "object", "evidence")


def redact_entry(entry):
    """An Entry as the vault may keep it: its text, triple and metadata redacted (the same entry when
    nothing was found, so an exact import stays byte for byte)."""
    changes = {}
    for name in REDACTED_FIELDS:
        value = getattr(entry, name)
        if isinstance(value, str) and (clean := redact(value)) != value:
            changes[name] = clean
    if entry.metadata and (metadata := redact_value(entry.metadata)) != entry.metadata:
        changes["metadata"] = metadata
    return entry.replace(**changes) if changes else entry

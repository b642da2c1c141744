"""Secrets known by their shape: vendors' token formats (docs/architecture.md, "Redaction").

The shapes are Yelp's detect-secrets 1.5.0 plugins' own regular expressions (Apache-2.0, copied below
as they are; tests/test_redact.py checks them against the installed package), plus the kinds it has no
plugin for (Anthropic, Google, Hugging Face, fine-grained GitHub, whole private-key blocks) written
after gitleaks' rules of the same names. Copied rather than imported: `import detect_secrets` costs
0.57 s (it loads requests and its scanner), paid by every command that writes.

Speed: a rule that begins with a literal ("ghp_", "AIza") is found by re's fast literal search; one that
begins with a class or `\\b` is tried at every character (seconds on a 20 MB text). Such rules carry a
`needle`, a string the text must hold for the rule to be run at all, and a word boundary is checked
after a match rather than written as `\\b` in front of it.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass

# The secret is the whole match, but for these rules, whose patterns capture it in their last group
# (the password of a URL, the key after "aws_secret_access_key ="); other groups are only prefixes.
IN_GROUP = ("aws-access-key", "basic-auth-credentials", "docker-login-password", "http-auth-password")
# detect-secrets 1.5.0's token plugins: (plugin, kind: its secret_type slugged, pattern[, flags]). Its
# keyword and entropy scanners are not copied: secret_keywords.py does their job for prose as well.
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
# What the text must hold for a detect-secrets rule that starts with no literal to be run (lower-cased
# for the IGNORECASE ones). A 20 MB text holds none of them, or the rule runs.
NEEDLES = {
    'aws.{0,20}?': "aws", '[MNO][a-zA-Z': ".", '[0-9a-z]{32}-us': "-us", 'xox(?:a|b': "xox",
    'https://hooks': "hooks.slack.com", '\\d{8,10}:': ":", '(?:r|s)k_live_': "k_live_",
}
# Kinds detect-secrets has no plugin for (after gitleaks' rules), and looser forms of the ones above
# that people paste (a GitHub token of another length, a Stripe test key). Order matters where two
# overlap: the first match wins. `random`: the part after the prefix must look random (looks_random),
# so "sk-team-members-of-the-club-2024" is a name, not a key.
@dataclass(frozen=True)
class Shape:
    kind: str
    pattern: str
    needle: str = ""  # as above; "" for a pattern that starts with a literal
    word_start: bool = False  # the match must not continue a word ("xghp_..." is not a token)
    random: int = 0  # the length of the literal prefix after which the value must look random; 0: no check


MEMVAULT = [
    Shape("private-key", r"-----BEGIN[A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                         r"(?:-----END[A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    Shape("private-key", r"PuTTY-User-Key-File-[23]:[\s\S]*?(?:Private-MAC: \S+|\Z)"),
    Shape("anthropic-api-key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    Shape("openai-token", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}", word_start=True, random=8),
    Shape("openai-token", r"sk-[A-Za-z0-9]{32,}", word_start=True, random=3),
    Shape("github-token", r"github_pat_[A-Za-z0-9_]{22,}"),
    # a token cut short (pasted in two messages, or mistyped): the prefix and 8+ random characters
    Shape("github-token", r"gh[pousr]_[A-Za-z0-9_]{8,}", word_start=True, random=4),
    Shape("google-api-key", r"AIza[0-9A-Za-z_-]{30,}", word_start=True),
    Shape("huggingface-token", r"hf_[A-Za-z0-9]{30,}", word_start=True, random=3),
    Shape("npm-tokens", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", word_start=True),
    Shape("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}", word_start=True),
    Shape("stripe-access-key", r"(?:sk|rk|pk)_(?:live|test)_[0-9a-zA-Z]{16,}", needle="k_", word_start=True),
    Shape("azure-ad-client-secret", r"(?<![A-Za-z0-9_~.])[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}", needle="Q~"),
    Shape("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])", word_start=True),
    Shape("digitalocean-token", r"do[pro]_v1_[a-f0-9]{64}(?![A-Za-z0-9])", word_start=True),
    Shape("gitlab-token", r"glpat-[A-Za-z0-9_-]{8,}", word_start=True, random=6),
    Shape("aws-access-key", r"(?:AKIA|ASIA)[0-9A-Z]{8,}", word_start=True, random=4),
    Shape("sendgrid-api-key", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    Shape("doppler-token", r"dp\.(?:st|pt|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{20,}", word_start=True),
    Shape("linear-api-key", r"lin_api_[A-Za-z0-9]{30,}", word_start=True),
    Shape("pulumi-token", r"pul-[a-f0-9]{40}", word_start=True),
    Shape("postman-api-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", word_start=True),
    Shape("databricks-token", r"dapi[a-f0-9]{32}", word_start=True),
    Shape("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    Shape("atlassian-api-token", r"ATATT3[A-Za-z0-9_=-]{30,}", word_start=True),
    Shape("grafana-token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", word_start=True),
    # a URL's password with characters detect-secrets' rule leaves out ("redis://default:Tigger68!@cache")
    Shape("basic-auth-credentials", r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@'\"]{1,64}:([^\s/@'\"]{3,128})@", needle="://"),
    # a login's password as a command line gives it: "docker login -u bob -p X", "mysql -u root -pX"
    Shape("docker-login-password", r"(?<!\S)-u[ \t]*\S+[ \t]+-p[ \t]*([^\s-]\S*)", needle="-u"),
    # requests' and httpx's auth=("user", "password")
    Shape("http-auth-password", r"auth\s*=\s*\(\s*['\"][^'\"\n]{1,64}['\"]\s*,\s*['\"]([^'\"\n]{3,128})['\"]"),
    Shape("hashicorp-vault-token", r"hv[sb]\.[A-Za-z0-9_-]{24,}", word_start=True, random=4),
]


@functools.cache
def compiled() -> list[tuple[str, re.Pattern, str, Shape | None]]:
    """Every token rule as (kind, regex, needle, shape): memvault's shapes first, then detect-secrets'."""
    rules = [(shape.kind, re.compile(shape.pattern), shape.needle, shape) for shape in MEMVAULT]
    for _, kind, pattern, *flags in DETECT_SECRETS:
        needle = next((n for start, n in NEEDLES.items() if pattern.startswith(start)), "")
        rules.append((kind, re.compile(pattern, *flags), needle, None))
    return rules


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def looks_random(value: str, min_length: int = 8) -> bool:
    """Whether `value` looks machine-made rather than written: long enough, letters and digits mixed
    (or both cases), varied characters, and not words joined by dashes ("team-members-of-the-club-2024")."""
    if len(value) < min_length:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_upper, has_lower = any(c.isupper() for c in value), any(c.islower() for c in value)
    if not (has_digit and (has_upper or has_lower)) and not (has_upper and has_lower and len(value) >= 16):
        return False
    parts = [p for p in re.split(r"[-_.]", value) if p]
    if len(parts) >= 3 and sum(1 for p in parts if p.isalpha() and (p.islower() or p.istitle())) * 2 >= len(parts):
        return False
    return entropy(value) >= min(3.0, math.log2(len(value)) - 0.5)


def word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def find_tokens(text: str, lowered: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every token-shaped secret in `text` (`lowered`: the same text lower-cased,
    for the needles), overlapping ones included: the caller keeps the first."""
    found = []
    for kind, rule, needle, shape in compiled():
        if needle and needle not in (lowered if rule.flags & re.IGNORECASE else text):
            continue
        for match in rule.finditer(text):
            group = next((i for i in range(rule.groups, 0, -1) if match.group(i)), 0) if kind in IN_GROUP else 0
            start, end = match.span(group)
            if end <= start:
                continue
            if shape is not None:
                if shape.word_start and start > 0 and word_char(text[start - 1]):
                    continue
                if shape.random and not looks_random(text[start + shape.random:end]):
                    continue
            found.append((kind, start, end))
    return found

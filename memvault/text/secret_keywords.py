"""Secrets known by their place: a value next to a word that names a credential, in any of the shapes
people write it (docs/architecture.md, "Redaction"). The idea is detect-secrets' keyword plugin and
gitleaks' generic rule, written for prose as well as for code:

- assignments and key-value pairs: `DB_PASSWORD=...`, `"password": "..."`, `password: ...` (YAML),
  `--password ...`, `api_key = "..."`, in code fences or not;
- prose in many languages: "my password is ...", "mein Passwort ist ...", "mon mot de passe est ...",
  "mi contraseña es ...", "a minha senha é ...", "пароль: ...", "密码是...", "login: alice / pass ...";
- the value judged by the word's kind: after a password word any value but a placeholder or an
  everyday word; after a PIN word digits; after a weaker word ("token", "secret", "API key") only
  a value that looks machine-made (secret_tokens.looks_random), so "the secret is patience" and
  "max_tokens: 4096" stay as written.

Only the value is returned: the caller replaces it and keeps the rest of the text.
"""

from __future__ import annotations

import functools
import re

from memvault.text.lazy_pattern import LazyPattern
from memvault.text.secret_tokens import looks_random

PASSWORD, PIN, TOKEN = "password", "pin", "token"
# Words that name a password, by language (lower case). Words of other scripts are matched anywhere;
# Latin ones only as whole words or as parts of an identifier (DB_PASSWORD, dbPassword).
PASSWORD_WORDS = (
    "password", "passwd", "passwort", "kennwort", "passphrase", "passcode", "pwd", "pw",  # en, de
    "backup code", "backup codes", "recovery code", "recovery codes",
    "mot de passe", "mdp",  # fr
    "contraseña", "contrasena", "contraseñas",  # es
    "senha", "palavra-passe", "palavra passe",  # pt
    "parola d'ordine",  # it ("password" itself is common in Italian)
    "wachtwoord", "hasło", "hasła", "haslo", "heslo", "jelszó", "parolă", "parola de acces", "lösenord",
    "lösenordet", "losenord", "passord", "adgangskode", "salasana", "şifre",
    "şifresi", "şifrem", "sifre", "parool", "geslo", "lozinka", "slaptažodis",
    "пароль", "пароля", "паролем", "κωδικός", "סיסמה", "كلمة المرور", "كلمة السر", "पासवर्ड",
    "密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호", "암호", "mật khẩu", "kata sandi", "รหัสผ่าน",
)
PIN_WORDS = ("pin", "pin code", "pin number", "pin-code", "pincode", "code pin", "código pin", "codice pin",
             "geheimzahl", "pin-nummer", "пин-код", "пин код")
TOKEN_WORDS = ("token", "tokens", "secret", "secrets", "api key", "api-key", "apikey", "api_key", "access key",
               "secret key", "private key", "client secret", "auth", "bearer", "credential", "credentials",
               "signing key", "encryption key", "master key", "session key", "license key", "licence key",
               "webhook secret", "clé api", "clave api", "chave api", "schlüssel", "токен", "ключ",
               "令牌", "密钥", "トークン", "토큰", "api 키")
# Words that name a password only in a key-value shape ("pass: x", "login: alice / pass x") or before
# a value that is no word ("my netflix pass is Kx9!2"): "I'll pass", "a bus pass is valid", "la clave
# es la paciencia".
WEAK_WORDS = ("pass", "clave")
# Identifier parts that say a key holds something about a secret, not the secret (password_length: 12).
NOT_A_VALUE = frozenset(
    "length len min max count size policy reset url uri path file field hint prompt label type types required "
    "enabled expires expiry expiration changed age format regex rule rules hash hashed id ids name names limit "
    "limits budget budgets usage used ttl strength mode strategy header endpoint store manager input form "
    "kind scope scopes valid validation confirm error errors prefix suffix salt method methods encoder "
    "checker confirmation repeat again old".split())
# Endings of a name glued together in capitals (PGPASSWORD, SLACKAPIKEY): the kind of the word it ends in.
GLUED = ((("password", "passwd", "passwort", "passphrase", "passcode"), "password"),
         (("apikey", "authtoken", "accesstoken", "secretkey", "clientsecret"), "token"))
# Everyday words that follow "my password is": not a value ("my password is strong").
EVERYDAY = frozenset(
    "the a an my your his her our their its this that same not no never still now also too very so just easy "
    "hard strong weak long short changed wrong correct right different secret safe saved stored written "
    "written kept set required needed missing expired old new simple complex good bad ok okay fine great "
    "terrible secure insecure unique something nothing anything everything what which where how why who "
    "there here on in at for with from to of by about into onto under over somewhere hidden reset "
    "ist nicht kein keine ein eine der die das mein dein sehr zu noch "
    "est pas un une le la les mon ton très trop encore "
    "es no un una el la los mi tu muy demasiado "
    "é não um uma o a os minha meu muito "
    "è non il lo mia mio molto troppo "
    "is niet een de het mijn "
    "jest nie to "
    # words that say what a password is like or became, in the languages above
    "abgelaufen falsch richtig sicher unsicher geändert vergessen gesperrt neu alt kurz lang "
    "expiré oublié incorrect correct faux bloqué court "
    "caducado caducada incorrecta correcta olvidada expirada bloqueada corta larga nueva nuevo "
    "errada certa esquecida expirou bloqueada curta nova "
    "scaduta sbagliata giusta corta lunga nuova vecchia verlopen fout juist kort lang nieuw "
    "wygasło błędne stare nowe неверный истёк новый старый".split())
# Endings of everyday words that follow "password is" in those languages (expired, changing, gesperrt...)
EVERYDAY_ENDINGS = ("ed", "ing", "ly", "iert", "ado", "ada", "ido", "ida", "ée", "ito", "ita", "able", "ible")
# What joins a word to its value. ASSIGN: code and config shapes. PROSE: a verb in some language.
ASSIGN = LazyPattern(r"[\"'`]?[ \t]*(?::=|=>|->|[:=：])[ \t]*(?!=)")
PROSE = LazyPattern(
    r"(?:['’]s|[ \t]+(?:is|was|are|were|has been|ist|war|lautet|heißt|est|était|c'est|es|era|son|é|era|è|"
    r"is|was|jest|to|je|är|er|on|это|—|–|-|->)|[ \t]*[—–])"
    r"(?:[ \t]+(?:now|currently|still|actually|simply|just|jetzt|maintenant|ahora|agora|adesso|nu|teraz))?"
    r"(?:[ \t]+(?:set|changed|gesetzt|geändert)[ \t]+(?:to|auf))?"
    r"(?:[ \t]+(?:the|das|le|la|el|a|o|il|het)[ \t]+(?:word|string|phrase|wort|mot|palabra|palavra|parola|woord))?"
    r"[ \t]*[:：]?[ \t]+"
    r"|[ \t]*(?:是|为|為|は|が|는|은|이|:|：)[ \t]*", re.IGNORECASE)
# "pass hunter2" straight after a login ("login: alice / pass hunter2"), or a flag ("--password x").
LOGIN_BEFORE = LazyPattern(r"(?:login|user(?:name)?|usuario|benutzer|utilisateur|usuário|email|e-mail)\b"
                          r"(?:[^\n]{0,60}?[/,;|]|[ \t]*[:=]?[ \t]*\S{1,60})[ \t]*$", re.IGNORECASE)
# Words between a keyword and its verb: "the password for the router is", "Kennwort für den Server
# lautet", "la contraseña del banco es", "Пароль от почты:". A preposition and at most two words.
QUALIFIER = LazyPattern(r"[ \t]+(?:for|of|on|to|at|für|zum|zur|vom|von|du|de|des|pour|del|de la|do|da|dos|das|di|"
                       r"della|van|voor|för|till|på|od|do|dla|от|для|к)(?:[ \t]+[^\s:=：]{1,24}){1,3}?(?=[ \t]*"
                       r"(?:[:=：]|[ \t](?:is|was|ist|lautet|est|es|é|è|is|jest|är|er|to)[ \t]))", re.IGNORECASE)
# A list of names and values: "- name: SECRET_KEY" then "value: ..." on the next line (Kubernetes,
# CI), and XML's key="Password" value="...".
NAME_VALUE = LazyPattern(r"[\"']?(?:[ \t]*\n[ \t]*-?[ \t]*|[ \t]+)value[ \t]*[:=][ \t]*")
# "Minha senha nova:", "Neues Passwort" has it before: an adjective between the word and its value
ADJECTIVE = LazyPattern(r"[ \t]+(?:nova|novo|nuevo|nueva|nouveau|nouvelle|neue|neues|nuova|nuovo|nieuwe|nowe|"
                       r"новый|new|current|actual|temporary|temporal|temporaire|provisoire)(?=[ \t]*[:=：])",
                       re.IGNORECASE)
BARE = LazyPattern(r"[ \t]+")
QUOTED = LazyPattern(r"\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|`([^`\n]{1,200})`|«[ \t]?([^»\n]{1,200}?)[ \t]?»|"
                    r"„([^“”\n]{1,200})[“”]|“([^”\n]{1,200})”|「([^」\n]{1,200})」")
# An unquoted value: up to a space, a quote or bracket, or a character of a script written without spaces.
UNQUOTED = LazyPattern(r"[^\s\"'`<>，。、；！？」』（）()\[\]{}\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{1,200}")
TRAILING = ".,;:!?)]}*_"
PLACEHOLDER = LazyPattern(r"^(?:\*+|x{3,}|\.{3,}|…|<[^>]*>|\$\{?[A-Za-z_][\w.]*\}?|\{\{.*\}\}|%\(?\w*\)?s|"
                         r"str|int|bytes|bool|float|any|object|secretstr|optional\[.*|list\[.*|dict\[.*|"
                         r"\[redacted.*|true|false|null|none|nil|undefined|required|optional|string|"
                         r"env\(.*|os\.environ.*|process\.env.*|getenv.*|secrets?\..*|vault:.*)$", re.IGNORECASE)
# What may follow an everyday-looking value for it to be the value: the clause ends there.
CLAUSE_END = LazyPattern(r"[ \t]*(?:$|[\n.,;:!?)\]]|(?:and|but|so|or|please|und|aber|et|mais|y|pero|e|mas|ma|en|maar|"
                        r"i|ale|и|но)\b)", re.IGNORECASE)


@functools.cache
def keyword_kinds() -> dict[str, str]:
    kinds = dict.fromkeys(TOKEN_WORDS, TOKEN)
    kinds.update(dict.fromkeys(PIN_WORDS, PIN))
    kinds.update(dict.fromkeys(PASSWORD_WORDS, PASSWORD))
    kinds.update(dict.fromkeys(WEAK_WORDS, PASSWORD))
    return kinds


@functools.cache
def triggers() -> dict[str, tuple[str, ...]]:
    """Each keyword that no shorter one begins, with the keywords it begins, longest first ("pass":
    password, passwd, ..., pass): one str.find for the lot."""
    words = sorted(keyword_kinds(), key=len)
    found: dict[str, list[str]] = {}
    for word in words:
        trigger = next((t for t in found if word.startswith(t)), word)
        found.setdefault(trigger, []).append(word)
    return {trigger: tuple(sorted(group, key=len, reverse=True)) for trigger, group in found.items()}


def anchors(lowered: str) -> list[tuple[int, str]]:
    """(position, keyword) of each keyword in `lowered`, the longest where several start together.
    str.find per trigger word: a regex of 100 alternatives is tried at every character (seconds for
    20 MB); a text of ASCII alone skips the words of other scripts."""
    ascii_only = lowered.isascii()
    at: dict[int, str] = {}
    for trigger, words in triggers().items():
        if ascii_only and not trigger.isascii():
            continue
        pos = lowered.find(trigger)
        while pos >= 0:
            at[pos] = next(word for word in words if lowered.startswith(word, pos))
            pos = lowered.find(trigger, pos + 1)
    return sorted(at.items())


IDENTIFIER = LazyPattern(r"[\w.\-]*", re.UNICODE)
CAMEL = LazyPattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def parts_of(identifier: str) -> list[str]:
    return [part.lower() for piece in re.split(r"[_.\-]+", identifier) for part in CAMEL.findall(piece) or [piece]]


def kind_of_identifier(identifier: str) -> str | None:
    """The kind of secret a key name holds (DB_PASSWORD: password, apiKey: token, max_tokens: None)."""
    parts = parts_of(identifier)
    if not parts or any(part in NOT_A_VALUE for part in parts):
        return None
    kinds = keyword_kinds()
    joined = {a + b for a, b in zip(parts, parts[1:], strict=False)} | {f"{a} {b}" for a, b in zip(parts, parts[1:],
                                                                                                   strict=False)}
    found = [kinds[p] for p in (*parts, *joined) if p in kinds]
    found += [kind for endings, kind in GLUED for part in parts if part.endswith(endings)]
    if "key" in parts and parts.index("key") > 0 and parts[parts.index("key") - 1] in (
            "api", "access", "secret", "private", "client", "auth", "signing", "encryption", "master", "license"):
        found.append(TOKEN)
    for kind in (PASSWORD, PIN, TOKEN):
        if kind in found:
            return kind
    return None


def value_at(text: str, pos: int) -> tuple[int, int, bool] | None:
    """(start, end, quoted) of the value that starts at `pos`."""
    match = QUOTED.match(text, pos)
    if match:
        group = next(i for i in range(1, 8) if match.group(i) is not None)
        return match.start(group), match.end(group), True
    match = UNQUOTED.match(text, pos)
    if not match:
        return None
    end = match.end()
    if text.startswith("(", end):  # password = input("Password: "): a call, not a value
        return None
    while end > pos and text[end - 1] in TRAILING:  # the sentence's punctuation, not the value's
        end -= 1
    return (pos, end, False) if end > pos else None


def accepted(kind: str, value: str, quoted: bool, prose: bool, after: str) -> bool:
    """Whether `value`, found after a word of `kind`, is a secret's value."""
    if PLACEHOLDER.match(value) or "[redacted" in value:
        return False
    if kind == PIN:
        return value.isdigit() and 3 <= len(value) <= 12
    if kind == TOKEN:
        return looks_random(value, 12) and not value.startswith(("/", "~", "./", "../")) and "://" not in value
    if len(value) < 3 or value.lower() in EVERYDAY or value.lower() in keyword_kinds():
        return False
    if prose and not quoted and value.isalpha():
        # "my password is swordfish and ..." is a value; "my password is written on a card" is not
        return CLAUSE_END.match(after) is not None and not value.lower().endswith(EVERYDAY_ENDINGS)
    return True


def find_keyword_values(view: str, lowered: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each value found after a credential word in `view` (`lowered`: the
    same text lower-cased, of equal length)."""
    found: list[tuple[str, int, int]] = []
    kinds = keyword_kinds()
    covered = 0
    for start, word in anchors(lowered):
        end = start + len(word)
        if start < covered:  # inside a longer keyword found here already ("pass" in "password")
            continue
        covered = end
        latin = word.isascii()
        if latin:  # a Latin word counts whole, or as part of an identifier: never inside another word
            ident_start = start
            while ident_start > 0 and (view[ident_start - 1].isalnum() or view[ident_start - 1] in "_.-"):
                ident_start -= 1
            while ident_start < start and view[ident_start] in ".-":  # "--password": a flag, not the name
                ident_start += 1
            ident_end = IDENTIFIER.match(view, end).end()
            while ident_end > end and view[ident_end - 1] in ".-":
                ident_end -= 1
            identifier = view[ident_start:ident_end]
            if identifier.lower() in kinds:
                kind = kinds[identifier.lower()]
            elif " " in word:
                continue
            else:
                kind = kind_of_identifier(identifier)
                if kind is None:
                    continue
            # the whole word, or a compound ending in it: "WLAN-Passwort", "wifi-password" (not DB_PASSWORD)
            last = identifier.lower().rsplit("-", 1)[-1]
            whole_word = identifier.lower() in (word, word + "s") or ("-" in identifier and last in (word, word + "s"))
            after_word = ident_end
        else:
            kind, whole_word, after_word, ident_start = kinds[word], True, end, start
        hit = judged(view, kind, word, whole_word, ident_start, after_word)
        if hit:
            found.append(hit)
    return found


def judged(view: str, kind: str, word: str, whole_word: bool, word_start: int,
           after_word: int) -> tuple[str, int, int] | None:
    """The value after a keyword (at `after_word`) if it is one, as (kind, start, end)."""
    shapes = [(ASSIGN, False), (NAME_VALUE, False)]
    if whole_word:
        shapes.append((PROSE, True))
    flag = view[max(0, word_start - 2):word_start] == "--" or view[max(0, word_start - 1):word_start] == "-"
    if flag or (whole_word and (kind == TOKEN or LOGIN_BEFORE.search(view[max(0, word_start - 80):word_start]))):
        shapes.append((BARE, False))
    elif whole_word and word not in WEAK_WORDS:  # "use passcode X7fk2m9q": only a value that is no word
        shapes.append((BARE, None))
    qualified = QUALIFIER.match(view, after_word) or ADJECTIVE.match(view, after_word)
    starts = (after_word, qualified.end()) if qualified and whole_word else (after_word,)
    for begin in starts:
        for joiner, prose in shapes:
            link = joiner.match(view, begin)
            if not link:
                continue
            value = value_at(view, link.end())
            if value is None:
                continue
            start, end, quoted = value
            text = view[start:end]
            if prose is None or (prose and word in WEAK_WORDS):  # bare, or "my netflix pass is ...": no word
                if text.isalpha() or not (any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
                                          or kind == PIN):
                    continue
            if accepted(kind, text, quoted, bool(prose), view[end + quoted:end + quoted + 12]):
                return (PASSWORD if kind == PASSWORD else kind, start, end)
    return None

"""The tuned set of scripts/bench_redaction.py, made by a seeded generator from hand-written shapes:
secrets as people write them (vendor tokens, passwords in prose in many languages, assignments in
code and config, PINs) and ordinary texts that people who write code keep (commit SHAs, UUIDs,
digests, hashes, colours, paths, URLs with query strings, base64 images, API names, versions, code).
The detector was tuned on this set; scripts/redaction_heldout.py was not."""

from __future__ import annotations

import base64
import random
import string
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.secret_samples import samples  # noqa: E402

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
LOWER = string.ascii_lowercase


def make(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def password(rng: random.Random) -> str:
    """A password as people choose them: a word and digits, a mix, or a phrase-like run."""
    word = rng.choice(["sunflower", "Tigger", "bluefish", "Marmelade", "zorro", "gatito", "Kaffee", "pomme",
                       "lighthouse", "Orca", "banana", "dragon"])
    return rng.choice([f"{word}{rng.randint(10, 9999)}", f"{word.capitalize()}{rng.randint(1, 99)}!",
                       make(rng, ALNUM, rng.randint(9, 16)), f"{make(rng, ALNUM, 6)}#{make(rng, ALNUM, 5)}",
                       f"{word}-{word[::-1]}-{rng.randint(1, 9)}"])


# password words in prose, by language: "{v}" is the value
PROSE = {
    "en": ["my password is {v}", "the password is {v}", "Password: {v}", "my email password is {v} and I always "
           "forget it", "the wifi password is {v}.", "pwd: {v}", "pw: {v}",
           "here's the passphrase: {v}", "my passcode is {v}", "the admin password was changed to {v}",
           "the password is the word {v}", "password = {v}", "login: alice / pass {v}", "user bob, password {v}"],
    "de": ["mein Passwort ist {v}", "Das Passwort lautet {v}", "Kennwort: {v}", "Passwort für das WLAN: {v}"],
    "fr": ["mon mot de passe est {v}", "le mot de passe est {v}", "Mot de passe : {v}", "mdp = {v}"],
    "es": ["mi contraseña es {v}", "la contraseña es {v}", "Contraseña: {v}"],
    "pt": ["a minha senha é {v}", "minha senha é {v}", "Senha: {v}"],
    "it": ["la mia password è {v}", "la password è {v}", "parola d'ordine: {v}"],
    "nl": ["mijn wachtwoord is {v}", "Wachtwoord: {v}"],
    "pl": ["moje hasło to {v}", "Hasło: {v}"],
    "ru": ["мой пароль: {v}", "пароль — {v}", "Пароль: {v}"],
    "zh": ["我的密码是{v}", "密码：{v}"],
    "ja": ["パスワードは{v}です", "パスワード：{v}"],
    "ko": ["비밀번호는 {v}", "비밀번호: {v}"],
    "tr": ["şifre: {v}"],
    "sv": ["lösenord: {v}"],
}
PINS = [("en", "my PIN is {v}"), ("en", "PIN: {v}"), ("en", "the card's pin code is {v}"), ("de", "PIN: {v}"),
        ("fr", "code PIN : {v}"), ("ru", "пин-код: {v}")]
# code and configuration: "{v}" the value
ASSIGN = {
    "env": "DB_PASSWORD={v}", "env-export": "export MYSQL_ROOT_PASSWORD={v}", "json": '{{"password": "{v}"}}',
    "json-nested": '{{"db": {{"user": "app", "password": "{v}"}}}}', "yaml": "database:\n  password: {v}\n",
    "toml": 'password = "{v}"', "ini": "[smtp]\npass = {v}", "python-kwarg": 'connect(user="app", password="{v}")',
    "js-const": "const dbPassword = '{v}';", "cli-flag": "mysql -u root --password={v}",
    "cli-flag-space": "psql --password {v} app", "fence": "```\nDB_PASSWORD={v}\n```",
    "url-postgres": "postgres://app:{v}@db.internal:5432/app", "url-redis": "redis://default:{v}@cache:6379",
    "netrc": "machine api.example.com login bob password {v}",
    "docker-compose": "environment:\n  - POSTGRES_PASSWORD={v}",
}
# values that must look machine-made (after a weaker word: token, secret, key)
RANDOM_ASSIGN = {
    "api-key-env": "API_KEY={v}", "secret-key-py": "SECRET_KEY = '{v}'", "client-secret-yaml": "client_secret: {v}",
    "auth-token-json": '{{"auth_token": "{v}"}}', "token-prose": "the token is {v}",
    "bearer": "Authorization: Bearer {v}",
    "api-key-prose": "my api key is {v}", "webhook-secret": "webhook secret: {v}",
}


def secrets() -> list[tuple[str, str, str, str]]:
    """(shape, language, text, secret)."""
    rng = random.Random("tuned secrets")
    found = [(f"token:{kind}", "en", text, secret) for kind, text, secret in samples()]
    token_phrases = [("de", "mein Token: {t}"), ("fr", "voici ma clé : {t}"), ("es", "mi token es {t}"),
                     ("en", "```\n{t}\n```"), ("en", "use {t} for CI")]
    for kind, _, secret in samples():
        if kind in ("private-key", "password", "pin", "url-password", "aws-secret-key"):
            continue
        lang, template = rng.choice(token_phrases)
        found.append((f"token:{kind}", lang, template.format(t=secret), secret))
    for lang, templates in PROSE.items():
        for template in templates:
            for _ in range(3 if lang != "en" else 4):
                value = password(rng)
                found.append((f"prose:{lang}:{template[:18]}", lang, template.format(v=value), value))
    for lang, template in PINS * 3:
        value = str(rng.randint(1000, 999999))
        found.append((f"pin:{lang}", lang, template.format(v=value), value))
    for shape, template in ASSIGN.items():
        for _ in range(4):
            value = password(rng).replace("#", "x")
            found.append((f"assign:{shape}", "code", template.format(v=value), value))
    for shape, template in RANDOM_ASSIGN.items():
        for _ in range(3):
            value = make(rng, ALNUM, rng.randint(20, 40))
            found.append((f"random:{shape}", "code", template.format(v=value), value))
    fullwidth = "ghp_" + make(rng, ALNUM, 36)
    found.append(("unicode:full-width", "en", "token " + fullwidth.translate(
        {c: c + 0xFEE0 for c in range(0x21, 0x7F)}), fullwidth[4:20]))
    zero_width = "sk-proj-" + make(rng, ALNUM, 40)
    found.append(("unicode:zero-width", "en", f"key {zero_width[:12]}\u200b{zero_width[12:]}", zero_width[14:30]))
    return found


def ordinary() -> list[tuple[str, str]]:
    """(kind, text): nothing in them is a secret."""
    rng = random.Random("tuned ordinary")
    out: list[tuple[str, str]] = []

    def uuid() -> str:
        return (f"{make(rng, HEX, 8)}-{make(rng, HEX, 4)}-4{make(rng, HEX, 3)}-{rng.choice('89ab')}"
                f"{make(rng, HEX, 3)}-{make(rng, HEX, 12)}")

    makers = {
        "commit-sha": lambda: rng.choice(["fixed in {}", "commit {}", "git revert {}", "the regression came in {}",
                                          "HEAD is at {}"]).format(make(rng, HEX, 40)),
        "short-sha": lambda: f"see {make(rng, HEX, rng.choice([7, 8, 12]))} on main",
        "uuid": lambda: rng.choice(["request id {}", "user_id={}", "the job {} failed", "trace {} in the logs"]
                                   ).format(uuid()),
        "digest": lambda: rng.choice(["image@sha256:{}", "sha256:{}", "checksum {}"]).format(make(rng, HEX, 64)),
        "hash": lambda: rng.choice(["md5 {}", "etag \"{}\"", "sha1 {}", "sha512 {}"]).format(
            make(rng, HEX, rng.choice([32, 40, 128]))),
        "colour": lambda: rng.choice(["the accent is #{}", "color: #{};", "fill=\"#{}\""]).format(
            make(rng, HEX, rng.choice([3, 6, 8, 32]))),
        "path": lambda: "/" + "/".join(make(rng, LOWER, rng.randint(3, 12)) for _ in range(rng.randint(3, 9)))
                        + rng.choice([".py", ".ts", ".md", "_test.go", ""]),
        "windows-path": lambda: "C:\\Users\\" + "\\".join(make(rng, LOWER, rng.randint(3, 10)) for _ in range(4)),
        "url-query": lambda: f"https://{make(rng, LOWER, 7)}.com/{make(rng, LOWER, 5)}?q={make(rng, LOWER, 5)}"
                             f"&page={rng.randint(1, 50)}&sort={rng.choice(['new', 'top'])}&utm_source=news"
                             f"&id={make(rng, HEX, 24)}",
        "base64-image": lambda: "data:image/png;base64," + base64.b64encode(rng.randbytes(rng.randint(40, 300))
                                                                             ).decode(),
        "api-name": lambda: rng.choice(["getAccessToken()", "verify_password(user, candidate)", "TokenBucket",
                                        "PASSWORD_RESET_URL", "refreshAuthToken", "api_key_header_name",
                                        "SecretManagerServiceClient", "PinInput", "tokenize_sentences",
                                        "PassportStrategy", "keyboardDidShow", "pin_memory=True"]) + " " +
                          rng.choice(["is deprecated", "was renamed", "returns None", "needs a test"]),
        "version": lambda: f"v{rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}"
                           + rng.choice(["", "-rc.1", "-beta.2", f"+build.{make(rng, HEX, 7)}", ".post1"]),
        "docker": lambda: f"ghcr.io/{make(rng, LOWER, 6)}/{make(rng, LOWER, 5)}:{rng.randint(1, 9)}."
                          f"{rng.randint(0, 9)}@sha256:{make(rng, HEX, 64)}",
        "pod": lambda: f"{make(rng, LOWER, 5)}-deployment-{make(rng, HEX, 10)}-{make(rng, LOWER + '0123456789', 5)}",
        "arn": lambda: f"arn:aws:s3:::{make(rng, LOWER, 10)}/{make(rng, LOWER, 6)}/{make(rng, HEX, 16)}.json",
        "email": lambda: f"{make(rng, LOWER, 6)}.{make(rng, LOWER, 5)}@example.org",
        "code": lambda: rng.choice([
            "max_tokens = 4096", "password_min_length: 12", "if password == confirm:", "token_type: bearer",
            "def verify_password(password: str) -> bool:", '"password": {"type": "string", "minLength": 8}',
            "SELECT password_hash FROM users WHERE id = ?", "expires_in: 3600", "auth: true",
            "secret_name: prod-db-credentials", "api_key_env: OPENAI_API_KEY", "password: ${DB_PASSWORD}",
            "token = get_token()", "PASSWORD_FIELD = 'password'", "export API_KEY=$(pass show openai)",
            "password: <your password here>", "pin_memory: false", "key: value"]),
        "prose": lambda: rng.choice([
            "I need to reset my password again", "the token ring network was slow", "my password is strong",
            "she keeps her secrets", "the pin is in the drawer", "I'll pass on the dessert",
            "password managers are great", "the secret is patience", "a bus pass costs 40 euros",
            "mein Passwort ist zu kurz", "j'ai oublié mon mot de passe", "olvidé mi contraseña",
            "esqueci a minha senha", "the key to success is practice", "bring the API keys doc to the meeting"]),
        "ip": lambda: f"{rng.randint(1, 254)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}:"
                      f"{rng.randint(1024, 65535)}",
        "semver-range": lambda: f"@{make(rng, LOWER, 5)}/{make(rng, LOWER, 6)}@^{rng.randint(0, 9)}.0.0",
    }
    kinds = list(makers)
    for index in range(1100):
        kind = kinds[index % len(kinds)]
        out.append((kind, makers[kind]()))
    return out

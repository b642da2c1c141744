"""The third held-out set of scripts/bench_redaction.py, written after the fixes the second one showed.
Its first run: 24 of 26 secrets caught ("wifi şifresi ...", "the 2FA backup code is ..."), 1 of 120
ordinary texts altered (`password = input(...)`); those gaps were then fixed. Messages as people paste
them into a chat: mixed languages, secrets mid-sentence, config snippets. Tokens are made by a seeded
generator (none is real)."""

from __future__ import annotations

import random
import string

from redaction_corpus import ALNUM, HEX, make  # the one seeded token generator of the redaction sets


def secrets() -> list[tuple[str, str, str, str]]:
    rng = random.Random("held-out three")
    v = [make(rng, string.ascii_lowercase, 5) + str(rng.randint(10, 99)) + make(rng, ALNUM, 3) for _ in range(30)]
    npm = "npm_" + make(rng, ALNUM, 36)
    google = "AIza" + make(rng, ALNUM + "_-", 35)
    jwt = "eyJhbGciOiJIUzI1NiJ9." + make(rng, ALNUM, 40) + "." + make(rng, ALNUM + "_-", 43)
    hexsecret = make(rng, HEX, 64)
    return [
        ("prose", "en", f"ok so the staging db password is {v[0]} — don't tell anyone", v[0]),
        ("prose", "en", f"router admin password: {v[1]}", v[1]),
        ("prose", "en", f"my old password was {v[2]} but I changed it", v[2]),
        ("prose", "en", "For the record, PIN 4410 is the garage", "4410"),
        ("prose", "en", f"the shared account's password is \"{v[3]}\"", v[3]),
        ("prose", "de", f"Zugangsdaten: Benutzer max, Passwort {v[4]}", v[4]),
        ("prose", "de", f"Das WLAN-Kennwort ist {v[5]}.", v[5]),
        ("prose", "fr", f"identifiant : paul, mot de passe : {v[6]}", v[6]),
        ("prose", "es", f"usuario: ana / contraseña: {v[7]}", v[7]),
        ("prose", "pt", f"a senha do roteador é {v[8]}", v[8]),
        ("prose", "it", f"password del wifi: {v[9]}", v[9]),
        ("prose", "pl", f"hasło do wifi to {v[10]}", v[10]),
        ("prose", "ru", f"логин admin, пароль {v[11]}", v[11]),
        ("prose", "zh", f"WiFi密码：{v[12]}", v[12]),
        ("prose", "tr", f"wifi şifresi {v[13]}", v[13]),
        ("code", "code", f"DATABASE_URL=postgresql://app:{v[14]}@localhost/app", v[14]),
        ("code", "code", f"SMTP_PASS={v[15]}", v[15]),
        ("code", "code", f"  password: \"{v[16]}\"\n  host: mail.example.com", v[16]),
        ("code", "code", f"$env:ADMIN_PASSWORD = '{v[17]}'", v[17]),
        ("code", "code", f"set PASSWORD={v[18]}", v[18]),
        ("code", "code", f"client_secret = \"{hexsecret}\"", hexsecret),
        ("code", "code", f"ldap_bind_pw: {v[19]}", v[19]),
        ("token", "en", f"npm publish with {npm}", npm),
        ("token", "en", f"maps: {google}", google),
        ("token", "en", f"the session cookie is {jwt}", jwt),
        ("prose", "en", f"the 2FA backup code is {v[20]}", v[20]),
    ]


def ordinary() -> list[tuple[str, str]]:
    rng = random.Random("held-out three ordinary")
    out = []
    for _ in range(15):
        out += [
            ("sha", f"merge {make(rng, HEX, 7)}..{make(rng, HEX, 7)} into main"),
            ("hash", f"bcrypt cost 12, argon2 for new users (see issue #{rng.randint(100, 9999)})"),
            ("url", f"https://www.youtube.com/watch?v={make(rng, ALNUM + '_-', 11)}&t={rng.randint(1, 900)}s"),
            ("url", f"https://docs.example.com/search?q=reset+password&lang=en&page={rng.randint(1, 9)}"),
            ("code", rng.choice(["assert user.password != 'admin'", "password = input('Password: ')",
                                 "token_count = len(tokens)", "PIN_LED = 13", "pass", "key_id: 42",
                                 "passwordless login via magic link", "auth_method: oauth2"])),
            ("prose", rng.choice(["I finally set up a password manager", "the pass over the Alps was closed",
                                  "mi contraseña es demasiado larga", "meu pin é o mesmo do cartão antigo",
                                  "password strength meter shows weak", "we rotate secrets monthly"])),
            ("colour", f"background: #{make(rng, HEX, 6)}; border-color: #{make(rng, HEX, 6)}"),
            ("uuid", f"{make(rng, HEX, 8)}-{make(rng, HEX, 4)}-1{make(rng, HEX, 3)}-9{make(rng, HEX, 3)}-"
                     f"{make(rng, HEX, 12)}"),
        ]
    return out

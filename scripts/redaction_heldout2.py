"""The second held-out set of scripts/bench_redaction.py, written after the detector was tuned on the
first one (scripts/redaction_heldout.py: 24 of its 42 secrets were caught on its first run, before
the fixes it showed). Its first run: 26 of 34 secrets caught, 5 of 160 ordinary texts altered; the
gaps it showed were then fixed, and scripts/redaction_heldout3.py written. Tokens come from a
seeded generator (none is real)."""

from __future__ import annotations

import random

from redaction_corpus import ALNUM, HEX, make  # the one seeded token generator of the redaction sets


def secrets() -> list[tuple[str, str, str, str]]:
    rng = random.Random("held-out two")
    v = [make(rng, ALNUM, 8) + rng.choice("!?#$%") + str(rng.randint(0, 9)) for _ in range(40)]
    hf = "hf_" + make(rng, ALNUM, 34)
    gl = "glpat-" + make(rng, ALNUM, 20)
    stripe = "sk_live_" + make(rng, ALNUM, 24)
    anth = "sk-ant-api03-" + make(rng, ALNUM, 80)
    random_key = make(rng, ALNUM, 32)
    return [
        ("prose", "en", f"btw the vpn password's {v[0]}", v[0]),
        ("prose", "en", f"Admin login is root and the password {v[1]}", v[1]),
        ("prose", "en", f"I changed my bank password to {v[2]} yesterday", v[2]),
        ("prose", "en", f"psst, pw is {v[3]}", v[3]),
        ("prose", "en", f"The Wi-Fi at the cabin: network Lakeside, password {v[4]}", v[4]),
        ("prose", "en", f"my iCloud pwd = {v[5]}", v[5]),
        ("prose", "en", "new PIN for the debit card: 7731", "7731"),
        ("prose", "de", f"Neues Passwort: {v[6]}", v[6]),
        ("prose", "de", f"das Passwort vom Router ist {v[7]}", v[7]),
        ("prose", "fr", f"Voici mon mot de passe : {v[8]}", v[8]),
        ("prose", "fr", f"le mdp c'est {v[9]}", v[9]),
        ("prose", "es", f"Te paso la contraseña: {v[10]}", v[10]),
        ("prose", "es", f"la clave del wifi es {v[11]}", v[11]),
        ("prose", "pt", f"Minha senha nova: {v[12]}", v[12]),
        ("prose", "it", f"Nuova password: {v[13]}", v[13]),
        ("prose", "nl", f"wachtwoord van de wifi: {v[14]}", v[14]),
        ("prose", "ru", f"новый пароль {v[15]}", v[15]),
        ("prose", "zh", f"新密码是 {v[16]}", v[16]),
        ("prose", "ja", f"新しいパスワード: {v[17]}", v[17]),
        ("prose", "ko", f"새 비밀번호는 {v[18]} 입니다", v[18]),
        ("code", "code", f"PGPASSWORD={v[19]} psql -h db app", v[19]),
        ("code", "code", f"- MYSQL_PASSWORD: \"{v[20]}\"", v[20]),
        ("code", "code", f"spring.datasource.password={v[21]}", v[21]),
        ("code", "code", f"<add key=\"Password\" value=\"{v[22]}\" />", v[22]),
        ("code", "code", f"password: '{v[23]}'  # prod", v[23]),
        ("code", "code", f"requests.get(url, auth=('bob', '{v[24]}'))", v[24]),
        ("code", "code", f"git clone https://bob:{v[25]}@github.com/org/repo.git", v[25]),
        ("code", "code", f"ssh_pass = \"{v[26]}\"", v[26]),
        ("code", "code", f"\"apiKey\": \"{random_key}\"", random_key),
        ("token", "en", f"HF token {hf}", hf),
        ("token", "en", f"gitlab {gl}", gl),
        ("token", "en", f"stripe live key is {stripe}", stripe),
        ("token", "en", f"ANTHROPIC_API_KEY: {anth}", anth),
        ("prose", "en", f"the door code is {v[27]}", v[27]),
    ]


def ordinary() -> list[tuple[str, str]]:
    rng = random.Random("held-out two ordinary")
    out = []
    for _ in range(20):
        out += [
            ("sha", f"bisect points at {make(rng, HEX, 40)}; reverting"),
            ("uuid", f"DELETE FROM jobs WHERE id = '{make(rng, HEX, 8)}-{make(rng, HEX, 4)}-4{make(rng, HEX, 3)}-"
                     f"b{make(rng, HEX, 3)}-{make(rng, HEX, 12)}'"),
            ("digest", f"sha384-{make(rng, ALNUM + '+/', 64)}"),
            ("path", f"./node_modules/.pnpm/{make(rng, 'abcdefghij', 6)}@{rng.randint(1, 9)}.{rng.randint(0, 9)}.0/"
                     f"node_modules/{make(rng, 'klmnopqrst', 7)}/dist/index.js"),
            ("url", f"https://console.cloud.google.com/logs/query;query={make(rng, 'abcdef', 5)}?project=demo-"
                    f"{rng.randint(100, 999)}&authuser=0"),
            ("code", rng.choice(["password_confirmation: password", "if (!password) return;",
                                 "const token = await getToken();", "tokens_used: 1832", "secret: false",
                                 "PASSWORD_HASHERS = [...]", "pin: 3.3V", "passes: 3"])),
            ("prose", rng.choice(["my password expired, reset it tomorrow", "the secret ingredient is cumin",
                                  "don't share passwords in chat", "pass rate was 94%", "PIN pad is broken",
                                  "das Passwort ist abgelaufen", "le mot de passe est trop court"])),
            ("version", f"node {rng.randint(14, 22)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}, npm "
                        f"{rng.randint(6, 10)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"),
        ]
    return out

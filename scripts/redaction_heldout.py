"""The held-out set of scripts/bench_redaction.py: shapes written by hand after the detector, never run
against it while it was tuned. Its figures are reported apart from the tuned set's.

Secrets are (shape, language, text, secret); the tokens are made from a seeded generator in each
vendor's shape (none is real). Ordinary texts are what people who write code keep."""

from __future__ import annotations

import random
import string

from redaction_corpus import ALNUM, HEX, make  # the one seeded token generator of the redaction sets


def secrets() -> list[tuple[str, str, str, str]]:
    rng = random.Random("held-out secrets")
    pw = [make(rng, ALNUM, 10) + "!" for _ in range(40)]
    gh = "ghp_" + make(rng, ALNUM, 36)
    oa = "sk-proj-" + make(rng, ALNUM + "_-", 40)
    aws = "AKIA" + make(rng, string.ascii_uppercase + string.digits, 16)
    slack = "xoxp-" + make(rng, string.digits, 11) + "-" + make(rng, string.digits, 12) + "-" + make(rng, HEX, 32)
    hexkey = make(rng, HEX, 40)
    k8s, maps = make(rng, ALNUM, 32), make(rng, ALNUM, 39)
    return [
        ("prose", "en", f"Note to self: my gmail password = {pw[0]}", pw[0]),
        ("prose", "en", f"The new Wi-Fi passphrase is {pw[1]} (changed Monday)", pw[1]),
        ("prose", "en", "remember that the alarm code is 4471 and the PIN for the card is 9032", "9032"),
        ("prose", "en", f"Password for the router: {pw[2]}", pw[2]),
        ("prose", "en", f"my netflix pass is {pw[3]}", pw[3]),
        ("prose", "en", f"Use passcode {pw[4]} to unlock the tablet", pw[4]),
        ("prose", "de", f"Das Kennwort für den Server lautet {pw[5]}", pw[5]),
        ("prose", "de", f"Mein WLAN-Passwort ist {pw[6]}, bitte nicht weitergeben", pw[6]),
        ("prose", "fr", f"Le mot de passe du wifi est {pw[7]}", pw[7]),
        ("prose", "fr", f"mdp: {pw[8]}", pw[8]),
        ("prose", "es", f"La contraseña del banco es {pw[9]}", pw[9]),
        ("prose", "es", f"contraseña: {pw[10]}", pw[10]),
        ("prose", "pt", f"A senha do e-mail é {pw[11]}", pw[11]),
        ("prose", "pt", f"senha = {pw[12]}", pw[12]),
        ("prose", "it", f"la password del conto è {pw[13]}", pw[13]),
        ("prose", "nl", f"Het wachtwoord is {pw[14]}", pw[14]),
        ("prose", "pl", f"Hasło do poczty: {pw[15]}", pw[15]),
        ("prose", "ru", f"Пароль от почты: {pw[16]}", pw[16]),
        ("prose", "zh", f"服务器密码：{pw[17]}", pw[17]),
        ("prose", "ja", f"Wi-Fiのパスワードは{pw[18]}です", pw[18]),
        ("prose", "ko", f"와이파이 비밀번호: {pw[19]}", pw[19]),
        ("prose", "tr", f"Şifre: {pw[20]}", pw[20]),
        ("prose", "sv", f"Lösenordet är {pw[21]}", pw[21]),
        ("yaml", "code", f"database:\n  user: app\n  password: {pw[22]}\n", pw[22]),
        ("env", "code", f"POSTGRES_PASSWORD={pw[23]}\nPOSTGRES_USER=app", pw[23]),
        ("json", "code", f'{{"username": "bob", "pass": "{pw[24]}"}}', pw[24]),
        ("toml", "code", f'[smtp]\npassword = "{pw[25]}"', pw[25]),
        ("python", "code", f'conn = connect(host="db", password="{pw[26]}")', pw[26]),
        ("js", "code", f"const apiKey = '{hexkey}';", hexkey),
        ("shell", "code", f"mysql -u root --password={pw[27]} app", pw[27]),
        ("shell", "code", f"curl -H 'Authorization: Bearer {oa}' https://api.example.com", oa),
        ("url", "code", f"redis://default:{pw[28]}@cache.internal:6379/0", pw[28]),
        ("docker", "code", f"docker login -u bob -p {pw[29]} registry.example.com", pw[29]),
        ("k8s", "code", f"env:\n- name: SECRET_KEY\n  value: \"{k8s}\"", k8s),
        ("token", "en", f"here's my token {gh}", gh),
        ("token", "en", f"OPENAI_API_KEY={oa}", oa),
        ("token", "en", f"aws key id {aws}", aws),
        ("token", "en", f"slack user token: {slack}", slack),
        ("pair", "en", f"user: admin, password: {pw[30]}", pw[30]),
        ("pair", "en", f"username bob / pw {pw[31]}", pw[31]),
        ("prose", "en", f"I set the safe's combination to {pw[32]}", pw[32]),
        ("prose", "en", f"the api key for maps is {maps}", maps),
    ]


def ordinary() -> list[tuple[str, str]]:
    rng = random.Random("held-out ordinary")
    texts = []
    for _ in range(25):
        texts.append(("sha", f"reverted {make(rng, HEX, 40)} because it broke the build"))
        texts.append(("short-sha", f"cherry-pick {make(rng, HEX, 7)} onto release"))
        texts.append(("uuid", f"the tenant is {make(rng, HEX, 8)}-{make(rng, HEX, 4)}-4{make(rng, HEX, 3)}-"
                              f"a{make(rng, HEX, 3)}-{make(rng, HEX, 12)}"))
        texts.append(("digest", f"FROM python:3.12@sha256:{make(rng, HEX, 64)}"))
        texts.append(("md5", f"md5sum says {make(rng, HEX, 32)}  backup.tar.gz"))
        texts.append(("path", f"see ~/work/{make(rng, string.ascii_lowercase, 8)}/src/components/"
                              f"{make(rng, string.ascii_lowercase, 6)}_view_controller_test.tsx"))
        texts.append(("url", f"https://github.com/org/repo/pull/{rng.randint(1, 9999)}/files?diff=split&w=1"
                             f"#diff-{make(rng, HEX, 40)}"))
        texts.append(("version", f"bumped to v{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}"
                                 f"-rc.{rng.randint(1, 9)}+build.{make(rng, HEX, 7)}"))
        pod = f"api-{make(rng, HEX, 10)}-{make(rng, string.ascii_lowercase + string.digits, 5)}"
        texts.append(("pod", f"kubectl logs {pod}"))
        texts.append(("prose", rng.choice([
            "I changed my password yesterday after the phishing mail", "the token ring network was slow",
            "password managers are worth it", "she forgot the PIN again", "my secret to good bread is time",
            "set max_tokens to 2048 for the summariser", "the key insight is caching", "pass the tests first",
            "rotate the API keys every quarter", "use a passphrase, not a password"])))
    return texts

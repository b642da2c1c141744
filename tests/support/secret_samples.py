"""A test set of secrets as people paste them into a chat, one or more per kind: what redaction must
catch (tests/test_redact.py, scripts/bench_redaction.py). The tokens are made here from a seeded
random generator in each vendor's published shape: none is real, and none sits in the repository
as a literal a scanner would flag."""

from __future__ import annotations

import base64
import random
import string

LOWER = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits


def make(alphabet: str, n: int, seed: str) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def samples() -> list[tuple[str, str, str]]:
    """(kind, sentence, secret): the sentence holds the secret; the redacted sentence must not."""
    pem_body = base64.b64encode(make(ALNUM, 300, "pem").encode()).decode()
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body[:64]}\n{pem_body[64:128]}\n-----END RSA PRIVATE KEY-----"
    jwt_head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    jwt_body = base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"Jo"}').decode().rstrip("=")
    jwt = f"{jwt_head}.{jwt_body}.{make(ALNUM, 43, 'jwt')}"
    tok = {
        "github-token": "ghp_" + make(ALNUM, 36, "gh"),
        "github-fine-grained": "github_pat_" + make(ALNUM + "_", 82, "ghpat"),
        "gitlab-token": "glpat-" + make(ALNUM, 20, "gl"),
        "aws-access-key": "AKIA" + make(string.ascii_uppercase + string.digits, 16, "aws"),
        "aws-secret-key": make(ALNUM + "/+", 40, "awss"),
        "slack-token": "xoxb-" + make(string.digits, 12, "sl1") + "-" + make(string.digits, 13, "sl2")
                       + "-" + make(ALNUM, 24, "sl3"),
        "slack-webhook": "https://hooks.slack.com/services/T" + make(ALNUM, 8, "w1") + "/B"
                         + make(ALNUM, 8, "w2") + "/" + make(ALNUM, 24, "w3"),
        "stripe": "sk_live_" + make(ALNUM, 24, "st"),
        "openai": "sk-proj-" + make(ALNUM + "_-", 48, "oa"),
        "openai-legacy": "sk-" + make(ALNUM, 20, "oal1") + "T3BlbkFJ" + make(ALNUM, 20, "oal2"),
        "anthropic": "sk-ant-api03-" + make(ALNUM + "_-", 93, "an"),
        "google-api-key": "AIza" + make(ALNUM + "_-", 35, "gg"),
        "jwt": jwt,
        "npm": "npm_" + make(ALNUM, 36, "npm"),
        "pypi": "pypi-AgEIcHlwaS5vcmc" + make(ALNUM + "_-", 80, "pypi"),
        "twilio": "SK" + make(LOWER, 32, "tw"),
        "sendgrid": "SG." + make(ALNUM + "_-", 22, "sg1") + "." + make(ALNUM + "_-", 43, "sg2"),
        "azure-storage": "AccountKey=" + make(ALNUM + "+/", 86, "az") + "==",
        "azure-ad-secret": make(ALNUM, 3, "aad1") + "8Q~" + make(ALNUM + "_~.-", 34, "aad2"),
        "discord": "M" + make(ALNUM, 23, "dc1") + "." + make(ALNUM, 6, "dc2") + "." + make(ALNUM, 27, "dc3"),
        "telegram": make(string.digits, 10, "tg1") + ":" + make(ALNUM + "_-", 35, "tg2"),
        "huggingface": "hf_" + make(string.ascii_letters, 34, "hf"),
        "mailchimp": make(LOWER, 32, "mc") + "-us14",
        "shopify": "shpat_" + make("0123456789abcdef", 32, "sh"),
        "digitalocean": "dop_v1_" + make("0123456789abcdef", 64, "do"),
        "square": "sq0csp-" + make(ALNUM, 43, "sq"),
        "password": "hunter2!x",
        "pin": "4821",
        "url-password": "Tr0ub4dor",
    }
    return [
        ("github-token", f"here is my github token {tok['github-token']} please keep it", tok["github-token"]),
        ("github-fine-grained", f"use {tok['github-fine-grained']} for the CI", tok["github-fine-grained"]),
        ("gitlab-token", f"GitLab PAT: {tok['gitlab-token']}", tok["gitlab-token"]),
        ("aws-access-key", f"AWS_ACCESS_KEY_ID={tok['aws-access-key']}", tok["aws-access-key"]),
        ("aws-secret-key", f'aws_secret_access_key = "{tok["aws-secret-key"]}"', tok["aws-secret-key"]),
        ("slack-token", f"the bot uses {tok['slack-token']}", tok["slack-token"]),
        ("slack-webhook", f"post to {tok['slack-webhook']} when done", tok["slack-webhook"]),
        ("stripe", f"stripe key {tok['stripe']}", tok["stripe"]),
        ("openai", f"my OpenAI key is {tok['openai']}", tok["openai"]),
        ("openai-legacy", f"old key {tok['openai-legacy']}", tok["openai-legacy"]),
        ("anthropic", f"ANTHROPIC_API_KEY={tok['anthropic']}", tok["anthropic"]),
        ("google-api-key", f"maps key {tok['google-api-key']}", tok["google-api-key"]),
        ("jwt", f"Authorization: Bearer {tok['jwt']}", tok["jwt"]),
        ("private-key", f"my deploy key:\n{pem}\nkeep it safe", pem_body[:64]),
        ("password", f"my password is {tok['password']}, don't forget", tok["password"]),
        ("pin", f"My PIN: {tok['pin']}.", tok["pin"]),
        ("url-password", f"the db is postgres://admin:{tok['url-password']}@db.internal:5432/app",
         tok["url-password"]),
        ("npm", f"npm token {tok['npm']}", tok["npm"]),
        ("pypi", f"twine password {tok['pypi']}", tok["pypi"]),
        ("twilio", f"twilio {tok['twilio']}", tok["twilio"]),
        ("sendgrid", f"SENDGRID_API_KEY={tok['sendgrid']}", tok["sendgrid"]),
        ("azure-storage", f"DefaultEndpointsProtocol=https;AccountName=x;{tok['azure-storage']};",
         tok["azure-storage"]),
        ("azure-ad-secret", f"client secret {tok['azure-ad-secret']}", tok["azure-ad-secret"]),
        ("discord", f"discord bot token {tok['discord']}", tok["discord"]),
        ("telegram", f"telegram bot {tok['telegram']}", tok["telegram"]),
        ("huggingface", f"HF_TOKEN={tok['huggingface']}", tok["huggingface"]),
        ("mailchimp", f"mailchimp {tok['mailchimp']}", tok["mailchimp"]),
        ("shopify", f"shopify admin {tok['shopify']}", tok["shopify"]),
        ("digitalocean", f"doctl auth {tok['digitalocean']}", tok["digitalocean"]),
        ("square", f"square secret {tok['square']}", tok["square"]),
    ]

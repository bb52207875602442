"""Secrets said in words (issue 31, point 6): each kind is redacted wherever memd writes, and
sentences that only mention a password, a PIN, a card or an id keep every word."""

from __future__ import annotations

import pytest

from memd.extract.prose_secrets import cn_id_valid, luhn
from memd.extract.redact import redact

SECRETS_IN_WORDS = [
    # (text, the secret, its kind)
    ("My password for the company system is SuperSecret123!", "SuperSecret123", "password"),
    ("the db password: hunter2", "hunter2", "password"),
    ("The wifi password is 'blue-ocean-77'.", "blue-ocean-77", "password"),
    ("my password is correcthorsebattery", "correcthorsebattery", "password"),
    ("My passphrase is: Tr0ub4dor&3", "Tr0ub4dor&3", "password"),
    ("the staging password was changed to Qw3rty!9 yesterday", "Qw3rty!9", "password"),
    ("PIN is 4821", "4821", "pin"),
    ("my pin is 90210, don't share it", "90210", "pin"),
    ("The PIN code for the door: 7731", "7731", "pin"),
    ("My social security number is 123-45-6789", "123-45-6789", "national_id"),
    ("SSN: 078051120 on the form", "078051120", "national_id"),
    ("his passport number is X12345678", "X12345678", "national_id"),
    ("card number is 4111 1111 1111 1111, exp 12/29", "4111 1111 1111 1111", "card_number"),
    ("pay with 5500-0000-0000-0004 please", "5500-0000-0000-0004", "card_number"),
    ("amex 378282246310005 on file", "378282246310005", "card_number"),
    ("the CVV is 737", "737", "card_number"),
    ("密码是 abc12345", "abc12345", "password"),
    ("我的邮箱密码为：Xy!2024pass", "Xy!2024pass", "password"),
    ("登录密码改成了 newPass#88", "newPass#88", "password"),
    ("我的身份证号是 11010519491231002X", "11010519491231002X", "national_id"),
    ("身份证：440308199901010012 已经登记", "440308199901010012", "national_id"),
    ("银行卡号是 6222 0212 3456 7890 128", "6222 0212 3456 7890 128", "card_number"),
    ("psql postgres://app:S3cretPw@db.internal:5432/shop", "S3cretPw", "password"),
    ("DB_PASSWORD=s3cret!x\nDB_USER=app", "s3cret!x", "password"),
    ("jdbc:mysql://db/shop?user=root&password=hunter22", "hunter22", "password"),
    ("mysql -uroot -pSup3rS3cret shop < dump.sql", "Sup3rS3cret", "password"),
    ("Server=db;User Id=sa;Password=Secr3t;", "Secr3t", "password"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS_IN_WORDS)
def test_secrets_in_words_are_redacted(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert f"[REDACTED:{kind}]" in out, out
    assert redact(out) == out  # idempotent


NOT_SECRETS = [
    "reset the password flow",
    "password hashing uses argon2",
    "the password field is required",
    "The password is required.",
    "The password is hashed with bcrypt before it is stored.",
    "the password is stored in the vault, not in the repo",
    "The password must be at least 12 characters long.",
    "the password is 16 characters long",
    "Password reset emails go out within 5 minutes.",
    "the password for the admin account is in 1Password",
    "the PIN field is required",
    "the PIN is 4 digits",
    "pin the version: 3.12.1",
    "Pin dependencies to 2024.1 in requirements",
    "a card component renders the user's avatar",
    "the card number input masks all but the last 4 digits",
    "the credit card form validates with Luhn",
    "SSN validation lives in validators.py",
    "the social security field is optional",
    "身份证号字段是必填的",
    "密码是必填项，长度至少 8 位。",
    "修改密码的接口在 auth/views.py",
    "把密码哈希改成 argon2",
    "我们用银行卡支付的那个页面要重做。",
    "bumped ruff to 0.8.4 and python to 3.12.7",
    "release 2026.11.30 is tagged",
    "call me at 555-201-7788 or +1 415 555 0132",
    "我的手机号是 13812345678",
    "the order 2026-11-30 and 2026/12/01 both shipped",
    "meeting on 12-05-2026 at 10:30",
    "request id 0b3c5e0e-6f1c-4d8a-9a57-1f2b3c4d5e6f failed",
    "commit 15b63a3c6be9f62530bdb5d47ccfcc001f8a7837 reverted it",
    "timestamp 1764400000000 in ms",
    "order number 1234567890123456 shipped",
    "port 5432 and pid 48213 on host 10.0.0.12",
    "ticket 123-45-678 is a duplicate",
    "the value 000-12-3456 is not a real SSN",
    "ID card 11010519491231002 is short a digit",
    "tracking 110105194912310021 has a bad check digit",
    "the PIN must be changed after 3 attempts",
    "password: Optional[str] = None",
    "the password is the same as staging",
    "set the password via the PASSWORD env var",
    "psql postgres://app@db.internal:5432/shop",
    "https://example.com/search?q=password&page=2",
    "mysql -uroot -p shop",
    "memd ui  # opens http://127.0.0.1:PORT/?token=... in your browser",
    "``mysql -p…`` and ``?password=`` in URLs",
    "`?password=` in URLs (`memd/extract/prose_secrets.py`) is kept",
    "return f(password=password)",
    'the example says "my password for X is …"',
    "if the password is empty we return 400",
    "the password is then compared with hmac.compare_digest",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_mentions_without_a_value_are_kept(text: str) -> None:
    assert redact(text) == text


def test_checks() -> None:
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    assert cn_id_valid("11010519491231002X") and not cn_id_valid("110105194912310021")

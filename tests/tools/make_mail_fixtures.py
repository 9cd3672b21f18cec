#!/usr/bin/env python3
"""Writes tests/fixtures/mail/*.eml. Run from the repository root. Kept so the fixtures can be regenerated;
the .eml files themselves are the test input."""
import os

OUT = "tests/fixtures/mail"
os.makedirs(OUT, exist_ok=True)

RECEIVED = (
    "Received: from mail.example.com (mail.example.com [198.51.100.25])\n"
    "\tby mx.agentdir.example (Postfix) with ESMTPS id 4Xyz1234\n"
    "\tfor <verify@agentdir.example>; Tue, 3 Nov 2026 10:15:02 +0000 (UTC)\n"
)
DKIM_SIG = (
    "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.com; s=sel1;\n"
    "\tt=1793700900; h=from:to:subject:date:message-id;\n"
    "\tbh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;\n"
    "\tb=AbC/+d9eFgHiJkLmNoPqRsTuVwXyZ0123456789abcdefghijklmnopqrstuvwxyzABCDEF\n"
)
COMMON_TAIL = (
    "To: verify@agentdir.example\n"
    "Date: Tue, 3 Nov 2026 10:15:00 +0000\n"
    "MIME-Version: 1.0\n"
)
PLAIN_BODY = (
    "Content-Type: text/plain; charset=utf-8\n"
    "Content-Transfer-Encoding: 7bit\n"
    "\n"
    "Please verify my mailbox.\n"
)
SUBJECT = "Subject: agentdir verify K7Q2-M9XD-4TPA\n"


def write(name, text, crlf=True):
    data = text.replace("\n", "\r\n") if crlf else text
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data.encode("utf-8"))


def simple(name, from_, ar_lines, subject=SUBJECT, extra="", crlf=True, mid=None):
    mid = mid or name.replace(".eml", "")
    write(
        name,
        "".join(ar_lines)
        + RECEIVED
        + DKIM_SIG
        + f"From: {from_}\n"
        + COMMON_TAIL
        + subject
        + f"Message-ID: <{mid}@mail.example.com>\n"
        + extra
        + PLAIN_BODY,
        crlf,
    )


ALICE = "Alice Example <Alice@Example.COM>"

# Genuine: OpenDKIM-style header, DKIM passes for the From domain. Gmail's own header from an
# earlier hop (another authserv-id) sits further down and must not matter.
simple(
    "genuine_dkim_pass.eml",
    ALICE,
    [
        "Authentication-Results: mx.agentdir.example;\n"
        "\tdkim=pass (2048-bit key; unprotected) header.d=example.com header.i=@example.com\n"
        "\theader.a=rsa-sha256 header.s=sel1 header.b=AbC/+d9e;\n"
        "\tspf=softfail (domain of transitioning bounce@mailer.example.net does not designate\n"
        "\t198.51.100.25 as permitted sender) smtp.mailfrom=bounce@mailer.example.net\n"
        "\tsmtp.helo=mail.example.com\n",
    ],
    extra=(
        "ARC-Authentication-Results: i=1; mx.google.com; dkim=pass header.i=@example.com\n"
        "Authentication-Results: mx.google.com;\n"
        "       dkim=fail header.i=@example.com header.s=sel1 header.b=AbC/+d9e;\n"
        "       spf=fail smtp.mailfrom=alice@example.com\n"
    ),
)

# Genuine without a DKIM signature: SPF of the envelope sender (same domain) passes.
simple(
    "genuine_spf_pass.eml",
    "bob@example.org",
    [
        "Authentication-Results: mx.agentdir.example; dkim=none;\n"
        " spf=pass (mx.agentdir.example: domain of bob@example.org designates 198.51.100.25 as\n"
        " permitted sender) smtp.mailfrom=bob@example.org\n",
    ],
)

# A pass, but stamped by some other host: ignored.
simple(
    "wrong_authserv_id.eml",
    ALICE,
    [
        "Authentication-Results: mx.other.example; dkim=pass header.d=example.com;\n"
        "\tspf=pass smtp.mailfrom=alice@example.com\n",
    ],
)

simple(
    "dkim_fail.eml",
    ALICE,
    [
        "Authentication-Results: mx.agentdir.example;\n"
        "\tdkim=fail reason=\"signature verification failed\" (2048-bit key)\n"
        "\theader.d=example.com header.i=@example.com header.b=AbC/+d9e;\n"
        "\tspf=none smtp.mailfrom=example.com\n",
    ],
)

simple(
    "spf_fail.eml",
    ALICE,
    [
        "Authentication-Results: mx.agentdir.example; dkim=none (no signatures found);\n"
        "\tspf=fail (domain of alice@example.com does not designate 203.0.113.7 as permitted\n"
        "\tsender) smtp.mailfrom=alice@example.com\n",
    ],
)

# DKIM and SPF pass, but for the sender's own domain, not the From domain.
simple(
    "dkim_other_domain.eml",
    ALICE,
    [
        "Authentication-Results: mx.agentdir.example;\n"
        "\tdkim=pass header.d=evil.example header.i=@evil.example header.s=s1;\n"
        "\tspf=pass smtp.mailfrom=mallory@evil.example\n",
    ],
)

# The display name pretends to be Alice; the mailbox is Mallory's (whose DKIM really passes).
simple(
    "from_display_name_trick.eml",
    '"alice@example.com" <mallory@evil.example>',
    [
        "Authentication-Results: mx.agentdir.example; dkim=pass header.d=evil.example;\n"
        "\tspf=pass smtp.mailfrom=mallory@evil.example\n",
    ],
)

# Folded Subject and A-R, header names in unusual case, A-R last among the headers.
write(
    "folded_subject.eml",
    RECEIVED
    + "from: Alice Example\n <alice@example.com>\n"
    + "SUBJECT: agentdir\n verify\n\tK7Q2-M9XD-4TPA\n"
    + "to: verify@agentdir.example\n"
    + "message-id: <folded@mail.example.com>\n"
    + "mime-version: 1.0\n"
    + "AUTHENTICATION-RESULTS: mx.agentdir.example;\n"
    + "  dkim=pass\n"
    + "  header.d=example.com\n"
    + PLAIN_BODY,
)

# Encoded words: B and Q, UTF-8, the code split across two adjacent encoded words.
write(
    "encoded_subject.eml",
    "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\n"
    + RECEIVED
    + "From: =?UTF-8?Q?Alice_=C3=89xample?= <alice@example.com>\n"
    + "Subject: =?UTF-8?B?6aqM6K+BIOmCrueusSDigJQgYWdlbnRkaXIgdmVyaWZ5IEs3UTIt?=\n"
    + " =?utf-8?q?M9XD-4TPA_=E2=9C=93?=\n"
    + COMMON_TAIL
    + "Message-ID: <encoded@mail.example.com>\n"
    + PLAIN_BODY,
)

simple(
    "lf_only.eml",
    ALICE,
    [
        "Authentication-Results: mx.agentdir.example;\n"
        "\tdkim=pass header.d=example.com\n",
    ],
    subject="Subject: agentdir\n verify K7Q2-M9XD-4TPA\n",
    crlf=False,
)

# multipart/mixed with alternative text+html, an attachment, and a forwarded message whose own
# (passing) A-R header must not be mistaken for the top-level one.
write(
    "multipart.eml",
    "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\n"
    + RECEIVED
    + "From: Alice Example <alice@example.com>\n"
    + COMMON_TAIL
    + SUBJECT
    + "Message-ID: <multipart@mail.example.com>\n"
    + 'Content-Type: multipart/mixed; boundary="outer-b"\n'
    + "\n"
    + "This is a multi-part message in MIME format.\n"
    + "--outer-b\n"
    + 'Content-Type: multipart/alternative; boundary="inner-b"\n'
    + "\n"
    + "--inner-b\n"
    + "Content-Type: text/plain; charset=utf-8\n"
    + "Content-Transfer-Encoding: quoted-printable\n"
    + "\n"
    + "Please verify my mailbox =E2=80=94 thanks.\n"
    + "--inner-b\n"
    + "Content-Type: text/html; charset=utf-8\n"
    + "\n"
    + "<p>Please verify my mailbox.</p>\n"
    + "--inner-b--\n"
    + "--outer-b\n"
    + 'Content-Type: application/octet-stream; name="notes.bin"\n'
    + "Content-Transfer-Encoding: base64\n"
    + 'Content-Disposition: attachment; filename="notes.bin"\n'
    + "\n"
    + "AAECAwQFBgcICQoLDA0ODw==\n"
    + "--outer-b\n"
    + "Content-Type: message/rfc822\n"
    + "\n"
    + "Authentication-Results: mx.agentdir.example; dkim=pass header.d=forwarded.example\n"
    + "From: someone@forwarded.example\n"
    + "Subject: an old message\n"
    + "\n"
    + "Forwarded body.\n"
    + "--outer-b--\n",
)

# The top-level header fails; a pass appears only inside a MIME part.
write(
    "ar_in_body.eml",
    "Authentication-Results: mx.agentdir.example; dkim=fail header.d=example.com;\n"
    + " spf=softfail smtp.mailfrom=alice@example.com\n"
    + "From: alice@example.com\n"
    + COMMON_TAIL
    + SUBJECT
    + 'Content-Type: multipart/mixed; boundary="b1"\n'
    + "\n"
    + "--b1\n"
    + "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\n"
    + "Content-Type: text/plain\n"
    + "\n"
    + "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\n"
    + "--b1--\n",
)

# Comments (nested, holding ; and =), quoted strings, odd case, method version, CFWS around '.'.
simple(
    "ar_comments_quoted.eml",
    ALICE,
    [
        "Authentication-Results: (added by our MTA) MX.AgentDir.Example (a comment; with=signs\n"
        " (nested ; one)) 1;\n"
        "\tDKIM/1 (verifier) = Pass (good; sig=yes) reason=\"sig ok; \\\"really\\\" (yes)\"\n"
        "\tHEADER.D=(domain follows) \"Example.COM\" header . i = \"@example.com\";\n"
        "\tspf=NEUTRAL smtp.mailfrom=\"weird local\"@example.com\n",
    ],
)

simple("missing_ar.eml", ALICE, [])

# Two headers with our id, as when the DKIM milter and the SPF policy daemon each stamp one:
# DKIM found nothing, SPF passed.
simple(
    "multiple_ours.eml",
    "carol@example.net",
    [
        "Authentication-Results: mx.agentdir.example; dkim=none\n",
        "Authentication-Results: mx.agentdir.example; spf=pass smtp.mailfrom=example.net\n",
    ],
)

# Another host says pass, our own MTA says fail: only ours counts.
simple(
    "other_host_pass_ours_fail.eml",
    ALICE,
    [
        "Authentication-Results: mx.agentdir.example; dkim=fail header.d=example.com;\n"
        "\tspf=fail smtp.mailfrom=alice@example.com\n",
        "Authentication-Results: relay.example.net; dkim=pass header.d=example.com;\n"
        "\tspf=pass smtp.mailfrom=alice@example.com\n",
    ],
)

write(
    "multiple_from.eml",
    "Authentication-Results: mx.agentdir.example; dkim=pass header.d=evil.example\n"
    + "From: mallory@evil.example\n"
    + "From: alice@example.com\n"
    + COMMON_TAIL
    + SUBJECT
    + PLAIN_BODY,
)

"""DKIM-signs one message the way a sender's outbound server does (dkimpy, Debian's python3-dkim).

usage: /usr/bin/python3 dkim_sign.py PRIVATE_KEY_FILE DOMAIN SELECTOR < message > signed
"""

import sys

import dkim

key_file, domain, selector = sys.argv[1:4]
message = sys.stdin.buffer.read()
with open(key_file, "rb") as f:
    key = f.read()
signature = dkim.sign(
    message,
    selector.encode(),
    domain.encode(),
    key,
    include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
)
sys.stdout.buffer.write(signature + message)

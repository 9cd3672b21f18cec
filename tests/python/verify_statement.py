"""Verifies a signed statement with JOSE implementations independent of the server (tests/endpoints.rs).

    python3 verify_statement.py BASE_URL HANDLE [STATEMENT_FILE]

Fetches GET /api/agents/HANDLE/statement (or reads the statement from STATEMENT_FILE: one got
earlier, or through MCP), /.well-known/jwks.json and the card, then checks:
  - joserfc verifies the JWS (flattened JSON serialisation, EdDSA) against the JWKS by its kid;
  - `cryptography`'s Ed25519 verifies the same signature over `protected.payload` by hand;
  - the payload is canonical JSON (RFC 8785) of agent, evidence, iss, sub, iat, exp, and agent and
    evidence equal the card's;
  - one changed byte in the payload, the protected header or the signature fails both.
Prints `ok <sub>` or the first failure, and exits non-zero on failure.
"""

import base64
import warnings
import json
import sys
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

# joserfc warns that RFC 9864 prefers the fully specified "Ed25519" to "EdDSA"; the directory signs
# with "EdDSA" (RFC 8037), which every JOSE library still reads.
warnings.filterwarnings("ignore", message="EdDSA is deprecated")


def get(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def b64d(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def canonical(value) -> bytes:
    # RFC 8785 for what a statement holds (strings, integers, booleans, null, objects, arrays):
    # keys sorted, no whitespace, non-ASCII as is.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def joserfc_verifies(statement: dict, keys: KeySet) -> bool:
    try:
        jws.deserialize_json(statement, keys, algorithms=["EdDSA"])
        return True
    except (JoseError, ValueError):
        return False


def cryptography_verifies(statement: dict, jwks: dict) -> bool:
    header = json.loads(b64d(statement["protected"]))
    key = next((k for k in jwks["keys"] if k["kid"] == header.get("kid")), None)
    if key is None or header.get("alg") != "EdDSA":
        return False
    public = Ed25519PublicKey.from_public_bytes(b64d(key["x"]))
    try:
        public.verify(b64d(statement["signature"]), f"{statement['protected']}.{statement['payload']}".encode())
        return True
    except InvalidSignature:
        return False


def flip_one_byte(field: str, statement: dict) -> dict:
    raw = bytearray(b64d(statement[field]))
    raw[len(raw) // 2] ^= 0x01
    return {**statement, field: b64e(bytes(raw))}


def main() -> int:
    base, handle = sys.argv[1].rstrip("/"), sys.argv[2]
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            statement = json.load(f)
    else:
        statement = get(f"{base}/api/agents/{handle}/statement")
    jwks = get(f"{base}/.well-known/jwks.json")
    card = get(f"{base}/api/agents/{handle}")
    keys = KeySet.import_key_set(jwks)

    if not joserfc_verifies(statement, keys):
        print("joserfc does not verify the statement")
        return 1
    if not cryptography_verifies(statement, jwks):
        print("cryptography does not verify the statement")
        return 1
    payload_bytes = b64d(statement["payload"])
    claims = json.loads(payload_bytes)
    if canonical(claims) != payload_bytes:
        print("the payload is not canonical JSON")
        return 1
    if sorted(claims) != ["agent", "evidence", "exp", "iat", "iss", "sub"]:
        print(f"unexpected claims: {sorted(claims)}")
        return 1
    if claims["agent"] != card["agent"] or claims["evidence"] != card["evidence"]:
        print("agent or evidence differ from the card")
        return 1
    if claims["iss"] != base or claims["exp"] - claims["iat"] != 7 * 86400:
        print(f"iss {claims['iss']!r} or exp-iat {claims['exp'] - claims['iat']} wrong")
        return 1
    for field in ("payload", "protected", "signature"):
        tampered = flip_one_byte(field, statement)
        if joserfc_verifies(tampered, keys) or cryptography_verifies(tampered, jwks):
            print(f"a changed byte in {field} still verifies")
            return 1
    print(f"ok {claims['sub']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Verifies a signed statement with JOSE implementations independent of the server (tests/endpoints.rs).

    python3 verify_statement.py BASE_URL HANDLE [STATEMENT_FILE]
    python3 verify_statement.py --fully-specified

Fetches GET /api/agents/HANDLE/statement (or reads the statement from STATEMENT_FILE: one got
earlier, or through MCP), /.well-known/jwks.json and the card, then checks:
  - the four JOSE libraries people use verify the JWS against the JWKS by its kid: joserfc and
    jwcrypto (flattened JSON serialisation as served), PyJWT (the same three parts joined as the
    compact serialisation, which is all PyJWT reads) and jose in Node (tests/node);
  - `cryptography`'s Ed25519 verifies the same signature over `protected.payload` by hand;
  - the payload is canonical JSON (RFC 8785) of agent, evidence, iss, sub, iat, exp, and agent and
    evidence equal the card's;
  - one changed byte in the payload, the protected header or the signature fails every one.
Prints `ok <sub>` or the first failure, and exits non-zero on failure.

With --fully-specified it signs a throwaway JWS with RFC 9864's `"alg": "Ed25519"` and prints
`refused: <libraries>` (those that cannot verify it) or `refused:` when all four can: the
directory signs with `EdDSA` until all four read `Ed25519` (src/domain/statement.rs).
"""

import base64
import json
import os
import subprocess
import sys
import urllib.request
import warnings

import jwt
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from jwcrypto import jwk as jwcrypto_jwk
from jwcrypto import jws as jwcrypto_jws

# joserfc warns that RFC 9864 deprecates "EdDSA" for the fully specified "Ed25519"; the directory
# still signs with "EdDSA" because PyJWT cannot read "Ed25519" (see --fully-specified).
warnings.filterwarnings("ignore", message="EdDSA is deprecated")

NODE_VERIFIER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "node", "verify_statement.mjs")


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


def key_of(statement: dict, jwks: dict) -> dict | None:
    header = json.loads(b64d(statement["protected"]))
    return next((k for k in jwks["keys"] if k["kid"] == header.get("kid")), None)


def alg_of(statement: dict) -> str:
    return json.loads(b64d(statement["protected"])).get("alg", "")


def joserfc_verifies(statement: dict, jwks: dict) -> bool:
    try:
        jws.deserialize_json(statement, KeySet.import_key_set(jwks), algorithms=[alg_of(statement)])
        return True
    except (JoseError, ValueError):
        return False


def jwcrypto_verifies(statement: dict, jwks: dict) -> bool:
    try:
        token = jwcrypto_jws.JWS()
        token.deserialize(json.dumps(statement))
        token.verify(jwcrypto_jwk.JWKSet.from_json(json.dumps(jwks)))
        return True
    except Exception:  # jwcrypto raises several unrelated types for a bad signature or header
        return False


def pyjwt_verifies(statement: dict, jwks: dict) -> bool:
    # PyJWT reads the compact serialisation only: the same three parts joined by dots.
    compact = f"{statement['protected']}.{statement['payload']}.{statement['signature']}"
    key = key_of(statement, jwks)
    if key is None:
        return False
    try:
        jwt.PyJWS().decode_complete(compact, key=jwt.PyJWK(key), algorithms=[alg_of(statement)])
        return True
    except (jwt.PyJWTError, ValueError):
        return False


def jose_verifies(statement: dict, jwks: dict) -> bool:
    asked = {"statement": statement, "jwks": jwks, "algorithms": [alg_of(statement)]}
    run = subprocess.run(["node", NODE_VERIFIER], input=json.dumps(asked), capture_output=True, text=True)
    if run.returncode not in (0, 1):
        raise SystemExit(f"node could not run {NODE_VERIFIER} (npm ci --prefix tests/node): {run.stderr}")
    return run.returncode == 0


LIBRARIES = {"joserfc": joserfc_verifies, "jwcrypto": jwcrypto_verifies, "PyJWT": pyjwt_verifies, "jose": jose_verifies}


def cryptography_verifies(statement: dict, jwks: dict) -> bool:
    key = key_of(statement, jwks)
    if key is None or alg_of(statement) != "EdDSA":
        return False
    public = Ed25519PublicKey.from_public_bytes(b64d(key["x"]))
    try:
        public.verify(b64d(statement["signature"]), f"{statement['protected']}.{statement['payload']}".encode())
        return True
    except InvalidSignature:
        return False


def fully_specified() -> int:
    """Which libraries refuse a statement signed with RFC 9864's "Ed25519"."""
    secret = Ed25519PrivateKey.generate()
    x = b64e(secret.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    jwks = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "fully-specified", "alg": "Ed25519", "use": "sig"}]}
    protected = b64e(json.dumps({"alg": "Ed25519", "kid": "fully-specified", "typ": "JOSE+JSON"}).encode())
    payload = b64e(b'{"sub":"agt_test"}')
    statement = {"payload": payload, "protected": protected, "signature": b64e(secret.sign(f"{protected}.{payload}".encode()))}
    refused = [name for name, verifies in LIBRARIES.items() if not verifies(statement, jwks)]
    print("refused: " + " ".join(refused))
    return 0


def flip_one_byte(field: str, statement: dict) -> dict:
    raw = bytearray(b64d(statement[field]))
    raw[len(raw) // 2] ^= 0x01
    return {**statement, field: b64e(bytes(raw))}


def main() -> int:
    if sys.argv[1:] == ["--fully-specified"]:
        return fully_specified()
    base, handle = sys.argv[1].rstrip("/"), sys.argv[2]
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            statement = json.load(f)
    else:
        statement = get(f"{base}/api/agents/{handle}/statement")
    jwks = get(f"{base}/.well-known/jwks.json")
    card = get(f"{base}/api/agents/{handle}")

    for name, verifies in LIBRARIES.items():
        if not verifies(statement, jwks):
            print(f"{name} does not verify the statement")
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
        for name, verifies in [*LIBRARIES.items(), ("cryptography", cryptography_verifies)]:
            if verifies(tampered, jwks):
                print(f"a changed byte in {field} still verifies with {name}")
                return 1
    print(f"ok {claims['sub']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

// Verifies a signed statement with jose (panva/jose), the JOSE library of Node, for
// tests/python/verify_statement.py. Reads {"statement", "jwks", "algorithms"} as JSON on stdin
// and exits 0 when the flattened JWS verifies against the JWKS (the key chosen by its kid) with
// one of `algorithms`, 1 when it does not (the reason on stderr).
import { createLocalJWKSet, flattenedVerify } from 'jose';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { statement, jwks, algorithms } = JSON.parse(input);
try {
  await flattenedVerify(statement, createLocalJWKSet(jwks), { algorithms });
  process.exit(0);
} catch (e) {
  console.error(e.code ?? e.message);
  process.exit(1);
}

//! Signed statements: what the directory says about an agent, signed so that anyone can check
//! later, anywhere, that the directory said it. A JWS (RFC 7515, flattened JSON serialisation,
//! EdDSA over Ed25519) whose payload is RFC 8785 canonical JSON.

use schemars::JsonSchema;
use serde::Serialize;

use super::notice::Notice;

/// A statement verifies for this long after it was issued: one about an agent that was later
/// downgraded or deleted must not verify forever.
pub const STATEMENT_DAYS: i64 = 7;
/// The JWS algorithm: `EdDSA` (RFC 8037) over Ed25519. RFC 9864 deprecates it for the fully
/// specified `Ed25519`, which the directory will sign with once the JOSE libraries people verify
/// with all read it: joserfc, jwcrypto and jose (Node) do, PyJWT 2.15 (the newest) has no
/// algorithm of that name and refuses such a statement, while all four read `EdDSA`.
/// tests/endpoints.rs asks the pinned four again on every run and fails once all read `Ed25519`.
pub const ALG: &str = "EdDSA";
/// The `typ` of the protected header: the media type RFC 7515 (§9.2.1) registers for a JWS in
/// JSON serialisation, as this one is.
pub const TYP: &str = "JOSE+JSON";

/// `GET /api/agents/{handle}/statement`: a JWS in flattened JSON serialisation. `notice` is an
/// extra member, which JWS readers ignore (RFC 7515 §7.2.1).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SignedStatement {
    pub notice: Notice,
    /// base64url of the RFC 8785 canonical JSON of `{"agent", "evidence", "iss", "sub", "iat",
    /// "exp"}`: the card's `agent` and `evidence` objects as the card shows them, the
    /// directory's base URL, the agent's stable public id (the same across renames, never
    /// reused), and the issue and expiry times in seconds since the epoch.
    pub payload: String,
    /// base64url of the protected header `{"alg": "EdDSA", "kid", "typ": "JOSE+JSON"}`; `kid` names a key
    /// of /.well-known/jwks.json.
    pub protected: String,
    /// base64url of the Ed25519 signature over `protected.payload`.
    pub signature: String,
}

/// `GET /.well-known/jwks.json`: the directory's public keys, current and earlier ones (a
/// statement signed before a rotation still verifies until it expires).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

/// One Ed25519 public key (RFC 8037).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Jwk {
    /// Always `OKP`.
    pub kty: &'static str,
    /// Always `Ed25519`.
    pub crv: &'static str,
    /// The public key, base64url.
    pub x: String,
    /// The RFC 7638 thumbprint of the key.
    pub kid: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    pub use_: &'static str,
    /// Always `EdDSA`.
    pub alg: &'static str,
}

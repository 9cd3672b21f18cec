//! API keys: `cq_<key id>_<secret>`. Only an argon2id hash of the secret is stored. A key is
//! looked up by its id and verified with argon2 once; the verified key is then remembered in
//! memory (as a SHA-256 digest) so later requests skip the slow hash. Rotation changes the key
//! id, so a rotated key fails at once, cached or not, in this process or any other.

use std::collections::HashMap;
use std::sync::Mutex;

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

use super::tokens::{self, API_KEY};
use crate::error::{Error, Result};

/// Bound on remembered keys; past it the cache starts over (a miss only costs one argon2 run).
const CACHE_MAX: usize = 100_000;

pub struct NewKey {
    pub key: String,
    pub key_id: String,
    secret: String,
    pub hash: String,
}

/// Generates a key and its stored hash (argon2id: a key must survive a leaked database).
pub fn generate() -> Result<NewKey> {
    let issued = API_KEY.issue();
    let hash = Argon2::default()
        .hash_password(issued.secret.as_bytes())
        .map_err(|e| {
            tracing::error!(error = %e, "argon2 hashing failed");
            Error::Internal
        })?
        .to_string();
    Ok(NewKey { key: issued.full, key_id: issued.id, secret: issued.secret, hash })
}

/// Splits a presented key into key id and secret, or refuses it as malformed.
pub fn parse(key: &str) -> Result<(&str, &str)> {
    API_KEY.parse(key).ok_or(Error::Unauthorized)
}

fn digest(secret: &str) -> [u8; 32] {
    tokens::digest(secret)
}

/// Verified keys, by key id.
#[derive(Default)]
pub struct KeyCache {
    verified: Mutex<HashMap<String, [u8; 32]>>,
}

impl KeyCache {
    /// Whether `secret` matches `stored_hash` (one argon2 run); a match is remembered, so
    /// `is_known` answers for this key from then on.
    pub fn verify(&self, key_id: &str, secret: &str, stored_hash: &str) -> bool {
        let ok = Argon2::default().verify_password(secret.as_bytes(), stored_hash).is_ok();
        if ok {
            self.remember(key_id, secret);
        }
        ok
    }

    /// Remembers a key this process issued, once it is stored: its first use costs no check.
    pub fn remember_issued(&self, key: &NewKey) {
        self.remember(&key.key_id, &key.secret);
    }

    fn remember(&self, key_id: &str, secret: &str) {
        let mut map = self.lock();
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(key_id.to_owned(), digest(secret));
    }

    /// Whether this key was already verified (no argon2 needed).
    pub fn is_known(&self, key_id: &str, secret: &str) -> bool {
        self.lock().get(key_id).is_some_and(|known| tokens::matches(secret, known))
    }

    pub fn forget(&self, key_id: &str) {
        self.lock().remove(key_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, [u8; 32]>> {
        self.verified.lock().unwrap_or_else(|e| e.into_inner())
    }
}

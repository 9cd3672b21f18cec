//! The directory's signing keys: Ed25519 keys in one file of the primary's data dir, never in
//! the database (so never in the replicated SQLite file), never logged.
//!
//! The file is created with mode 0600 on the first start of a primary. `agentdir admin
//! rotate-signing-key` appends a new key, which signs from then on; the earlier public keys stay
//! listed in the JWKS so statements signed with them verify until they expire. A running server
//! notices a rotation by the file's modification time. `agentdir admin backup` copies the file
//! beside the database copy; the failover runbook (docs/replicas.md) restores it.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::{Signer as _, SigningKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::statement::{ALG, Jwk, Jwks, TYP};

/// The key file in the data dir.
pub const KEYS_FILE: &str = "signing-keys.json";
/// How often a running server looks at the file's modification time for a rotation.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

#[derive(Serialize, Deserialize)]
struct StoredKey {
    kid: String,
    /// Unix milliseconds.
    created_at: i64,
    /// The 32-byte Ed25519 secret key, base64url.
    d: String,
}

#[derive(Serialize, Deserialize, Default)]
struct KeyFile {
    /// Oldest first; the last one signs.
    keys: Vec<StoredKey>,
}

/// The keys as loaded: the current signing key and every public key.
struct KeyRing {
    current: SigningKey,
    current_kid: String,
    jwks: Jwks,
}

impl KeyRing {
    fn from_file(file: &KeyFile) -> anyhow::Result<KeyRing> {
        let mut jwks = Jwks { keys: Vec::new() };
        let mut current = None;
        for stored in &file.keys {
            let key = decode_secret(&stored.d)?;
            let jwk = public_jwk(&key);
            anyhow::ensure!(jwk.kid == stored.kid, "key {} does not match its kid", stored.kid);
            jwks.keys.push(jwk);
            current = Some((key, stored.kid.clone()));
        }
        let (current, current_kid) = current.context("the key file holds no key")?;
        // Newest first: the key that signs now is the first a reader finds.
        jwks.keys.reverse();
        Ok(KeyRing { current, current_kid, jwks })
    }
}

fn decode_secret(d: &str) -> anyhow::Result<SigningKey> {
    let bytes = B64.decode(d).context("a signing key is not base64url")?;
    let secret: [u8; 32] = bytes.as_slice().try_into().context("a signing key is not 32 bytes")?;
    Ok(SigningKey::from_bytes(&secret))
}

fn public_x(key: &SigningKey) -> String {
    B64.encode(key.verifying_key().as_bytes())
}

/// The RFC 7638 thumbprint of an Ed25519 public key: SHA-256 over its required members in
/// lexicographic order, without whitespace.
fn thumbprint(x: &str) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    B64.encode(Sha256::digest(canonical.as_bytes()))
}

fn public_jwk(key: &SigningKey) -> Jwk {
    let x = public_x(key);
    Jwk { kty: "OKP", crv: "Ed25519", kid: thumbprint(&x), x, use_: "sig", alg: ALG }
}

fn new_key() -> StoredKey {
    let secret: [u8; 32] = rand::random();
    let key = SigningKey::from_bytes(&secret);
    StoredKey { kid: thumbprint(&public_x(&key)), created_at: crate::time::now_ms(), d: B64.encode(secret) }
}

fn path_in(data_dir: &Path) -> PathBuf {
    data_dir.join(KEYS_FILE)
}

fn read_file(path: &Path) -> anyhow::Result<KeyFile> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("{} is not a signing key file", path.display()))
}

/// Writes the file whole, readable by its owner only, and renames it into place so a reader
/// never sees half of it.
fn write_file(path: &Path, file: &KeyFile) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let body = serde_json::to_vec_pretty(file)?;
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(&body)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Creates the key file with one key unless it exists. True when it was created.
pub fn ensure(data_dir: &Path) -> anyhow::Result<bool> {
    let path = path_in(data_dir);
    if path.exists() {
        return Ok(false);
    }
    write_file(&path, &KeyFile { keys: vec![new_key()] })?;
    Ok(true)
}

/// Adds a new key that signs from now on; the earlier ones stay listed. Returns the new kid.
pub fn rotate(data_dir: &Path) -> anyhow::Result<String> {
    let path = path_in(data_dir);
    let mut file = if path.exists() { read_file(&path)? } else { KeyFile::default() };
    let key = new_key();
    let kid = key.kid.clone();
    file.keys.push(key);
    write_file(&path, &file)?;
    Ok(kid)
}

/// Where `admin backup` puts the keys beside a database copy at `db_copy`.
pub fn backup_path(db_copy: &Path) -> PathBuf {
    let mut name = db_copy.as_os_str().to_owned();
    name.push(".");
    name.push(KEYS_FILE);
    PathBuf::from(name)
}

/// Copies the key file to `dest` (mode 0600), for a backup. False when there is none.
pub fn copy_to(data_dir: &Path, dest: &Path) -> anyhow::Result<bool> {
    let path = path_in(data_dir);
    if !path.exists() {
        return Ok(false);
    }
    write_file(dest, &read_file(&path)?)?;
    Ok(true)
}

/// The primary's signer: the key ring, reloaded when the file changes.
pub struct Signer {
    path: PathBuf,
    state: RwLock<Loaded>,
}

struct Loaded {
    ring: KeyRing,
    modified: Option<SystemTime>,
    checked: Instant,
}

impl Signer {
    /// Opens the key file of `data_dir`, creating it (with a first key) if there is none.
    pub fn open(data_dir: &Path) -> anyhow::Result<Signer> {
        if ensure(data_dir)? {
            tracing::info!(file = KEYS_FILE, "created the statement signing key");
        }
        let path = path_in(data_dir);
        let loaded = load(&path)?;
        Ok(Signer { path, state: RwLock::new(loaded) })
    }

    /// Signs `payload` as a flattened JWS: (protected, payload, signature), each base64url.
    pub fn sign(&self, payload: &[u8]) -> (String, String, String) {
        self.reload_if_rotated();
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let header = serde_json::json!({ "alg": ALG, "kid": state.ring.current_kid, "typ": TYP });
        let protected = B64.encode(serde_json::to_vec(&header).unwrap_or_default());
        let payload = B64.encode(payload);
        let signature = state.ring.current.sign(format!("{protected}.{payload}").as_bytes());
        (protected, payload, B64.encode(signature.to_bytes()))
    }

    pub fn jwks(&self) -> Jwks {
        self.reload_if_rotated();
        self.state.read().unwrap_or_else(|e| e.into_inner()).ring.jwks.clone()
    }

    fn reload_if_rotated(&self) {
        {
            let state = self.state.read().unwrap_or_else(|e| e.into_inner());
            if state.checked.elapsed() < RELOAD_CHECK {
                return;
            }
        }
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        state.checked = Instant::now();
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).ok();
        if modified == state.modified {
            return;
        }
        match load(&self.path) {
            Ok(loaded) => {
                tracing::info!(kid = %loaded.ring.current_kid, "statement signing keys reloaded");
                *state = loaded;
            }
            // Keep signing with the keys already loaded; the operator sees why in the log.
            Err(e) => tracing::error!(error = %e, "the signing key file changed but cannot be loaded"),
        }
    }
}

fn load(path: &Path) -> anyhow::Result<Loaded> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let ring = KeyRing::from_file(&read_file(path)?)?;
    Ok(Loaded { ring, modified, checked: Instant::now() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};

    #[test]
    fn created_rotated_and_verified() {
        let dir = tempfile::tempdir().expect("temp dir");
        let signer = Signer::open(dir.path()).expect("open");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEYS_FILE)).expect("file").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let first = signer.jwks();
        assert_eq!(first.keys.len(), 1);
        let (protected, payload, signature) = signer.sign(b"{\"a\":1}");
        let x: [u8; 32] = B64.decode(&first.keys[0].x).expect("x").try_into().expect("32 bytes");
        let public = VerifyingKey::from_bytes(&x).expect("public key");
        let sig = Signature::from_slice(&B64.decode(&signature).expect("sig")).expect("signature");
        assert!(public.verify(format!("{protected}.{payload}").as_bytes(), &sig).is_ok());
        assert!(public.verify(format!("{protected}.{payload}x").as_bytes(), &sig).is_err());

        let kid = rotate(dir.path()).expect("rotate");
        let again = Signer::open(dir.path()).expect("reopen");
        let keys: Vec<String> = again.jwks().keys.into_iter().map(|k| k.kid).collect();
        assert_eq!(keys, vec![kid.clone(), first.keys[0].kid.clone()]);
        let (protected, _, _) = again.sign(b"{}");
        let header: serde_json::Value =
            serde_json::from_slice(&B64.decode(protected).expect("b64")).expect("json");
        assert_eq!(header["kid"], kid.as_str());
    }
}

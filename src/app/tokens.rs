//! Secrets the directory hands out: random strings of one alphabet, and bearer tokens written
//! `<prefix>_<token id>_<secret>` — API keys (`cq_…`) and recovery tokens (`rt_…`). A token is
//! found by its id and proven by its secret, of which only a hash is stored.

use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Lower-case letters and digits: safe in headers, URLs, mail subjects and file names.
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const ID_LEN: usize = 12;
/// 40 characters of a 36-letter alphabet: about 206 bits.
const SECRET_LEN: usize = 40;

/// `len` characters drawn from the operating-system-seeded CSPRNG.
pub fn random(len: usize) -> String {
    let mut rng = rand::rng();
    (0..len).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// A kind of bearer token, by its prefix.
#[derive(Debug, Clone, Copy)]
pub struct Kind(&'static str);

pub const API_KEY: Kind = Kind("cq");
pub const RECOVERY: Kind = Kind("rt");

/// A token as issued: shown once in `full`, stored as `id` and a hash of `secret`.
pub struct Issued {
    pub full: String,
    pub id: String,
    pub secret: String,
}

impl Kind {
    pub fn issue(self) -> Issued {
        let (id, secret) = (random(ID_LEN), random(SECRET_LEN));
        Issued { full: format!("{}_{id}_{secret}", self.0), id, secret }
    }

    /// The token id and secret of a token of this kind, or `None` when it is not one.
    pub fn parse(self, token: &str) -> Option<(&str, &str)> {
        let rest = token.strip_prefix(self.0)?.strip_prefix('_')?;
        let (id, secret) = rest.split_once('_')?;
        let well_formed = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| ALPHABET.contains(&b));
        (well_formed(id, ID_LEN) && well_formed(secret, SECRET_LEN)).then_some((id, secret))
    }
}

/// A fast hash of a secret with ~206 bits of entropy: no stretching is needed for those.
pub fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Whether `secret` hashes to `stored`, compared in constant time.
pub fn matches(secret: &str, stored: &[u8]) -> bool {
    digest(secret).as_slice().ct_eq(stored).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_parse_back_and_others_do_not() {
        let t = RECOVERY.issue();
        assert!(t.full.starts_with("rt_"));
        assert_eq!(RECOVERY.parse(&t.full), Some((t.id.as_str(), t.secret.as_str())));
        assert_eq!(API_KEY.parse(&t.full), None);
        for bad in [
            "",
            "rt_",
            "rt_x_y",
            &t.full.to_uppercase(),
            &format!("{}a", t.full),
            &t.full[..t.full.len() - 1],
        ] {
            assert_eq!(RECOVERY.parse(bad), None, "{bad}");
        }
        assert!(matches(&t.secret, &digest(&t.secret)));
        assert!(!matches("other", &digest(&t.secret)));
        assert!(!matches(&t.secret, &digest(&t.secret)[..31]));
    }
}

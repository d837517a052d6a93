//! Secrets at rest: SHA-256 lookup hashes, an AEAD (XChaCha20-Poly1305) for copies that
//! must be revealed later, and the master key (from `CAPTURE_MASTER_KEY` or generated once
//! into the data folder with mode 0600).

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::TryRng;
use sha2::{Digest, Sha256};

use crate::start_error::StartError;

/// Lowercase hex SHA-256 of `s` (API key lookup).
pub fn sha256_hex(s: &[u8]) -> String {
    hex::encode(Sha256::digest(s))
}

/// Lowercase hex HMAC-SHA256 of `data` under `key` (any length): webhook signatures, render
/// links, keyed hashes.
pub fn hmac_sha256_hex(key: &[u8], data: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut m = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(key).expect("HMAC takes any key size");
    m.update(data);
    hex::encode(m.finalize().into_bytes())
}

/// Constant-time equality of two byte strings.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    // `subtle` keeps the optimiser from short-circuiting the comparison; lengths are public.
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// The 32-byte key that encrypts stored secrets.
#[derive(Clone)]
pub struct MasterKey(XChaCha20Poly1305, [u8; 32]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(…)")
    }
}

impl MasterKey {
    /// Parse 32 bytes given as 64 hex characters or base64.
    pub fn parse(s: &str) -> Result<MasterKey, String> {
        let s = s.trim();
        let bytes = if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            hex::decode(s).map_err(|e| e.to_string())?
        } else {
            B64.decode(s).map_err(|_| "must be 32 bytes as 64 hex characters or base64".to_string())?
        };
        if bytes.len() != 32 {
            return Err(format!("must be 32 bytes, got {}", bytes.len()));
        }
        // A second key, derived, for keyed hashes (never the encryption key itself).
        let mac: [u8; 32] = Sha256::new().chain_update(b"capture keyed hash v1").chain_update(&bytes).finalize().into();
        Ok(MasterKey(XChaCha20Poly1305::new_from_slice(&bytes).map_err(|e| e.to_string())?, mac))
    }

    /// The configured key, or the one kept in `data_dir/master.key` (created on first use).
    pub fn load_or_create(configured: Option<&str>, data_dir: &Path) -> Result<MasterKey, StartError> {
        if let Some(k) = configured {
            return MasterKey::parse(k).map_err(|e| StartError::setting("CAPTURE_MASTER_KEY", e));
        }
        let path = data_dir.join("master.key");
        let in_file = |e: String| StartError::KeyFile { path: path.clone(), cause: e.into() };
        if let Ok(text) = std::fs::read_to_string(&path) {
            return MasterKey::parse(&text).map_err(in_file);
        }
        std::fs::create_dir_all(data_dir)?;
        let mut bytes = [0u8; 32];
        rand::rngs::SysRng.try_fill_bytes(&mut bytes).expect("the operating system's random source");
        let text = hex::encode(bytes);
        // create_new: two processes starting at once must not overwrite each other's key.
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        match opts.open(&path) {
            Ok(mut f) => std::io::Write::write_all(&mut f, text.as_bytes())?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path)?;
                return MasterKey::parse(&text).map_err(in_file);
            }
            Err(e) => return Err(e.into()),
        }
        MasterKey::parse(&text).map_err(in_file)
    }

    /// Encrypt to base64(nonce ‖ ciphertext).
    pub fn encrypt(&self, plain: &str) -> String {
        let mut nonce = [0u8; 24];
        rand::rngs::SysRng.try_fill_bytes(&mut nonce).expect("the operating system's random source");
        let ct = self.0.encrypt(&XNonce::from(nonce), plain.as_bytes()).expect("encryption cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        B64.encode(out)
    }

    /// HMAC-SHA256 of `data` under a key derived from the master key, in hex: a digest that
    /// cannot be checked against guesses without the key (an idempotent request's hash,
    /// whose body may carry credentials).
    pub fn keyed_hash(&self, data: &[u8]) -> String {
        hmac_sha256_hex(&self.1, data)
    }

    /// Decrypt what `encrypt` produced; None if it was tampered with or another key made it.
    pub fn decrypt(&self, text: &str) -> Option<String> {
        let raw = B64.decode(text).ok()?;
        if raw.len() < 24 {
            return None;
        }
        let (nonce, ct) = raw.split_at(24);
        let plain = self.0.decrypt(&XNonce::try_from(nonce).ok()?, ct).ok()?;
        String::from_utf8(plain).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper() {
        let k = MasterKey::parse(&"11".repeat(32)).unwrap();
        let c = k.encrypt("sk_live_abc");
        assert_eq!(k.decrypt(&c).as_deref(), Some("sk_live_abc"));
        let other = MasterKey::parse(&"22".repeat(32)).unwrap();
        assert!(other.decrypt(&c).is_none());
        assert!(ct_eq(b"abc", b"abc") && !ct_eq(b"abc", b"abd") && !ct_eq(b"a", b"ab"));
        // Keyed hashes: stable for one key, unlike for another, never the plain digest.
        assert_eq!(k.keyed_hash(b"body"), k.keyed_hash(b"body"));
        assert_ne!(k.keyed_hash(b"body"), other.keyed_hash(b"body"));
        assert_ne!(k.keyed_hash(b"body"), sha256_hex(b"body"));
    }

    #[test]
    fn generated_key_persists() {
        let dir = tempfile_dir();
        let a = MasterKey::load_or_create(None, &dir).unwrap();
        let b = MasterKey::load_or_create(None, &dir).unwrap();
        assert_eq!(b.decrypt(&a.encrypt("x")).as_deref(), Some("x"));
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("capture-crypto-{}", capture_core::ids::random_string(8)));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}

//! The cipher suites we decrypt, and what each one is made of.

/// The hash of a suite's key schedule (HKDF in TLS 1.3, the PRF in TLS 1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha384,
}

impl Hash {
    pub fn output_len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }
}

/// The record protection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aead {
    Aes128Gcm,
    Aes256Gcm,
    ChaCha20Poly1305,
}

impl Aead {
    pub fn key_len(self) -> usize {
        match self {
            Aead::Aes128Gcm => 16,
            Aead::Aes256Gcm | Aead::ChaCha20Poly1305 => 32,
        }
    }
}

/// The protocol version negotiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Tls12,
    Tls13,
}

impl Version {
    /// As reports show it (the session table: `TLS1.2`, `TLS1.3`).
    pub fn name(self) -> &'static str {
        match self {
            Version::Tls12 => "TLS1.2",
            Version::Tls13 => "TLS1.3",
        }
    }
}

/// One cipher suite we can decrypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suite {
    pub id: u16,
    pub name: &'static str,
    pub version: Version,
    pub aead: Aead,
    pub hash: Hash,
}

impl Suite {
    /// TLS 1.2's fixed part of the nonce (the key block's "IV"): 4 bytes for AES-GCM (the
    /// other 8 are explicit in each record, RFC 5288), 12 for ChaCha20-Poly1305 (RFC 7905).
    pub fn tls12_fixed_iv_len(&self) -> usize {
        match self.aead {
            Aead::Aes128Gcm | Aead::Aes256Gcm => 4,
            Aead::ChaCha20Poly1305 => 12,
        }
    }
}

const fn s(id: u16, name: &'static str, version: Version, aead: Aead, hash: Hash) -> Suite {
    Suite {
        id,
        name,
        version,
        aead,
        hash,
    }
}

use Aead::*;
use Hash::*;
use Version::*;

/// Every suite we decrypt. TLS 1.2: the AEAD suites whatever the key exchange (the key log
/// gives the master secret, so ECDHE, DHE and RSA are alike to us). CBC suites are not
/// here: they are counted as not decryptable (docs/tls.md).
pub const SUITES: &[Suite] = &[
    s(0x1301, "TLS_AES_128_GCM_SHA256", Tls13, Aes128Gcm, Sha256),
    s(0x1302, "TLS_AES_256_GCM_SHA384", Tls13, Aes256Gcm, Sha384),
    s(
        0x1303,
        "TLS_CHACHA20_POLY1305_SHA256",
        Tls13,
        ChaCha20Poly1305,
        Sha256,
    ),
    s(
        0xc02b,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        Tls12,
        Aes128Gcm,
        Sha256,
    ),
    s(
        0xc02c,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        Tls12,
        Aes256Gcm,
        Sha384,
    ),
    s(
        0xc02f,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        Tls12,
        Aes128Gcm,
        Sha256,
    ),
    s(
        0xc030,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        Tls12,
        Aes256Gcm,
        Sha384,
    ),
    s(
        0xcca8,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Tls12,
        ChaCha20Poly1305,
        Sha256,
    ),
    s(
        0xcca9,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        Tls12,
        ChaCha20Poly1305,
        Sha256,
    ),
    s(
        0xccaa,
        "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Tls12,
        ChaCha20Poly1305,
        Sha256,
    ),
    s(
        0x009c,
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        Tls12,
        Aes128Gcm,
        Sha256,
    ),
    s(
        0x009d,
        "TLS_RSA_WITH_AES_256_GCM_SHA384",
        Tls12,
        Aes256Gcm,
        Sha384,
    ),
    s(
        0x009e,
        "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        Tls12,
        Aes128Gcm,
        Sha256,
    ),
    s(
        0x009f,
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        Tls12,
        Aes256Gcm,
        Sha384,
    ),
];

/// The suite `id` names in `version`, if we decrypt it.
pub fn find(id: u16, version: Version) -> Option<Suite> {
    SUITES
        .iter()
        .find(|s| s.id == id && s.version == version)
        .copied()
}

//! Key schedules: from a logged secret to record keys and IVs.
//!
//! TLS 1.3 (RFC 8446 §7.1, §7.3): `HKDF-Expand-Label(secret, "key"|"iv", "", len)`, and
//! KeyUpdate's `application_traffic_secret_N+1 = HKDF-Expand-Label(secret_N, "traffic
//! upd", "", Hash.length)`. TLS 1.2 (RFC 5246 §5, §6.3): the PRF P_hash over the master
//! secret, `"key expansion"` and `server_random + client_random` gives the key block.

use ring::{hkdf, hmac};

use crate::suite::{Hash, Suite};

/// A length for ring's HKDF output.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf_alg(hash: Hash) -> hkdf::Algorithm {
    match hash {
        Hash::Sha256 => hkdf::HKDF_SHA256,
        Hash::Sha384 => hkdf::HKDF_SHA384,
    }
}

fn hmac_alg(hash: Hash) -> hmac::Algorithm {
    match hash {
        Hash::Sha256 => hmac::HMAC_SHA256,
        Hash::Sha384 => hmac::HMAC_SHA384,
    }
}

/// RFC 8446 §7.1 HKDF-Expand-Label: the `HkdfLabel` structure (length, `"tls13 " +
/// label`, context) as HKDF-Expand's info. `len` is at most 255 × the hash's length.
pub fn hkdf_expand_label(
    hash: Hash,
    secret: &[u8],
    label: &[u8],
    context: &[u8],
    len: usize,
) -> Vec<u8> {
    let length = (len as u16).to_be_bytes();
    let label_len = [(6 + label.len()) as u8];
    let context_len = [context.len() as u8];
    let info: [&[u8]; 6] = [&length, &label_len, b"tls13 ", label, &context_len, context];
    let prk = hkdf::Prk::new_less_safe(hkdf_alg(hash), secret);
    let mut out = vec![0; len];
    prk.expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out))
        // Only a length over 255 hash blocks fails; ours are at most 48 bytes.
        .expect("HKDF-Expand-Label length within 255 blocks");
    out
}

/// A TLS 1.3 traffic secret's record key and IV (RFC 8446 §7.3).
pub fn tls13_key_iv(suite: &Suite, secret: &[u8]) -> (Vec<u8>, [u8; 12]) {
    let key = hkdf_expand_label(suite.hash, secret, b"key", b"", suite.aead.key_len());
    let iv = hkdf_expand_label(suite.hash, secret, b"iv", b"", 12);
    (key, iv.try_into().expect("12-byte IV"))
}

/// The traffic secret after a KeyUpdate (RFC 8446 §7.2).
pub fn next_traffic_secret(hash: Hash, secret: &[u8]) -> Vec<u8> {
    hkdf_expand_label(hash, secret, b"traffic upd", b"", hash.output_len())
}

/// TLS 1.2 PRF (RFC 5246 §5): P_hash(secret, label + seed) filling `out`.
pub fn tls12_prf(hash: Hash, secret: &[u8], label: &[u8], seed: &[u8], out: &mut [u8]) {
    let key = hmac::Key::new(hmac_alg(hash), secret);
    // A(1) = HMAC(secret, label + seed)
    let mut a = {
        let mut ctx = hmac::Context::with_key(&key);
        ctx.update(label);
        ctx.update(seed);
        ctx.sign()
    };
    for chunk in out.chunks_mut(hash.output_len()) {
        let mut ctx = hmac::Context::with_key(&key);
        ctx.update(a.as_ref());
        ctx.update(label);
        ctx.update(seed);
        let p = ctx.sign();
        chunk.copy_from_slice(&p.as_ref()[..chunk.len()]);
        a = hmac::sign(&key, a.as_ref());
    }
}

/// A TLS 1.2 AEAD suite's keys from the master secret (RFC 5246 §6.3; AEAD suites have
/// no MAC keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls12Keys {
    pub client_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub client_iv: Vec<u8>,
    pub server_iv: Vec<u8>,
}

pub fn tls12_keys(
    suite: &Suite,
    master: &[u8],
    client_random: &[u8; 32],
    server_random: &[u8; 32],
) -> Tls12Keys {
    let (k, iv) = (suite.aead.key_len(), suite.tls12_fixed_iv_len());
    let mut block = vec![0; 2 * (k + iv)];
    let mut seed = [0u8; 64];
    seed[..32].copy_from_slice(server_random);
    seed[32..].copy_from_slice(client_random);
    tls12_prf(suite.hash, master, b"key expansion", &seed, &mut block);
    let (client_key, rest) = block.split_at(k);
    let (server_key, rest) = rest.split_at(k);
    let (client_iv, server_iv) = rest.split_at(iv);
    Tls12Keys {
        client_key: client_key.to_vec(),
        server_key: server_key.to_vec(),
        client_iv: client_iv.to_vec(),
        server_iv: server_iv.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The TLS 1.2 PRF test vectors published on the IETF TLS list (P_SHA256, P_SHA384).
    #[test]
    fn tls12_prf_published_vectors() {
        let mut out = [0u8; 100];
        tls12_prf(
            Hash::Sha256,
            &hex("9bbe436ba940f017b17652849a71db35"),
            b"test label",
            &hex("a0ba9f936cda311827a6f796ffd5198c"),
            &mut out,
        );
        assert_eq!(
            out.to_vec(),
            hex("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66")
        );
        let mut out = [0u8; 148];
        tls12_prf(
            Hash::Sha384,
            &hex("b80b733d6ceefcdc71566ea48e5567df"),
            b"test label",
            &hex("cd665cf6a8447dd6ff8b27555edb7465"),
            &mut out,
        );
        assert_eq!(
            out.to_vec(),
            hex("7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cde9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d9184259b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee691c8f3a26854308d5eaa3be85e0990703d73e56f")
        );
    }
}

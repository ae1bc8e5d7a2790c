//! A rustls client and server talking in-process (feature `tls`): every byte each one put
//! on the wire, flight by flight, and the key log rustls wrote (its `KeyLog`, in NSS
//! format) — the truth the TLS tests decrypt against. The server's certificate is a stand-in
//! the client's verifier accepts unread: what is tested is the record layer, not the PKI.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::ring as provider;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, ServerConfig, ServerConnection,
    SignatureScheme,
};

/// The suites the TLS layer decrypts, one per test run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsSuite {
    Tls13Aes128Gcm,
    Tls13Aes256Gcm,
    Tls13Chacha20,
    Tls12Aes128Gcm,
    Tls12Aes256Gcm,
    Tls12Chacha20,
}

impl TlsSuite {
    pub const ALL: [TlsSuite; 6] = [
        TlsSuite::Tls13Aes128Gcm,
        TlsSuite::Tls13Aes256Gcm,
        TlsSuite::Tls13Chacha20,
        TlsSuite::Tls12Aes128Gcm,
        TlsSuite::Tls12Aes256Gcm,
        TlsSuite::Tls12Chacha20,
    ];

    pub fn is_tls13(self) -> bool {
        matches!(
            self,
            TlsSuite::Tls13Aes128Gcm | TlsSuite::Tls13Aes256Gcm | TlsSuite::Tls13Chacha20
        )
    }

    fn rustls(self) -> rustls::SupportedCipherSuite {
        use provider::cipher_suite as cs;
        match self {
            TlsSuite::Tls13Aes128Gcm => cs::TLS13_AES_128_GCM_SHA256,
            TlsSuite::Tls13Aes256Gcm => cs::TLS13_AES_256_GCM_SHA384,
            TlsSuite::Tls13Chacha20 => cs::TLS13_CHACHA20_POLY1305_SHA256,
            TlsSuite::Tls12Aes128Gcm => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            TlsSuite::Tls12Aes256Gcm => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            TlsSuite::Tls12Chacha20 => cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        }
    }
}

/// Which end put bytes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    Client,
    Server,
}

/// rustls' key log, kept as NSS key log text.
#[derive(Debug, Default)]
pub struct KeyLines(Mutex<String>);

impl KeyLines {
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

impl rustls::KeyLog for KeyLines {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let mut text = self.0.lock().unwrap();
        text.push_str(&format!("{label} {} {}\n", hex(client_random), hex(secret)));
    }
}

#[derive(Debug)]
struct AcceptAnyServer;

impl ServerCertVerifier for AcceptAnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ED25519]
    }
}

#[derive(Debug)]
struct OneKey(Arc<CertifiedKey>);

impl ResolvesServerCert for OneKey {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A client and a server configuration for one suite, shared by the connections made from
/// them (so a second connection resumes the first one's session), with one key log.
pub struct TlsEndpoints {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    pub key_log: Arc<KeyLines>,
}

impl TlsEndpoints {
    pub fn new(suite: TlsSuite) -> Self {
        Self::build(suite, false)
    }

    /// As [`TlsEndpoints::new`], but the server takes only the key share the client does
    /// not send first: every TLS 1.3 handshake has a HelloRetryRequest.
    pub fn with_hello_retry(suite: TlsSuite) -> Self {
        Self::build(suite, true)
    }

    fn build(suite: TlsSuite, hello_retry: bool) -> Self {
        let mut p = provider::default_provider();
        p.cipher_suites = vec![suite.rustls()];
        let mut server_provider = p.clone();
        if hello_retry {
            p.kx_groups = vec![provider::kx_group::X25519, provider::kx_group::SECP256R1];
            server_provider.kx_groups = vec![provider::kx_group::SECP256R1];
        }
        let p = Arc::new(p);
        let version: &'static rustls::SupportedProtocolVersion = if suite.is_tls13() {
            &rustls::version::TLS13
        } else {
            &rustls::version::TLS12
        };
        let key_log = Arc::new(KeyLines::default());
        let mut client = ClientConfig::builder_with_provider(p.clone())
            .with_protocol_versions(&[version])
            .expect("client versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServer))
            .with_no_client_auth();
        client.key_log = key_log.clone();
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).expect("ed25519 key");
        let key = PrivatePkcs8KeyDer::from(pkcs8.as_ref().to_vec());
        let signer = provider::sign::any_eddsa_type(&key).expect("signing key");
        // A stand-in certificate: the client's verifier accepts it unread.
        let cert = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let certified = Arc::new(CertifiedKey::new(vec![cert], signer));
        let server = ServerConfig::builder_with_provider(Arc::new(server_provider))
            .with_protocol_versions(&[version])
            .expect("server versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(OneKey(certified)));
        TlsEndpoints {
            client: Arc::new(client),
            server: Arc::new(server),
            key_log,
        }
    }

    /// A new connection between the two (resuming an earlier one's session if any).
    pub fn connect(&self) -> TlsPair {
        let name = ServerName::try_from("fix.test").expect("server name");
        let mut pair = TlsPair {
            client: ClientConnection::new(self.client.clone(), name).expect("client"),
            server: ServerConnection::new(self.server.clone()).expect("server"),
            wire: Vec::new(),
        };
        pair.pump();
        assert!(!pair.client.is_handshaking() && !pair.server.is_handshaking());
        pair
    }
}

/// One connection: every flight each end wrote, in order.
pub struct TlsPair {
    pub client: ClientConnection,
    pub server: ServerConnection,
    /// Each flight as the bytes one end wrote before the other read them.
    pub wire: Vec<(Peer, Vec<u8>)>,
}

impl TlsPair {
    /// Moves bytes both ways until neither end has anything to write; each end's output is
    /// one flight.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            if self.client.wants_write() {
                let mut out = Vec::new();
                while self.client.wants_write() {
                    self.client.write_tls(&mut out).expect("client write_tls");
                }
                feed(&mut self.server, &out);
                self.wire.push((Peer::Client, out));
                moved = true;
            }
            if self.server.wants_write() {
                let mut out = Vec::new();
                while self.server.wants_write() {
                    self.server.write_tls(&mut out).expect("server write_tls");
                }
                feed(&mut self.client, &out);
                self.wire.push((Peer::Server, out));
                moved = true;
            }
            if !moved {
                return;
            }
        }
    }

    /// `bytes` from `from` as application data: its flight's index in `wire`. The peer
    /// reads them (checked).
    pub fn send(&mut self, from: Peer, bytes: &[u8]) -> usize {
        match from {
            Peer::Client => self.client.writer().write_all(bytes).unwrap(),
            Peer::Server => self.server.writer().write_all(bytes).unwrap(),
        }
        let before = self.wire.len();
        self.pump();
        assert_eq!(self.wire.len(), before + 1, "one flight");
        let mut got = vec![0; bytes.len()];
        match from {
            Peer::Client => self.server.reader().read_exact(&mut got).unwrap(),
            Peer::Server => self.client.reader().read_exact(&mut got).unwrap(),
        }
        assert_eq!(got, bytes);
        before
    }

    /// `bytes` from `from` as application data (the peer reads them, checked): the flight
    /// that carried them, taken out of `wire` (a long run keeps no copy of its traffic).
    pub fn seal(&mut self, from: Peer, bytes: &[u8]) -> Vec<u8> {
        let flight = self.send(from, bytes);
        let (peer, wire) = self.wire.pop().expect("one flight");
        debug_assert_eq!((flight, peer), (self.wire.len(), from));
        wire
    }

    /// `from` updates its traffic keys (TLS 1.3 KeyUpdate) with its next flight.
    pub fn key_update(&mut self, from: Peer) {
        match from {
            Peer::Client => self
                .client
                .refresh_traffic_keys()
                .expect("client key update"),
            Peer::Server => self
                .server
                .refresh_traffic_keys()
                .expect("server key update"),
        }
    }
}

fn feed<C, D>(conn: &mut C, mut bytes: &[u8])
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>,
    D: rustls::SideData,
{
    while !bytes.is_empty() {
        conn.read_tls(&mut bytes).expect("read_tls");
        conn.process_new_packets().expect("process_new_packets");
    }
}

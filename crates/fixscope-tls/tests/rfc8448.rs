//! RFC 8448 §3 (the simple 1-RTT handshake, TLS_AES_128_GCM_SHA256): the traffic keys and
//! IVs derived from the trace's secrets, and the trace's protected records decrypted to the
//! plaintext it gives. Values transcribed from the RFC.

use fixscope_tls::cipher::RecordKey;
use fixscope_tls::schedule::{hkdf_expand_label, tls13_key_iv};
use fixscope_tls::suite::{find, Hash, Version};

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

const SERVER_HS_SECRET: &str = "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38";
const CLIENT_HS_SECRET: &str = "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21";
const MASTER_SECRET: &str = "18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919";
/// Hash(ClientHello … server Finished), the application secrets' context.
const APPLICATION_HASH: &str = "9608102a0f1ccc6db6250b7b7e417b1a000eaada3daae4777a7686c9ff83df13";
const CLIENT_AP_SECRET: &str = "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5";

/// {server} EncryptedExtensions … Finished, one record under the server handshake key.
const SERVER_HS_RECORD: &str = "17 03 03 02 a2 d1 ff 33 4a 56 f5 bf
 f6 59 4a 07 cc 87 b5 80 23 3f 50 0f 45 e4 89 e7 f3 3a f3 5e df 78 69 fc f4 0a a4 0a a2 b8 ea 73 f8 48 a7 ca 07 61 2e f9 f9 45
 cb 96 0b 40 68 90 51 23 ea 78 b1 11 b4 29 ba 91 91 cd 05 d2 a3 89 28 0f 52 61 34 aa dc 7f c7 8c 4b 72 9d f8 28 b5 ec f7 b1 3b
 d9 ae fb 0e 57 f2 71 58 5b 8e a9 bb 35 5c 7c 79 02 07 16 cf b9 b1 18 3e f3 ab 20 e3 7d 57 a6 b9 d7 47 76 09 ae e6 e1 22 a4 cf
 51 42 73 25 25 0c 7d 0e 50 92 89 44 4c 9b 3a 64 8f 1d 71 03 5d 2e d6 5b 0e 3c dd 0c ba e8 bf 2d 0b 22 78 12 cb b3 60 98 72 55
 cc 74 41 10 c4 53 ba a4 fc d6 10 92 8d 80 98 10 e4 b7 ed 1a 8f d9 91 f0 6a a6 24 82 04 79 7e 36 a6 a7 3b 70 a2 55 9c 09 ea d6
 86 94 5b a2 46 ab 66 e5 ed d8 04 4b 4c 6d e3 fc f2 a8 94 41 ac 66 27 2f d8 fb 33 0e f8 19 05 79 b3 68 45 96 c9 60 bd 59 6e ea
 52 0a 56 a8 d6 50 f5 63 aa d2 74 09 96 0d ca 63 d3 e6 88 61 1e a5 e2 2f 44 15 cf 95 38 d5 1a 20 0c 27 03 42 72 96 8a 26 4e d6
 54 0c 84 83 8d 89 f7 2c 24 46 1a ad 6d 26 f5 9e ca ba 9a cb bb 31 7b 66 d9 02 f4 f2 92 a3 6a c1 b6 39 c6 37 ce 34 31 17 b6 59
 62 22 45 31 7b 49 ee da 0c 62 58 f1 00 d7 d9 61 ff b1 38 64 7e 92 ea 33 0f ae ea 6d fa 31 c7 a8 4d c3 bd 7e 1b 7a 6c 71 78 af
 36 87 90 18 e3 f2 52 10 7f 24 3d 24 3d c7 33 9d 56 84 c8 b0 37 8b f3 02 44 da 8c 87 c8 43 f5 e5 6e b4 c5 e8 28 0a 2b 48 05 2c
 f9 3b 16 49 9a 66 db 7c ca 71 e4 59 94 26 f7 d4 61 e6 6f 99 88 2b d8 9f c5 08 00 be cc a6 2d 6c 74 11 6d bd 29 72 fd a1 fa 80
 f8 5d f8 81 ed be 5a 37 66 89 36 b3 35 58 3b 59 91 86 dc 5c 69 18 a3 96 fa 48 a1 81 d6 b6 fa 4f 9d 62 d5 13 af bb 99 2f 2b 99
 2f 67 f8 af e6 7f 76 91 3f a3 88 cb 56 30 c8 ca 01 e0 c6 5d 11 c6 6a 1e 2a c4 c8 59 77 b7 c7 a6 99 9b bf 10 dc 35 ae 69 f5 51
 56 14 63 6c 0b 9b 68 c1 9e d2 e3 1c 0b 3b 66 76 30 38 eb ba 42 f3 b3 8e dc 03 99 f3 a9 f2 3f aa 63 97 8c 31 7f c9 fa 66 a7 3f
 60 f0 50 4d e9 3b 5b 84 5e 27 55 92 c1 23 35 ee 34 0b bc 4f dd d5 02 78 40 16 e4 b3 be 7e f0 4d da 49 f4 b4 40 a3 0c b5 d2 af
 93 98 28 fd 4a e3 79 4e 44 f9 4d f5 a6 31 ed e4 2c 17 19 bf da bf 02 53 fe 51 75 be 89 8e 75 0e dc 53 37 0d 2b";

/// {client} Finished under the client handshake key.
const CLIENT_FINISHED_RECORD: &str = "17 03 03 00 35 75 ec 4d c2 38 cc e6
 0b 29 80 44 a7 1e 21 9c 56 cc 77 b0 51 7f e9 b9 3c 7a 4b fc 44 d8 7f 38 f8 03 38 ac 98 fc 46 de b3 84 bd 1c ae ac ab 68 67 d7
 26 c4 05 46";
const CLIENT_FINISHED_PLAIN: &str = "14 00 00 20 a8 ec 43 6d 67 76 34 ae 52 5a c1
 fc eb e1 1a 03 9e c1 76 94 fa c6 e9 85 27 b6 42 f2 ed d5 ce 61";

/// {client} and {server} application data (bytes 00..31) under the application keys.
const CLIENT_APP_RECORD: &str = "17 03 03 00 43 a2 3f 70 54 b6 2c 94
 d0 af fa fe 82 28 ba 55 cb ef ac ea 42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b 62 97 4e 1f 5a 62
 92 a2 97 70 14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4";
const SERVER_APP_RECORD: &str = "17 03 03 00 43 2e 93 7e 11 ef 4a c7
 40 e5 38 ad 36 00 5f c4 a4 69 32 fc 32 25 d0 5f 82 aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8 fc c4 9c 4b f2 e5
 f0 a2 1c 00 47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d";

/// Opens one record of the trace at `seq`: (content type, plaintext).
fn open(key: &RecordKey, seq: u64, record: &str) -> Option<(u8, Vec<u8>)> {
    let mut r = hex(record);
    let header: [u8; 5] = r[..5].try_into().unwrap();
    assert_eq!(
        u16::from_be_bytes([r[3], r[4]]) as usize,
        r.len() - 5,
        "transcribed length"
    );
    let opened = key.open(seq, &header, &mut r[5..])?;
    Some((
        opened.content_type,
        r[5 + opened.start..5 + opened.end].to_vec(),
    ))
}

#[test]
fn traffic_keys_and_ivs_from_the_trace_secrets() {
    let suite = find(0x1301, Version::Tls13).unwrap();
    let (key, iv) = tls13_key_iv(&suite, &hex(SERVER_HS_SECRET));
    assert_eq!(key, hex("3fce516009c21727d0f2e4e86ee403bc"));
    assert_eq!(iv.to_vec(), hex("5d313eb2671276ee13000b30"));
    // Derive-Secret(master, "c ap traffic", hash) = HKDF-Expand-Label(…, Hash.length):
    // the label layout checked against the trace's published secret.
    let c_ap = hkdf_expand_label(
        Hash::Sha256,
        &hex(MASTER_SECRET),
        b"c ap traffic",
        &hex(APPLICATION_HASH),
        32,
    );
    assert_eq!(c_ap, hex(CLIENT_AP_SECRET));
}

#[test]
fn the_trace_records_decrypt() {
    let suite = find(0x1301, Version::Tls13).unwrap();
    let server_hs = RecordKey::tls13(&suite, &hex(SERVER_HS_SECRET)).unwrap();
    let (kind, plain) = open(&server_hs, 0, SERVER_HS_RECORD).expect("server flight verifies");
    assert_eq!(kind, 22, "handshake");
    assert_eq!(
        &plain[..4],
        &hex("08 00 00 24")[..],
        "EncryptedExtensions first"
    );
    assert_eq!(
        &plain[plain.len() - 36..],
        &hex("14 00 00 20 9b 9b 14 1d 90 63 37 fb d2 cb dc e7 1d f4 de da 4a b4 2c 30 95 72 cb 7f ff ee 54 54 b7 8f 07 18")[..],
        "server Finished last"
    );
    // The same record at another sequence number does not verify.
    assert!(open(&server_hs, 1, SERVER_HS_RECORD).is_none());

    let client_hs = RecordKey::tls13(&suite, &hex(CLIENT_HS_SECRET)).unwrap();
    let (kind, plain) = open(&client_hs, 0, CLIENT_FINISHED_RECORD).expect("client Finished");
    assert_eq!((kind, plain), (22, hex(CLIENT_FINISHED_PLAIN)));

    let master = hex(MASTER_SECRET);
    let context = hex(APPLICATION_HASH);
    let secret = |label: &[u8]| hkdf_expand_label(Hash::Sha256, &master, label, &context, 32);
    let client_ap = RecordKey::tls13(&suite, &secret(b"c ap traffic")).unwrap();
    let server_ap = RecordKey::tls13(&suite, &secret(b"s ap traffic")).unwrap();
    let counting: Vec<u8> = (0..0x32).collect();
    // The client's first application record; the server's follows its NewSessionTicket.
    assert_eq!(
        open(&client_ap, 0, CLIENT_APP_RECORD),
        Some((23, counting.clone()))
    );
    assert_eq!(open(&server_ap, 1, SERVER_APP_RECORD), Some((23, counting)));
    assert!(open(&server_ap, 0, SERVER_APP_RECORD).is_none());
}

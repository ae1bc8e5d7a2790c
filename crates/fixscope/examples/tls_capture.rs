//! A plaintext FIX capture written again over TLS, the benchmark's traffic for
//! `make bench-tls` (BENCHMARKS.md §9): each TCP connection becomes a rustls connection
//! with a real handshake before its first payload, each segment's payload one TLS record in
//! a segment at the same time, flags and ACKs kept; the key log rustls wrote goes beside it.
//!
//! ```text
//! cargo run --release -p fixscope --example tls_capture -- PLAIN.pcap TLS.pcap KEYS.log \
//!     [--suite aes128|aes256|chacha|tls12-aes128|tls12-aes256|tls12-chacha] [-p PORT]
//! ```
//!
//! The suite defaults to TLS 1.3 `TLS_AES_128_GCM_SHA256`. Only the segments of the port
//! (default 9878) are written. The last line on stdout says what was written.

#[path = "../tests/support_tls_capture/mod.rs"]
mod support_tls_capture;

use std::path::PathBuf;

use fixscope_core::PortSet;

fn usage() -> ! {
    let names: Vec<&str> = support_tls_capture::SUITES
        .iter()
        .map(|(n, _)| *n)
        .collect();
    eprintln!(
        "usage: tls_capture PLAIN.pcap TLS.pcap KEYS.log [--suite {}] [-p PORT]",
        names.join("|")
    );
    std::process::exit(2)
}

fn main() {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut suite_name = "aes128".to_string();
    let mut port = 9878u16;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--suite" => suite_name = it.next().unwrap_or_else(|| usage()),
            "-p" | "--port" => {
                port = it
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            s if s.starts_with('-') => usage(),
            s => files.push(s.into()),
        }
    }
    let [plain, tls, keys] = files.as_slice() else {
        usage()
    };
    let Some(suite) = support_tls_capture::suite_named(&suite_name) else {
        usage()
    };
    let start = std::time::Instant::now();
    match support_tls_capture::tls_copy(plain, &PortSet::single(port), tls, keys, suite) {
        Ok(s) => println!(
            "tls_capture: {suite:?}, {} connections, {} segments (+{} handshake), payload {} -> {} bytes, {:.1} s -> {} (keys {})",
            s.connections,
            s.segments,
            s.opening_segments,
            s.payload_bytes_in,
            s.payload_bytes_out,
            start.elapsed().as_secs_f64(),
            tls.display(),
            keys.display()
        ),
        Err(e) => {
            eprintln!("tls_capture: {e}");
            std::process::exit(1)
        }
    }
}

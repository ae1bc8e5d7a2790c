//! `fixscope compare --by 55` (#23 with #21's groups): per-symbol verdicts under the same
//! whole-table confidence band, on scripted captures whose truth is the generator's: the
//! latencies it drew per symbol, one symbol 1.5x slower in the candidate. The slower symbol
//! must be `worse` where its shift is, the others never `worse` or `better`, each cell's
//! point estimates must be the generator's own percentiles (within the 2-significant-digit
//! histograms' 1%), and `--by-limit` must fold the quieter values into `(other)`.

mod support;

use std::path::Path;

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_core::Endpoint;
use serde_json::Value;
use support::*;

/// splitmix64: a deterministic stream for the generator (no dependency for a test).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// (symbol, orders) of every run: CCC is the quietest.
const SYMBOLS: [(&str, usize); 3] = [("AAA", 3000), ("BBB", 3000), ("CCC", 1500)];

/// Writes a capture of one FIX session: orders 1 ms apart, symbols interleaved, each
/// answered by an ack after a lognormal latency (median 200 us, sigma 0.2) times
/// `slower(symbol)`. Returns the latencies drawn, per symbol.
fn generate(path: &Path, seed: u64, slower: impl Fn(&str) -> f64) -> Vec<(String, Vec<u64>)> {
    let mut rng = Rng(seed);
    let client = Endpoint {
        addr: "10.0.0.1".parse().unwrap(),
        port: 40000,
    };
    let server = Endpoint {
        addr: "10.0.0.2".parse().unwrap(),
        port: 9878,
    };
    let mut conn = SyntheticConnection::new(client, server);
    let t0 = 1_700_000_000_000_000_000u64;
    let mut packets = Vec::new();
    let mut ts = t0;
    for spec in conn.handshake() {
        packets.push(at(ts, spec));
        ts += 1_000;
    }
    let mut left: Vec<(&str, usize)> = SYMBOLS.to_vec();
    let mut drawn: Vec<(String, Vec<u64>)> = SYMBOLS
        .iter()
        .map(|(s, _)| (s.to_string(), Vec::new()))
        .collect();
    let mut i = 0u64;
    while left.iter().any(|(_, n)| *n > 0) {
        for (k, (sym, n)) in left.iter_mut().enumerate() {
            if *n == 0 {
                continue;
            }
            *n -= 1;
            let id = format!("O{i}");
            i += 1;
            let lat = (200_000.0 * (0.2 * rng.normal()).exp() * slower(sym)) as u64;
            drawn[k].1.push(lat);
            let order = fixscope_testkit::fix::fix_message(
                "FIX.4.4",
                &[
                    (35, "D"),
                    (49, "C"),
                    (56, "X"),
                    (11, &id),
                    (55, sym),
                    (54, "1"),
                ],
            );
            let ack = fixscope_testkit::fix::fix_message(
                "FIX.4.4",
                &[
                    (35, "8"),
                    (49, "X"),
                    (56, "C"),
                    (11, &id),
                    (150, "0"),
                    (39, "0"),
                ],
            );
            packets.push(at(ts, conn.client_sends(&order)));
            packets.push(at(ts + lat, conn.server_sends(&ack)));
            ts += 1_000_000;
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    write_pcap(path, &packets);
    drawn
}

/// The generator's percentile as reports rank it (the value at rank ceil(p * n)).
fn truth_percentile(values: &[u64], p: f64) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    exact_percentile(&v, p / 100.0)
}

fn compare(base: &Path, cand: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec![
        "compare",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "-p",
        "9878",
        "--json",
        "--by",
        "55",
        "--percentiles",
        "50,90",
    ];
    args.extend_from_slice(extra);
    let out = fixscope(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), v)
}

/// The cell of a symbol's stage.
fn cell<'a>(v: &'a Value, value: &str, stage: &str) -> &'a Value {
    v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == stage && s["by"] == "55" && s["group"] == value)
        .unwrap_or_else(|| panic!("no cell 55={value} {stage}: {v}"))
}

#[test]
fn one_symbol_slower_is_worse_and_only_that_symbol() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.pcap"), dir.path().join("cand.pcap"));
    let truth_base = generate(&base, 1, |_| 1.0);
    let truth_cand = generate(&cand, 2, |s| if s == "BBB" { 1.5 } else { 1.0 });

    let (code, v) = compare(&base, &cand, &[]);
    assert_eq!(code, Some(3), "something is worse: exit 3\n{v}");
    for (k, (sym, _)) in SYMBOLS.iter().enumerate() {
        for stage in ["first_response", "ack"] {
            let c = cell(&v, sym, stage);
            assert_eq!(c["baseline_count"], truth_base[k].1.len(), "{c}");
            assert_eq!(c["candidate_count"], truth_cand[k].1.len(), "{c}");
            for p in c["percentiles"].as_array().unwrap() {
                let pct = p["p"].as_f64().unwrap();
                // Point estimates are the generator's percentiles, within the per-value
                // histograms' 2 significant digits.
                for (side, truth) in [("baseline_ns", &truth_base), ("candidate_ns", &truth_cand)] {
                    let got = p[side].as_f64().unwrap();
                    let want = truth_percentile(&truth[k].1, pct) as f64;
                    assert!(
                        (got / want - 1.0).abs() <= 0.011,
                        "55={sym} {stage} p{pct} {side}: {got} vs the generator's {want}"
                    );
                }
                let verdict = p["verdict"].as_str().unwrap();
                if *sym == "BBB" {
                    assert_eq!(verdict, "worse", "55=BBB {stage} p{pct}: {p}");
                    // The band covers the generator's true ratio.
                    let ratio = truth_percentile(&truth_cand[k].1, pct) as f64
                        / truth_percentile(&truth_base[k].1, pct) as f64;
                    let (lo, hi) = (
                        p["ci_low"].as_f64().unwrap(),
                        p["ci_high"].as_f64().unwrap(),
                    );
                    assert!(
                        lo <= ratio && ratio <= hi,
                        "{ratio} outside [{lo}, {hi}]: {p}"
                    );
                } else {
                    assert!(
                        verdict == "same" || verdict == "inconclusive",
                        "55={sym} {stage} p{pct}: unchanged by the generator, yet {verdict}: {p}"
                    );
                }
            }
        }
    }
    // At the median the unchanged symbols are decided `same` (enough orders).
    for sym in ["AAA", "CCC"] {
        assert_eq!(
            cell(&v, sym, "first_response")["percentiles"][0]["verdict"],
            "same",
            "55={sym}"
        );
    }

    // `--by-limit 2`: each run's two busiest (AAA, BBB) by name, CCC as (other).
    let (_, v) = compare(&base, &cand, &["--by-limit", "2"]);
    let mut groups: Vec<&str> = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["by"] == "55")
        .map(|s| s["group"].as_str().unwrap())
        .collect();
    groups.sort_unstable();
    groups.dedup();
    assert_eq!(groups, ["(other)", "AAA", "BBB"], "{v}");
    assert_eq!(
        cell(&v, "(other)", "ack")["baseline_count"],
        SYMBOLS[2].1,
        "CCC's orders, all of them"
    );

    // One tag per comparison: a clear error.
    let out = fixscope(&[
        "compare",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--by",
        "55,1",
        "-p",
        "9878",
    ]);
    assert_eq!(out.status.code(), Some(1), "one tag");

    // Logs keep --by values for the run, not per interval: a clear error, not a wrong band.
    let hlog = dir.path().join("base.hlog");
    let out = fixscope(&[
        "pcap",
        base.to_str().unwrap(),
        "-p",
        "9878",
        "-r",
        "1",
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let h = hlog.to_str().unwrap();
    let out = fixscope(&["compare", h, h, "--by", "55"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs captures"), "{stderr}");
}

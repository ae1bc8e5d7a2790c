//! `fixscope sim exchange|client --protocol ouch42|ouch50|ilink3`: the simulator speaking
//! the binary order protocols fixscope measures — Nasdaq OUCH 4.2 and 5.0 over SoupBinTCP,
//! CME iLink 3 (SBE over FIXP, SOFH framed) — with the same ground-truth files as the FIX
//! simulator, so `fixscope live/pcap --protocol PORT=...` can be checked order by order.
//!
//! Unlike the FIX loops (epoll, nonblocking, allocation-free), these are plain blocking
//! sockets, one thread per connection: the exchange sleeps on the connection's thread until
//! an answer is due (CLOCK_MONOTONIC, spinning the last `--spin`), and the client keeps one
//! order in flight per session (window 1), which makes each delay exact. With several
//! orders in flight on one connection (another client), the answers queue in order: an
//! order is read once the one before it is answered.
//!
//! - `frames`: one SoupBinTCP packet or one SOFH message from a stream, with the stamps of
//!   the read() that completed it;
//! - `messages`: each protocol's login, order, ack and fill, built with the protocol crates'
//!   encoders and read with their decoders;
//! - `flags`: which of the FIX simulator's flags a binary run takes, and refusing the rest;
//! - `exchange`, `client`: the two ends.

mod client;
mod exchange;
mod flags;
mod frames;
mod messages;

use fixscope_core::clock::monotonic_ns;

pub use client::run_binary_client;
pub use exchange::run_binary_exchange;

pub use crate::sim_protocol::{BinaryProtocol, SimProtocol};

/// How a protocol's messages are framed on TCP.
fn framing(p: BinaryProtocol) -> frames::Framing {
    match p {
        BinaryProtocol::Ouch42 | BinaryProtocol::Ouch50 => frames::Framing::SoupBin,
        BinaryProtocol::Ilink3 => frames::Framing::Sofh,
    }
}

/// Waits until CLOCK_MONOTONIC reaches `due_ns`: sleeps until `spin_ns` before it, then
/// spins (a thread's sleep overshoots by tens of µs; the spin makes the delay exact).
fn wait_until(due_ns: u64, spin_ns: u64) {
    loop {
        let now = monotonic_ns();
        if now >= due_ns {
            return;
        }
        let left = due_ns - now;
        if left > spin_ns {
            std::thread::sleep(std::time::Duration::from_nanos(left - spin_ns));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl BinaryProtocol {
        fn name_of(name: &str) -> BinaryProtocol {
            match name.parse() {
                Ok(SimProtocol::Binary(p)) => p,
                _ => panic!("{name} is not binary"),
            }
        }
    }

    #[test]
    fn parses_protocols() {
        assert_eq!("fix".parse(), Ok(SimProtocol::Fix));
        assert_eq!(
            "ouch50".parse(),
            Ok(SimProtocol::Binary(BinaryProtocol::Ouch50))
        );
        assert_eq!(
            "ilink3".parse::<SimProtocol>().unwrap().to_string(),
            "ilink3"
        );
        assert!("ouch41".parse::<SimProtocol>().is_err());
    }

    #[test]
    fn waits_until_the_due_time() {
        let due = monotonic_ns() + 2_000_000;
        wait_until(due, 50_000);
        assert!(monotonic_ns() >= due);
    }

    /// Exchange and client in-process, each protocol: every order acked after the ack
    /// delay and filled in three parts, the two truth files agreeing order by order.
    #[test]
    fn exchange_and_client_agree_in_every_protocol() {
        use crate::truth::{read_client_truth, read_truth};
        use crate::{run_client, run_exchange, ClientArgs, ExchangeArgs, Shutdown};
        for p in ["ouch42", "ouch50", "ilink3"] {
            let dir = tempfile::tempdir().unwrap();
            let (ex_truth, cl_truth) = (dir.path().join("ex.csv"), dir.path().join("cl.csv"));
            let ex_args = ExchangeArgs::from_flags([
                "--protocol",
                p,
                "--listen",
                "127.0.0.1:0",
                "--ack-delay",
                "fixed:200us",
                "--fill-delay",
                "fixed:100us",
                "--partial-fills",
                "2",
                "--truth",
                ex_truth.to_str().unwrap(),
            ])
            .unwrap();
            let stop = Shutdown::new();
            let (tx, rx) = std::sync::mpsc::channel();
            let ex = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    run_exchange(&ex_args, &stop, |a| tx.send(a).unwrap()).unwrap()
                })
            };
            let addr = rx.recv().unwrap().to_string();
            let cl_args = ClientArgs::from_flags([
                "--protocol",
                p,
                "--connect",
                &addr,
                "--sessions",
                "2",
                "--count",
                "21",
                "--truth",
                cl_truth.to_str().unwrap(),
            ])
            .unwrap();
            let report = run_client(&cl_args, &Shutdown::new()).unwrap();
            assert_eq!(
                (
                    report.sent,
                    report.acks,
                    report.filled_orders,
                    report.unmatched
                ),
                (21, 21, 21, 0),
                "{p}: {report}"
            );
            assert!(report.to_string().contains(p), "{report}");
            stop.trigger();
            let summary = ex.join().unwrap();
            assert_eq!((summary.orders, summary.fills), (21, 63), "{p}: {summary}");
            let ex_rows = read_truth(&ex_truth).unwrap();
            let cl_rows = read_client_truth(&cl_truth).unwrap();
            assert_eq!((ex_rows.len(), cl_rows.len()), (21, 21), "{p}");
            let mut sessions: Vec<&str> = cl_rows.iter().map(|c| c.session.as_str()).collect();
            sessions.sort_unstable();
            sessions.dedup();
            assert_eq!(sessions.len(), 2, "{p}");
            for c in &cl_rows {
                let e = ex_rows
                    .iter()
                    .find(|e| e.clordid == c.clordid && e.session == c.session)
                    .unwrap_or_else(|| panic!("{p}: {c:?} not in the exchange's truth"));
                assert_eq!(e.msg_type, BinaryProtocol::name_of(p).order_code());
                let (ack, fill) = (e.ack_ns.unwrap(), e.fill_ns.unwrap());
                assert!(ack - e.request_ns >= 200_000, "{p}: {e:?}");
                assert!(fill - ack >= 100_000, "{p}: {e:?}");
                assert!(e.read_call_ns.unwrap() <= e.request_ns);
                assert!(e.ack_written_ns.unwrap() >= ack);
                let (send, cack) = (c.send_ns.unwrap(), c.ack_ns.unwrap());
                assert!(send <= e.request_ns && cack >= ack, "{p}");
                assert!(c.fill_ns.unwrap() >= fill, "{p}");
            }
        }
    }
}

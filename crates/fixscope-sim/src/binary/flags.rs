//! Which of the simulator's flags a binary run takes. Those it serves keep their meaning;
//! every other one — FIX's session layer, ClOrdID shapes, request mixes, the FIX engine's
//! rejects, resends and capacity knobs — is refused by name when given a value other than
//! its default, never silently ignored.

use anyhow::bail;

use super::messages::MAX_SOUP_SESSIONS;
use super::BinaryProtocol;
use crate::args::{ClientArgs, ExchangeArgs};

/// The exchange's flags a binary exchange does not serve, when given.
fn exchange_refused(a: &ExchangeArgs) -> Vec<&'static str> {
    let d = ExchangeArgs::default();
    let mut out = Vec::new();
    let mut refuse = |given: bool, flag: &'static str| {
        if given {
            out.push(flag);
        }
    };
    refuse(!a.stall.is_empty(), "--stall");
    refuse(a.comp_id != d.comp_id, "--comp-id");
    refuse(a.order_capacity != d.order_capacity, "--order-capacity");
    refuse(a.max_live_orders != d.max_live_orders, "--max-live-orders");
    refuse(!a.symbol_ack_delay.is_empty(), "--symbol-ack-delay");
    refuse(a.order_reject_every != 0, "--order-reject-every");
    refuse(a.cancel_reject_every != 0, "--cancel-reject-every");
    refuse(a.business_reject_every != 0, "--business-reject-every");
    refuse(a.session_reject_every != 0, "--session-reject-every");
    refuse(a.test_request_delay != 0, "--test-request-delay");
    refuse(a.replay_store != 0, "--replay-store");
    refuse(a.resend_last != 0, "--resend-last");
    refuse(a.session_truth.is_some(), "--session-truth");
    refuse(a.order_truth.is_some(), "--order-truth");
    out
}

/// The client's flags a binary client does not serve, when given.
fn client_refused(a: &ClientArgs) -> Vec<&'static str> {
    let d = ClientArgs::default();
    let mut out = Vec::new();
    let mut refuse = |given: bool, flag: &'static str| {
        if given {
            out.push(flag);
        }
    };
    refuse(a.window.is_some_and(|w| w != 1), "--window (other than 1)");
    refuse(a.clordid_len != d.clordid_len, "--clordid-len");
    refuse(a.clordid_prefix.is_some(), "--clordid-prefix");
    refuse(a.pad != d.pad, "--pad");
    refuse(a.split_clordid, "--split-clordid");
    refuse(a.mix != d.mix, "--mix");
    refuse(a.begin_string != d.begin_string, "--begin-string");
    refuse(a.target_comp_id != d.target_comp_id, "--target-comp-id");
    refuse(a.sender_prefix != d.sender_prefix, "--sender-prefix");
    refuse(a.heartbeat != d.heartbeat, "--heartbeat");
    refuse(a.seed != d.seed, "--seed");
    refuse(a.symbols.is_some(), "--symbols");
    refuse(a.accounts.is_some(), "--accounts");
    refuse(a.venues.is_some(), "--venues");
    refuse(a.test_request_every.is_some(), "--test-request-every");
    refuse(a.test_request_id.is_some(), "--test-request-id");
    refuse(a.poss_resend_every != 0, "--poss-resend-every");
    refuse(a.reconnect_every != 0, "--reconnect-every");
    refuse(a.reconnect_pause != d.reconnect_pause, "--reconnect-pause");
    refuse(a.queue_while_down != 0, "--queue-while-down");
    refuse(a.hard_reset_every != 0, "--hard-reset-every");
    refuse(a.resend_last != 0, "--resend-last");
    refuse(a.replay_store.is_some(), "--replay-store");
    refuse(a.session_truth.is_some(), "--session-truth");
    out
}

fn check(protocol: BinaryProtocol, side: &str, refused: Vec<&str>) -> anyhow::Result<()> {
    if refused.is_empty() {
        return Ok(());
    }
    bail!(
        "sim {side} --protocol {protocol}: {} {} only for --protocol fix",
        refused.join(", "),
        if refused.len() == 1 { "is" } else { "are" }
    )
}

pub fn check_exchange(protocol: BinaryProtocol, a: &ExchangeArgs) -> anyhow::Result<()> {
    check(protocol, "exchange", exchange_refused(a))
}

pub fn check_client(protocol: BinaryProtocol, a: &ClientArgs) -> anyhow::Result<()> {
    if a.sessions == 0 {
        bail!("--sessions must be at least 1");
    }
    if protocol != BinaryProtocol::Ilink3 && a.sessions > MAX_SOUP_SESSIONS {
        bail!("--protocol {protocol}: at most {MAX_SOUP_SESSIONS} --sessions (usernames SIM001..SIM999)");
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            bail!("--rate must be > 0");
        }
    }
    check(protocol, "client", client_refused(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix_only_flags_are_refused_by_name() {
        let p = BinaryProtocol::Ouch42;
        let a = ClientArgs::from_flags(["--sessions", "2", "--count", "9", "--no-fill"]).unwrap();
        assert!(check_client(p, &a).is_ok());
        let a =
            ClientArgs::from_flags(["--mix", "D=90,F=10", "--begin-string", "FIX.4.2"]).unwrap();
        let e = check_client(p, &a).unwrap_err().to_string();
        assert!(e.contains("--mix, --begin-string are only"), "{e}");
        let a = ClientArgs::from_flags(["--window", "1"]).unwrap();
        assert!(check_client(p, &a).is_ok());
        let a = ClientArgs::from_flags(["--window", "4"]).unwrap();
        assert!(check_client(p, &a).is_err());

        let e = ExchangeArgs::from_flags(["--partial-fills", "2", "--seed", "3"]).unwrap();
        assert!(check_exchange(p, &e).is_ok());
        let e = ExchangeArgs::from_flags(["--stall", "1%:2s"]).unwrap();
        let err = check_exchange(p, &e).unwrap_err().to_string();
        assert!(err.contains("--stall is only for --protocol fix"), "{err}");
    }
}

//! What a response means for the order it answers.

/// How a response relates to the order's life: the seam's, every protocol's.
pub use fixscope_protocol::ResponseKind;

pub(super) fn classify_response(
    msg_type: &[u8],
    exec_type: Option<u8>,
    ord_status: Option<u8>,
    exec_trans_type: Option<u8>,
) -> ResponseKind {
    if msg_type == b"9" {
        return ResponseKind {
            ack: true,
            fill: false,
            terminal: true,
            ends_original: false,
            reject: true,
            unsolicited: false,
            venue_initiated: false,
            multileg: false,
        };
    }
    if matches!(exec_trans_type, Some(b'1' | b'2' | b'3'))
        || matches!(exec_type, Some(b'3' | b'B' | b'D' | b'G' | b'H' | b'I'))
    {
        return ResponseKind {
            ack: false,
            fill: false,
            // A terminal status still ends the tracking of an order already answered.
            terminal: matches!(ord_status, Some(b'2' | b'3' | b'4' | b'8' | b'C')),
            ends_original: false,
            reject: false,
            unsolicited: true,
            venue_initiated: false,
            multileg: false,
        };
    }
    let ack = matches!(
        exec_type,
        Some(b'0' | b'A' | b'4' | b'5' | b'6' | b'E' | b'8')
    );
    // 150=1/2 are FIX 4.2-and-older's partial fill/fill; later versions never send them,
    // so accepting them everywhere costs nothing.
    let fill = matches!(exec_type, Some(b'F' | b'1' | b'2'));
    let terminal = matches!(ord_status, Some(b'2' | b'3' | b'4' | b'8' | b'C'))
        || matches!(exec_type, Some(b'8'));
    let ends_original = terminal || matches!(exec_type, Some(b'4' | b'5'));
    ResponseKind {
        ack,
        fill,
        terminal,
        ends_original,
        reject: exec_type == Some(b'8'),
        unsolicited: false,
        venue_initiated: exec_type == Some(b'C'),
        multileg: false,
    }
}

/// Whether a MsgType is a response fixscope correlates.
pub fn is_response_type(msg_type: &[u8]) -> bool {
    msg_type == b"8" || msg_type == b"9"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_classified() {
        let ack = classify_response(b"8", Some(b'0'), Some(b'0'), None);
        assert!(ack.ack && !ack.fill && !ack.terminal && !ack.ends_original);
        let fill = classify_response(b"8", Some(b'F'), Some(b'2'), None);
        assert!(!fill.ack && fill.fill && fill.terminal);
        let partial = classify_response(b"8", Some(b'F'), Some(b'1'), None);
        assert!(partial.fill && !partial.terminal);
        let old_fill = classify_response(b"8", Some(b'2'), Some(b'2'), None);
        assert!(old_fill.fill && old_fill.terminal);
        let replaced = classify_response(b"8", Some(b'5'), Some(b'0'), None);
        assert!(replaced.ack && !replaced.terminal && replaced.ends_original);
        let reject = classify_response(b"9", None, Some(b'0'), None);
        assert!(reject.ack && reject.terminal && !reject.ends_original);
        assert!(is_response_type(b"8") && is_response_type(b"9") && !is_response_type(b"D"));
    }

    #[test]
    fn reports_that_answer_no_request() {
        // FIX 4.2: a bust, a correction and a status carrying a fill's ExecType are no fill.
        for trans in [b'1', b'2', b'3'] {
            let k = classify_response(b"8", Some(b'2'), Some(b'2'), Some(trans));
            assert!(k.unsolicited && !k.fill && !k.ack, "20={}", trans as char);
        }
        let execution = classify_response(b"8", Some(b'2'), Some(b'2'), Some(b'0'));
        assert!(execution.fill && !execution.unsolicited);
        for exec in [b'3', b'B', b'D', b'G', b'H', b'I'] {
            let k = classify_response(b"8", Some(exec), Some(b'0'), None);
            assert!(k.unsolicited && !k.fill && !k.ack, "150={}", exec as char);
        }
        let expired = classify_response(b"8", Some(b'C'), Some(b'C'), None);
        assert!(expired.venue_initiated && expired.terminal && !expired.unsolicited);
    }
}

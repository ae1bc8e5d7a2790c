//! FIX messages for tests, with a correct BodyLength and CheckSum.

/// A FIX message `8=BEGIN|9=len|35=MSG_TYPE|...|10=sum|` from `(tag, value)` fields; the
/// first field must be MsgType (35).
pub fn fix_message(begin: &str, fields: &[(u32, &str)]) -> Vec<u8> {
    let mut body = String::new();
    for (tag, value) in fields {
        body.push_str(&format!("{tag}={value}\x01"));
    }
    let mut m = format!("8={begin}\x019={}\x01{body}", body.len()).into_bytes();
    let sum: u32 = m.iter().map(|&b| u32::from(b)).sum();
    m.extend_from_slice(format!("10={:03}\x01", sum % 256).as_bytes());
    m
}

/// The FIX 4.4 ExecutionReports an exchange (`EXCH`) sends `target` for order `cl_ord_id`:
/// the ack (ExecType 0, OrdStatus 0), then the fill (ExecType F, OrdStatus 2).
pub fn ack_and_fill(target: &str, cl_ord_id: &str) -> (Vec<u8>, Vec<u8>) {
    let report = |exec_type, ord_status| {
        fix_message(
            "FIX.4.4",
            &[
                (35, "8"),
                (49, "EXCH"),
                (56, target),
                (11, cl_ord_id),
                (150, exec_type),
                (39, ord_status),
            ],
        )
    };
    (report("0", "0"), report("F", "2"))
}

/// A FIX 4.4 message of type `msg_type` with MsgSeqNum `seq` and `pad` filler bytes (tag 58).
pub fn padded_message(msg_type: &str, seq: usize, pad: usize) -> Vec<u8> {
    let seq = seq.to_string();
    let filler = "X".repeat(pad);
    fix_message(
        "FIX.4.4",
        &[
            (35, msg_type),
            (34, &seq),
            (49, "CLIENT"),
            (56, "SERVER"),
            (58, &filler),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_length_and_checksum_are_right() {
        // BodyLength 10 = "35=D|11=A|"; CheckSum computed independently (python: sum % 256).
        let m = fix_message("FIX.4.4", &[(35, "D"), (11, "A")]);
        assert_eq!(
            m,
            b"8=FIX.4.4\x019=10\x0135=D\x0111=A\x0110=196\x01".to_vec()
        );
    }
}

//! The independent check of the decoders and the encoder: real-logic's SBE tool
//! (Maven Central `uk.co.real-logic:sbe-all`) generates Java decoders from the same
//! schema/ilinkbinary.xml; tests/sbe_java/SbeCheck.java reads a file of frames written by
//! `encode` with them, and both decoders must report the same template id, SeqNum,
//! UUID, OrderRequestID, ClOrdID, OrderID, PossRetransFlag and SendingTimeEpoch of every
//! message — one of them with a root block longer than the schema's. Java and the jar
//! are required: scripts/install-deps.sh installs both; without them the test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use fixscope_ilink3::encode;
use fixscope_ilink3::messages::{Message, Report};
use fixscope_ilink3::{decode, schema};

use crate::samples;

/// The version scripts/install-deps.sh fetches.
const SBE_VERSION: &str = "1.30.0";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("{cmd:?}: {e}: install a JDK (java, javac): scripts/install-deps.sh")
    });
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn text(t: &[u8]) -> String {
    if t.is_empty() {
        "-".into()
    } else {
        String::from_utf8_lossy(t).into()
    }
}

/// What our decoder reads of a frame, in SbeCheck's line format.
fn ours(frame: &[u8]) -> String {
    let m = decode(frame).expect("our frames decode");
    let id = fixscope_ilink3::sbe::header(frame).unwrap().template_id;
    let dash = || "-".to_string();
    let fields: [String; 7] = match m {
        Message::NewOrder(r) | Message::Replace(r) | Message::Cancel(r) => [
            r.seq_num.to_string(),
            dash(),
            r.order_request_id.to_string(),
            text(r.cl_ord_id),
            opt(r.order_id),
            dash(),
            opt(r.sending_time_ns),
        ],
        Message::Report(r) => [
            r.seq_num.to_string(),
            r.uuid.to_string(),
            opt(r.order_request_id),
            text(r.cl_ord_id),
            opt(r.order_id),
            u8::from(r.poss_retrans).to_string(),
            opt(r.sending_time_ns),
        ],
        Message::BusinessReject(b) => [
            b.seq_num.to_string(),
            b.uuid.to_string(),
            dash(),
            dash(),
            dash(),
            u8::from(b.poss_retrans).to_string(),
            opt(b.sending_time_ns),
        ],
        Message::Negotiate(s)
        | Message::NegotiationResponse(s)
        | Message::NegotiationReject(s)
        | Message::Establish(s)
        | Message::EstablishmentAck(s)
        | Message::EstablishmentReject(s)
        | Message::Sequence(s)
        | Message::Terminate(s)
        | Message::RetransmitRequest(s)
        | Message::Retransmission(s)
        | Message::RetransmitReject(s)
        | Message::NotApplied(s) => [
            dash(),
            s.uuid.to_string(),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
        ],
        Message::Other { .. } => panic!("the sample has only templates read"),
    };
    format!("{id} {}", fields.join(" "))
}

/// Every sample message of both sides, plus a later version's longer blocks and a
/// replayed report.
fn frames() -> Vec<Vec<u8>> {
    let mut all = samples::client_stream();
    all.extend(samples::host_stream());
    all.push(
        encode::request_builder(514, &samples::request(40, 4040, None))
            .block_length(usize::from(schema::new_order_single_514::BLOCK_LENGTH) + 16)
            .finish(),
    );
    let trade = samples::report(525, 41, Some(4040), 7040, 2);
    all.push(encode::report_builder(&trade).block_length(330).finish());
    all.push(encode::report(&Report {
        poss_retrans: true,
        ..samples::report(522, 3, Some(4041), 7041, 10)
    }));
    all
}

#[test]
fn the_sbe_tools_decoders_read_our_frames_as_ours_do() {
    let jar = repo().join(format!("target/interop/sbe-all-{SBE_VERSION}.jar"));
    assert!(
        jar.exists(),
        "{} is missing: run scripts/install-deps.sh (it fetches uk.co.real-logic:sbe-all:{SBE_VERSION} \
         from Maven Central with mvn; needs java, javac and maven)",
        jar.display()
    );
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ilink3_sbe_tool");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let schema_xml = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/ilinkbinary.xml");
    let generated = work.join("gen");
    run(Command::new("java")
        .arg(format!("-Dsbe.output.dir={}", generated.display()))
        .arg("-Dsbe.target.language=Java")
        .arg("-Dsbe.validation.stop.on.error=true")
        .arg("-jar")
        .arg(&jar)
        .arg(&schema_xml));
    let mut sources: Vec<PathBuf> = std::fs::read_dir(generated.join("iLinkBinary"))
        .expect("the SBE tool wrote package iLinkBinary")
        .map(|e| e.unwrap().path())
        .collect();
    sources.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sbe_java/SbeCheck.java"));
    let classes = work.join("classes");
    run(Command::new("javac")
        .arg("-nowarn")
        .arg("-cp")
        .arg(&jar)
        .arg("-d")
        .arg(&classes)
        .args(&sources));
    let frames = frames();
    let input = work.join("frames.bin");
    std::fs::write(&input, frames.concat()).unwrap();
    let classpath = format!("{}:{}", classes.display(), jar.display());
    let names = schema::TEMPLATES.iter().map(|t| t.name);
    let theirs = run(Command::new("java")
        .arg("-cp")
        .arg(&classpath)
        .arg("SbeCheck")
        .arg(&input)
        .args(names));
    let ours: Vec<String> = frames.iter().map(|f| ours(f)).collect();
    let theirs: Vec<&str> = theirs.lines().collect();
    assert_eq!(theirs.len(), frames.len(), "one line per message");
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        assert_eq!(
            t, o,
            "message {i}: the SBE tool's decoders (left) and ours (right)"
        );
    }
    eprintln!("{} messages read alike by both decoders, e.g.", ours.len());
    for line in theirs.iter().step_by(6) {
        eprintln!("  {line}");
    }
}

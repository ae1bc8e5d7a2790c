//! The independent check of the decoders and the encoder: real-logic's SBE tool
//! (Maven Central `uk.co.real-logic:sbe-all`) generates Java decoders from the same
//! schema/FixBinary.xml; tests/sbe_java/SbeCheck.java reads a file of messages written by
//! `encode` with them, and both decoders must report the same template id of every
//! message, and of every MDIncrementalRefreshBook46 and TradeSummary48 entry its
//! SecurityID, RptSeq, MDEntryPx mantissa, MDEntrySize and MDUpdateAction, and the count
//! of the NoOrderIDEntries group after them — including a message whose root block is
//! longer than the schema's and groups whose entries are longer. Java and the jar are
//! required: scripts/install-deps.sh installs both; without them the test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use fixscope_mdp3::{decode, encode, schema, Message};

use super::samples::{book_entry, trade_entry};

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

/// What our decoder reads of a message, in SbeCheck's line format.
fn ours(message: &[u8]) -> String {
    let m = decode(message).expect("our messages decode");
    let id = fixscope_mdp3::sbe::header(message).unwrap().template_id;
    let mut out = format!("T {id}\n");
    let dash = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    match m {
        Message::Book(b) => {
            for e in b.entries {
                out += &format!(
                    "E {} {} {} {} {}\n",
                    e.security_id,
                    e.rpt_seq,
                    dash(e.md_entry_px),
                    dash(e.md_entry_size.map(i64::from)),
                    e.md_update_action
                );
            }
            out += &format!("O {}\n", b.order_id_entries);
        }
        Message::TradeSummary(t) => {
            for e in t.entries {
                out += &format!(
                    "E {} {} {} {} {}\n",
                    e.security_id, e.rpt_seq, e.md_entry_px, e.md_entry_size, e.md_update_action
                );
            }
            out += &format!("O {}\n", t.order_id_entries);
        }
        _ => {}
    }
    out
}

/// Books and trades of several instruments (negative prices, null prices and sizes),
/// a later version's longer root block and entries, and the other templates read.
fn messages() -> Vec<Vec<u8>> {
    use schema::md_incremental_refresh_book_46 as b46;
    use schema::md_incremental_refresh_trade_summary_48 as t48;
    let book = [
        book_entry(1001, 7, Some(4_512_250_000_000)),
        book_entry(1002, 1, Some(-1_250_000_000)),
        book_entry(1001, 8, None),
        book_entry(-5, u32::MAX, Some(i64::MIN + 1)),
    ];
    let trades = [trade_entry(1001, 9), trade_entry(77, 3)];
    vec![
        encode::book(1, &book),
        encode::book_builder(2, 0x84, &book[..2], &[11, 12, 13]).finish(),
        // A later version: root block 8 bytes longer, entries 8 longer, orders 4 longer.
        encode::book_builder(3, 0x84, &book, &[21])
            .block_length(usize::from(b46::BLOCK_LENGTH) + 8)
            .group_block_length(b46::no_md_entries::INDEX, 40)
            .group_block_length(b46::no_order_id_entries::INDEX, 28)
            .finish(),
        encode::trade_summary(4, &trades),
        encode::trade_summary_builder(5, &trades, &[(31, 5), (32, 2)])
            .block_length(usize::from(t48::BLOCK_LENGTH) + 5)
            .group_block_length(t48::no_md_entries::INDEX, 36)
            .finish(),
        encode::book(6, &[]),
        encode::heartbeat(),
        encode::channel_reset(7, 310),
        encode::security_status(8, b"ES", Some(1001), 17),
        encode::instrument_definition_future(1001, b"ESZ6", b"ES"),
        encode::snapshot_full_refresh(99, 1001, 8, 9),
        encode::volume(10, &[]),
        encode::order_book(11, &[]),
    ]
}

#[test]
fn the_sbe_tools_decoders_read_our_messages_as_ours_do() {
    let jar = repo().join(format!("target/interop/sbe-all-{SBE_VERSION}.jar"));
    assert!(
        jar.exists(),
        "{} is missing: run scripts/install-deps.sh (it fetches uk.co.real-logic:sbe-all:{SBE_VERSION} \
         from Maven Central with mvn; needs java, javac and maven)",
        jar.display()
    );
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdp3_sbe_tool");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let schema_xml = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/FixBinary.xml");
    let generated = work.join("gen");
    run(Command::new("java")
        .arg(format!("-Dsbe.output.dir={}", generated.display()))
        .arg("-Dsbe.target.language=Java")
        .arg("-Dsbe.validation.stop.on.error=true")
        .arg("-jar")
        .arg(&jar)
        .arg(&schema_xml));
    let mut sources: Vec<PathBuf> = std::fs::read_dir(generated.join("mktdata"))
        .expect("the SBE tool wrote package mktdata")
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
    let messages = messages();
    let input = work.join("messages.bin");
    std::fs::write(&input, messages.concat()).unwrap();
    let classpath = format!("{}:{}", classes.display(), jar.display());
    let theirs = run(Command::new("java")
        .arg("-cp")
        .arg(&classpath)
        .arg("SbeCheck")
        .arg(&input));
    let ours: String = messages.iter().map(|m| ours(m)).collect();
    let (t, o): (Vec<&str>, Vec<&str>) = (theirs.lines().collect(), ours.lines().collect());
    assert_eq!(
        t.iter().filter(|l| l.starts_with('T')).count(),
        messages.len(),
        "one T line per message: {theirs}"
    );
    for (i, (t, o)) in t.iter().zip(&o).enumerate() {
        assert_eq!(
            t, o,
            "line {i}: the SBE tool's decoders (left) and ours (right)"
        );
    }
    assert_eq!(t.len(), o.len(), "as many lines");
    eprintln!(
        "{} messages, {} lines read alike by both decoders, e.g.",
        messages.len(),
        t.len()
    );
    for line in t.iter().take(8) {
        eprintln!("  {line}");
    }
}

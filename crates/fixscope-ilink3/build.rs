//! Generates the decoders' layout tables from CME's iLink 3 schema (schema/ilinkbinary.xml):
//! for every template of the schema its id, name and root block length, and for the
//! templates the crate reads, each field it reads with the field's offset, primitive size,
//! sinceVersion and null value. Nothing in `src/` writes an offset by hand; a field the
//! code asks of a template that has none does not compile.
//!
//! Output: `$OUT_DIR/schema.rs`, `include!`d by `src/schema.rs`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The fields read of each template the crate reads. A field the template lacks, or
/// whose value is a schema constant (OrdStatus, ExecType on most execution reports), is
/// skipped: the code reading it would not compile, which is how the choice is checked.
const READ: &[(&str, &[&str])] = &[
    ("Negotiate500", &["UUID", "RequestTimestamp", "Firm"]),
    ("NegotiationResponse501", &["UUID", "RequestTimestamp"]),
    (
        "NegotiationReject502",
        &["UUID", "RequestTimestamp", "ErrorCodes"],
    ),
    (
        "Establish503",
        &["UUID", "RequestTimestamp", "NextSeqNo", "Firm"],
    ),
    (
        "EstablishmentAck504",
        &[
            "UUID",
            "RequestTimestamp",
            "NextSeqNo",
            "PreviousSeqNo",
            "PreviousUUID",
        ],
    ),
    (
        "EstablishmentReject505",
        &["UUID", "RequestTimestamp", "NextSeqNo", "ErrorCodes"],
    ),
    ("Sequence506", &["UUID", "NextSeqNo"]),
    ("Terminate507", &["UUID", "RequestTimestamp", "ErrorCodes"]),
    ("RetransmitRequest508", RETRANSMIT),
    ("Retransmission509", RETRANSMIT),
    (
        "RetransmitReject510",
        &["UUID", "LastUUID", "RequestTimestamp", "ErrorCodes"],
    ),
    ("NotApplied513", &["UUID", "FromSeqNo", "MsgCount"]),
    ("NewOrderSingle514", REQUEST),
    ("OrderCancelReplaceRequest515", REQUEST),
    ("OrderCancelRequest516", REQUEST),
    (
        "BusinessReject521",
        &[
            "SeqNum",
            "UUID",
            "SendingTimeEpoch",
            "RefSeqNum",
            "PossRetransFlag",
        ],
    ),
    ("ExecutionReportNew522", REPORT),
    ("ExecutionReportReject523", REPORT),
    ("ExecutionReportElimination524", REPORT),
    ("ExecutionReportTradeOutright525", REPORT),
    ("ExecutionReportTradeSpread526", REPORT),
    ("ExecutionReportTradeSpreadLeg527", REPORT),
    ("ExecutionReportModify531", REPORT),
    ("ExecutionReportStatus532", REPORT),
    ("ExecutionReportCancel534", REPORT),
    ("OrderCancelReject535", REPORT),
    ("OrderCancelReplaceReject536", REPORT),
    ("ExecutionReportPendingCancel564", REPORT),
    ("ExecutionReportPendingReplace565", REPORT),
];

const RETRANSMIT: &[&str] = &[
    "UUID",
    "LastUUID",
    "RequestTimestamp",
    "FromSeqNo",
    "MsgCount",
];

const REQUEST: &[&str] = &[
    "Price",
    "OrderQty",
    "SecurityID",
    "Side",
    "SeqNum",
    "ClOrdID",
    "OrderID",
    "OrderRequestID",
    "SendingTimeEpoch",
];

const REPORT: &[&str] = &[
    "SeqNum",
    "UUID",
    "ClOrdID",
    "OrderID",
    "OrderRequestID",
    "PossRetransFlag",
    "SendingTimeEpoch",
    "TransactTime",
    "LeavesQty",
    "CumQty",
    "LastQty",
    "OrdStatus",
    // Appended in schema version 4 (ExecutionReportNew522 and others): what the
    // version rule (sinceVersion) is tested on.
    "DelayToTime",
];

/// The layout struct (src/schema.rs) a field set fills, each of its fields `Some` when
/// the template has it: one decoder reads every execution report, one every request.
fn layout_of(fields: &[&str]) -> Option<&'static str> {
    if fields == REPORT {
        Some("ReportLayout")
    } else if fields == REQUEST {
        Some("RequestLayout")
    } else {
        None
    }
}

/// An encoded type: its size on the wire and its null value (as the bits of a u64, of
/// the first primitive of a composite), if optional.
#[derive(Clone, Copy)]
struct Encoding {
    size: usize,
    null: Option<u64>,
    constant: bool,
}

fn primitive_size(p: &str) -> usize {
    match p {
        "char" | "int8" | "uint8" => 1,
        "int16" | "uint16" => 2,
        "int32" | "uint32" | "float" => 4,
        "int64" | "uint64" | "double" => 8,
        other => panic!("ilinkbinary.xml: unknown primitive type {other}"),
    }
}

/// SBE's default null of an optional primitive without a nullValue attribute.
fn default_null(p: &str) -> u64 {
    match p {
        "char" => 0,
        "int8" => i8::MIN as u8 as u64,
        "uint8" => u8::MAX as u64,
        "int16" => i16::MIN as u16 as u64,
        "uint16" => u16::MAX as u64,
        "int32" => i32::MIN as u32 as u64,
        "uint32" => u32::MAX as u64,
        "int64" => i64::MIN as u64,
        _ => u64::MAX,
    }
}

/// A nullValue attribute as the bits of a u64 of the primitive's width.
fn null_bits(text: &str, p: &str) -> u64 {
    if p.starts_with('u') || p == "char" {
        return text
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("nullValue {text}"));
    }
    let v: i64 = text.parse().unwrap_or_else(|_| panic!("nullValue {text}"));
    let bits = 8 * primitive_size(p) as u32;
    (v as u64) & (u64::MAX >> (64 - bits))
}

/// A `<type>`: its encoding.
fn simple_type(t: roxmltree::Node<'_, '_>) -> Encoding {
    let p = t.attribute("primitiveType").expect("primitiveType");
    let length: usize = t
        .attribute("length")
        .map_or(1, |l| l.parse().expect("length"));
    let presence = t.attribute("presence").unwrap_or("required");
    let null = match presence {
        "optional" => Some(
            t.attribute("nullValue")
                .map_or_else(|| default_null(p), |n| null_bits(n, p)),
        ),
        _ => None,
    };
    Encoding {
        size: primitive_size(p) * length,
        null,
        constant: presence == "constant",
    }
}

/// Every named type of the schema's `<types>`: primitives, enums and sets (by their
/// encoding type) and composites (the sum of their non-constant members; the null of
/// the first member, the mantissa of a price).
fn types(doc: &roxmltree::Document<'_>) -> HashMap<String, Encoding> {
    let mut out = HashMap::new();
    for p in [
        "char", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    ] {
        out.insert(
            p.to_string(),
            Encoding {
                size: primitive_size(p),
                null: None,
                constant: false,
            },
        );
    }
    let types = doc
        .descendants()
        .find(|n| n.has_tag_name("types"))
        .expect("<types>");
    let named = |n: roxmltree::Node<'_, '_>| n.attribute("name").expect("name").to_string();
    for t in types.children().filter(|n| n.has_tag_name("type")) {
        out.insert(named(t), simple_type(t));
    }
    for c in types.children().filter(|n| n.has_tag_name("composite")) {
        let members: Vec<Encoding> = c
            .children()
            .filter(|n| n.has_tag_name("type"))
            .map(simple_type)
            .collect();
        let size = members.iter().filter(|m| !m.constant).map(|m| m.size).sum();
        out.insert(
            named(c),
            Encoding {
                size,
                null: members.first().and_then(|m| m.null),
                constant: false,
            },
        );
    }
    // Enums and sets after the plain types they are encoded as.
    for e in types
        .children()
        .filter(|n| n.has_tag_name("enum") || n.has_tag_name("set"))
    {
        let enc = e.attribute("encodingType").expect("encodingType");
        let base = *out
            .get(enc)
            .unwrap_or_else(|| panic!("encodingType {enc} of {}", named(e)));
        out.insert(named(e), base);
    }
    out
}

/// `OrderRequestID` → `ORDER_REQUEST_ID`, `ExecutionReportNew522` →
/// `execution_report_new_522` (upper: false).
fn snake(name: &str, upper: bool) -> String {
    let c: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &ch) in c.iter().enumerate() {
        if i > 0 {
            let prev = c[i - 1];
            let next_lower = c.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let boundary = (ch.is_ascii_uppercase()
                && (prev.is_ascii_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_ascii_uppercase() && next_lower)))
                || (ch.is_ascii_digit() && prev.is_ascii_alphabetic());
            if boundary {
                out.push('_');
            }
        }
        if upper {
            out.push(ch.to_ascii_uppercase());
        } else {
            out.push(ch.to_ascii_lowercase());
        }
    }
    out
}

/// The root fields of `m` that are on the wire, with their offsets and encodings.
fn root_fields<'a>(
    m: roxmltree::Node<'a, '_>,
    types: &HashMap<String, Encoding>,
) -> Vec<(&'a str, usize, Encoding, u16)> {
    let mut running = 0usize;
    let mut out = Vec::new();
    for f in m.children().filter(|n| n.has_tag_name("field")) {
        let fname = f.attribute("name").expect("field name");
        let ftype = f.attribute("type").expect("field type");
        let enc = *types
            .get(ftype)
            .unwrap_or_else(|| panic!("{fname}: type {ftype} unknown"));
        if enc.constant || f.attribute("presence") == Some("constant") {
            continue;
        }
        let offset = f
            .attribute("offset")
            .map_or(running, |o| o.parse().expect("offset"));
        running = offset + enc.size;
        let since: u16 = f
            .attribute("sinceVersion")
            .map_or(0, |v| v.parse().expect("sinceVersion"));
        out.push((fname, offset, enc, since));
    }
    out
}

fn field_literal(name: &str, offset: usize, enc: Encoding, since: u16) -> String {
    let null = enc
        .null
        .map_or("None".to_string(), |n| format!("Some({n})"));
    format!(
        "Field {{ name: {name:?}, offset: {offset}, size: {}, since_version: {since}, null: {null} }}",
        enc.size
    )
}

/// Every template whose root block has SeqNum and UUID — CME's business messages (the
/// client's carry no UUID) — with where those and PossRetransFlag are: the numbering
/// of a UUID counts the templates the order layer does not read too.
fn sequenced(
    out: &mut String,
    messages: &[roxmltree::Node<'_, '_>],
    types: &HashMap<String, Encoding>,
) {
    writeln!(
        out,
        "/// CME business templates: SeqNum, UUID, PossRetransFlag of each."
    )
    .unwrap();
    writeln!(out, "pub const SEQUENCED: &[Sequenced] = &[").unwrap();
    for m in messages {
        let fields = root_fields(*m, types);
        let find = |n: &str| {
            fields
                .iter()
                .find(|f| f.0 == n)
                .map(|&(name, offset, enc, since)| field_literal(name, offset, enc, since))
        };
        let (Some(seq), Some(uuid)) = (find("SeqNum"), find("UUID")) else {
            continue;
        };
        let poss = find("PossRetransFlag").map_or("None".to_string(), |f| format!("Some({f})"));
        writeln!(
            out,
            "    Sequenced {{ id: {}, seq_num: {seq}, uuid: {uuid}, poss_retrans_flag: {poss} }},",
            m.attribute("id").expect("id")
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
}

/// What follows each template's root block, in order: its top-level repeating groups
/// (with their own block length) and var data, for the encoder's empty messages. Both
/// dimension encodings are checked to be what the encoder writes: groupSize (blockLength
/// u16, numInGroup u8) and DATA (length u16).
fn tails(
    out: &mut String,
    messages: &[roxmltree::Node<'_, '_>],
    types: &HashMap<String, Encoding>,
) {
    assert_eq!(
        types["groupSize"].size, 3,
        "groupSize: blockLength u16 + numInGroup u8"
    );
    writeln!(
        out,
        "/// (template id, group block length, is a group: else var data)."
    )
    .unwrap();
    writeln!(out, "pub const TAILS: &[(u16, u16, bool)] = &[").unwrap();
    for m in messages {
        let id = m.attribute("id").expect("id");
        for c in m.children() {
            if c.has_tag_name("group") {
                let dim = c.attribute("dimensionType").unwrap_or("groupSize");
                assert_eq!(dim, "groupSize", "template {id}: group dimension {dim}");
                let block = c.attribute("blockLength").expect("group blockLength");
                writeln!(out, "    ({id}, {block}, true),").unwrap();
            } else if c.has_tag_name("data") {
                let t = c.attribute("type").expect("data type");
                assert_eq!(t, "DATA", "template {id}: var data type {t}");
                writeln!(out, "    ({id}, 0, false),").unwrap();
            }
        }
    }
    writeln!(out, "];").unwrap();
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let path = manifest.join("schema/ilinkbinary.xml");
    println!("cargo:rerun-if-changed={}", path.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&path).expect("schema/ilinkbinary.xml");
    let doc = roxmltree::Document::parse(&text).expect("ilinkbinary.xml parses");
    let root = doc.root_element();
    let types = types(&doc);
    let mut out = String::new();
    let schema_id = root.attribute("id").expect("schema id");
    let version = root.attribute("version").expect("schema version");
    let order = root.attribute("byteOrder").unwrap_or("littleEndian");
    assert_eq!(order, "littleEndian", "the decoders read little-endian");
    writeln!(out, "/// The schema's id (`messageSchema id`).").unwrap();
    writeln!(out, "pub const SCHEMA_ID: u16 = {schema_id};").unwrap();
    writeln!(out, "/// The schema's version (`messageSchema version`).").unwrap();
    writeln!(out, "pub const SCHEMA_VERSION: u16 = {version};").unwrap();
    let messages: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("message"))
        .collect();
    writeln!(out, "/// Every template of the schema.").unwrap();
    writeln!(out, "pub const TEMPLATES: &[Template] = &[").unwrap();
    for m in &messages {
        writeln!(
            out,
            "    Template {{ id: {}, name: {:?}, block_length: {} }},",
            m.attribute("id").expect("id"),
            m.attribute("name").expect("name"),
            m.attribute("blockLength").expect("blockLength"),
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
    sequenced(&mut out, &messages, &types);
    tails(&mut out, &messages, &types);
    for (name, fields) in READ {
        let m = messages
            .iter()
            .find(|m| m.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("template {name} is not in the schema"));
        writeln!(out, "/// `{name}`'s layout (schema/ilinkbinary.xml).").unwrap();
        writeln!(out, "pub mod {} {{", snake(name, false)).unwrap();
        writeln!(out, "    use super::Field;").unwrap();
        writeln!(
            out,
            "    pub const ID: u16 = {};",
            m.attribute("id").unwrap()
        )
        .unwrap();
        writeln!(out, "    pub const NAME: &str = {name:?};").unwrap();
        writeln!(
            out,
            "    pub const BLOCK_LENGTH: u16 = {};",
            m.attribute("blockLength").unwrap()
        )
        .unwrap();
        // Root fields only: groups and var data follow the root block (FIX SBE), and no
        // field read is in one.
        let mut present: Vec<(String, String)> = Vec::new();
        for (fname, offset, enc, since) in root_fields(*m, &types) {
            if !fields.contains(&fname) {
                continue;
            }
            let field = field_literal(fname, offset, enc, since);
            writeln!(
                out,
                "    pub const {}: Field = {field};",
                snake(fname, true)
            )
            .unwrap();
            present.push((fname.to_string(), field));
        }
        if let Some(layout) = layout_of(fields) {
            writeln!(
                out,
                "    pub const LAYOUT: super::{layout} = super::{layout} {{"
            )
            .unwrap();
            for wanted in *fields {
                let value = present
                    .iter()
                    .find(|(n, _)| n == wanted)
                    .map_or("None".to_string(), |(_, f)| format!("Some({f})"));
                writeln!(out, "        {}: {value},", snake(wanted, false)).unwrap();
            }
            writeln!(out, "    }};").unwrap();
        }
        writeln!(out, "}}").unwrap();
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("schema.rs");
    std::fs::write(dest, out).expect("write schema.rs");
}

//! Generates the decoders' layout tables from CME's MDP 3.0 schema (schema/FixBinary.xml):
//! every template's id, name and root block length; the two repeating-group dimension
//! composites (`groupSize`, `groupSize8Byte`) with their members' offsets; and for the
//! templates the crate reads, each root field and each repeating group it reads — the
//! group's entry block length and dimension, and each entry field with its offset
//! *within the entry* — with size, sinceVersion and null value. Nothing in `src/` writes an
//! offset by hand; a field the code asks of a template that has none does not compile.
//!
//! Two tables are derived from the schema rather than listed: every template whose
//! first group (NoMDEntries) carries SecurityID and RptSeq (the per-instrument sequence
//! the channel tracker follows, whichever message type carries it), and every instrument
//! definition (a root block with SecurityID and Symbol).
//!
//! Output: `$OUT_DIR/schema.rs`, `include!`d by `src/schema.rs`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

type GroupRead = (&'static str, &'static [&'static str]);

/// The root fields and group entry fields read of each template the crate reads. A
/// field whose value is a schema constant (MDEntryType of a trade summary) has no bytes
/// and is not generated: code reading it would not compile.
const READ: &[(&str, &[&str], &[GroupRead])] = &[
    (
        "ChannelReset4",
        &["TransactTime", "MatchEventIndicator"],
        &[("NoMDEntries", &["ApplID"])],
    ),
    ("AdminHeartbeat12", &[], &[]),
    (
        "SecurityStatus30",
        &[
            "TransactTime",
            "SecurityGroup",
            "Asset",
            "SecurityID",
            "MatchEventIndicator",
            "SecurityTradingStatus",
            "HaltReason",
            "SecurityTradingEvent",
        ],
        &[],
    ),
    (
        "MDIncrementalRefreshVolume37",
        &["TransactTime", "MatchEventIndicator"],
        &[(
            "NoMDEntries",
            &["MDEntrySize", "SecurityID", "RptSeq", "MDUpdateAction"],
        )],
    ),
    (
        "MDIncrementalRefreshBook46",
        &["TransactTime", "MatchEventIndicator"],
        &[
            (
                "NoMDEntries",
                &[
                    "MDEntryPx",
                    "MDEntrySize",
                    "SecurityID",
                    "RptSeq",
                    "NumberOfOrders",
                    "MDPriceLevel",
                    "MDUpdateAction",
                    "MDEntryType",
                ],
            ),
            ("NoOrderIDEntries", &["OrderID", "ReferenceID"]),
        ],
    ),
    (
        "MDIncrementalRefreshOrderBook47",
        &["TransactTime", "MatchEventIndicator"],
        &[(
            "NoMDEntries",
            &[
                "OrderID",
                "MDOrderPriority",
                "MDEntryPx",
                "MDDisplayQty",
                "SecurityID",
                "MDUpdateAction",
                "MDEntryType",
            ],
        )],
    ),
    (
        "MDIncrementalRefreshTradeSummary48",
        &["TransactTime", "MatchEventIndicator"],
        &[
            (
                "NoMDEntries",
                &[
                    "MDEntryPx",
                    "MDEntrySize",
                    "SecurityID",
                    "RptSeq",
                    "NumberOfOrders",
                    "AggressorSide",
                    "MDUpdateAction",
                    "MDTradeEntryID",
                ],
            ),
            ("NoOrderIDEntries", &["OrderID", "LastQty"]),
        ],
    ),
    (
        "SnapshotFullRefresh52",
        &[
            "LastMsgSeqNumProcessed",
            "TotNumReports",
            "SecurityID",
            "RptSeq",
            "TransactTime",
        ],
        &[("NoMDEntries", &[])],
    ),
    (
        "MDInstrumentDefinitionFuture54",
        &[
            "SecurityUpdateAction",
            "SecurityGroup",
            "Asset",
            "Symbol",
            "SecurityID",
        ],
        &[],
    ),
];

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
        other => panic!("FixBinary.xml: unknown primitive type {other}"),
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

/// A composite's members on the wire: (name, offset, encoding), constants left out, an
/// `offset` attribute honoured (groupSize8Byte's numInGroup sits at 7, after padding).
fn composite_members<'a>(c: roxmltree::Node<'a, '_>) -> Vec<(&'a str, usize, Encoding)> {
    let mut running = 0;
    let mut out = Vec::new();
    for m in c.children().filter(|n| n.has_tag_name("type")) {
        let enc = simple_type(m);
        if enc.constant {
            continue;
        }
        let offset = m
            .attribute("offset")
            .map_or(running, |o| o.parse().expect("offset"));
        running = offset + enc.size;
        out.push((m.attribute("name").expect("name"), offset, enc));
    }
    out
}

/// Every named type of the schema's `<types>`: primitives, enums and sets (by their
/// encoding type) and composites (their encoded length; the null of the first member,
/// the mantissa of a price).
fn types(doc: &roxmltree::Document<'_>) -> HashMap<String, Encoding> {
    let mut out = HashMap::new();
    for p in [
        "char", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    ] {
        let enc = Encoding {
            size: primitive_size(p),
            null: None,
            constant: false,
        };
        out.insert(p.to_string(), enc);
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
        let members = composite_members(c);
        let size = members
            .iter()
            .map(|(_, o, e)| o + e.size)
            .max()
            .unwrap_or(0);
        let null = members.first().and_then(|m| m.2.null);
        let enc = Encoding {
            size,
            null,
            constant: false,
        };
        out.insert(named(c), enc);
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

/// `SecurityID` → `SECURITY_ID`, `MDIncrementalRefreshBook46` →
/// `md_incremental_refresh_book_46` (upper: false).
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

type FieldRow<'a> = (&'a str, usize, Encoding, u16);

/// The `<field>`s directly under `node` (a message's root block or a group's entry) that
/// are on the wire, with their offsets (from the block's start) and encodings.
fn fields<'a>(
    node: roxmltree::Node<'a, '_>,
    types: &HashMap<String, Encoding>,
) -> Vec<FieldRow<'a>> {
    let mut running = 0usize;
    let mut out = Vec::new();
    for f in node.children().filter(|n| n.has_tag_name("field")) {
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

fn find<'a>(rows: &[FieldRow<'a>], name: &str) -> Option<String> {
    rows.iter()
        .find(|r| r.0 == name)
        .map(|&(n, o, e, s)| field_literal(n, o, e, s))
}

/// A `<group>`'s literal: its entry block length, dimension composite and sinceVersion.
fn group_literal(g: roxmltree::Node<'_, '_>) -> String {
    let dim = g.attribute("dimensionType").unwrap_or("groupSize");
    let since: u16 = g
        .attribute("sinceVersion")
        .map_or(0, |v| v.parse().expect("sinceVersion"));
    format!(
        "Group {{ name: {:?}, block_length: {}, dimension: {}, since_version: {since} }}",
        g.attribute("name").expect("group name"),
        g.attribute("blockLength").expect("group blockLength"),
        snake(dim, true),
    )
}

/// The dimension composites, checked to be what the decoder reads: blockLength u16 at 0,
/// numInGroup u8 (at 2 in groupSize, 7 in groupSize8Byte).
fn dimensions(out: &mut String, doc: &roxmltree::Document<'_>) {
    for name in ["groupSize", "groupSize8Byte"] {
        let c = doc
            .descendants()
            .find(|n| n.has_tag_name("composite") && n.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("composite {name}"));
        let members = composite_members(c);
        let member = |m: &str| {
            members
                .iter()
                .find(|r| r.0 == m)
                .map(|&(n, o, e)| field_literal(n, o, e, 0))
                .unwrap_or_else(|| panic!("{name}.{m}"))
        };
        let size = members
            .iter()
            .map(|(_, o, e)| o + e.size)
            .max()
            .unwrap_or(0);
        let sizes: Vec<usize> = members.iter().map(|m| m.2.size).collect();
        assert_eq!(sizes, [2, 1], "{name}: blockLength u16, numInGroup u8");
        writeln!(out, "/// The `{name}` composite (schema/FixBinary.xml).").unwrap();
        writeln!(
            out,
            "pub const {}: Dimension = Dimension {{ name: {name:?}, size: {size}, block_length: {}, num_in_group: {} }};",
            snake(name, true),
            member("blockLength"),
            member("numInGroup"),
        )
        .unwrap();
    }
}

/// Every template whose first group is NoMDEntries with SecurityID and RptSeq in its
/// entries: where those are.
fn rpt_seq_table(
    out: &mut String,
    messages: &[roxmltree::Node<'_, '_>],
    types: &HashMap<String, Encoding>,
) {
    writeln!(
        out,
        "/// Templates whose NoMDEntries entries carry SecurityID and RptSeq."
    )
    .unwrap();
    writeln!(out, "pub const RPT_SEQ: &[RptSeqLayout] = &[").unwrap();
    for m in messages {
        let Some(g) = m.children().find(|n| n.has_tag_name("group")) else {
            continue;
        };
        if g.attribute("name") != Some("NoMDEntries") {
            continue;
        }
        let rows = fields(g, types);
        let (Some(sid), Some(rpt)) = (find(&rows, "SecurityID"), find(&rows, "RptSeq")) else {
            continue;
        };
        writeln!(
            out,
            "    RptSeqLayout {{ template_id: {}, group: {}, security_id: {sid}, rpt_seq: {rpt} }},",
            m.attribute("id").expect("id"),
            group_literal(g),
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
}

/// Every template whose root block has SecurityID and Symbol: an instrument definition.
fn definition_table(
    out: &mut String,
    messages: &[roxmltree::Node<'_, '_>],
    types: &HashMap<String, Encoding>,
) {
    writeln!(
        out,
        "/// Instrument definition templates (SecurityID and Symbol in the root)."
    )
    .unwrap();
    writeln!(out, "pub const DEFINITIONS: &[DefinitionLayout] = &[").unwrap();
    for m in messages {
        let rows = fields(*m, types);
        let (Some(sid), Some(sym)) = (find(&rows, "SecurityID"), find(&rows, "Symbol")) else {
            continue;
        };
        let opt = |n: &str| find(&rows, n).map_or("None".into(), |f| format!("Some({f})"));
        writeln!(
            out,
            "    DefinitionLayout {{ template_id: {}, security_id: {sid}, symbol: {sym}, security_group: {}, security_update_action: {} }},",
            m.attribute("id").expect("id"),
            opt("SecurityGroup"),
            opt("SecurityUpdateAction"),
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
}

/// One read template's module: id, name, block length, root fields, groups in wire
/// order (`GROUPS`) and a module per group read with its entry fields.
fn template_module(
    out: &mut String,
    m: roxmltree::Node<'_, '_>,
    root: &[&str],
    groups: &[GroupRead],
    types: &HashMap<String, Encoding>,
) {
    let name = m.attribute("name").unwrap();
    writeln!(out, "/// `{name}`'s layout (schema/FixBinary.xml).").unwrap();
    writeln!(out, "pub mod {} {{", snake(name, false)).unwrap();
    writeln!(out, "    use super::*;").unwrap();
    writeln!(
        out,
        "    pub const ID: u16 = {};",
        m.attribute("id").unwrap()
    )
    .unwrap();
    writeln!(out, "    pub const NAME: &str = {name:?};").unwrap();
    let block = m.attribute("blockLength").unwrap();
    writeln!(out, "    pub const BLOCK_LENGTH: u16 = {block};").unwrap();
    let rows = fields(m, types);
    for f in root {
        let lit = find(&rows, f).unwrap_or_else(|| panic!("{name}: no field {f} on the wire"));
        writeln!(out, "    pub const {}: Field = {lit};", snake(f, true)).unwrap();
    }
    let all: Vec<_> = m.children().filter(|n| n.has_tag_name("group")).collect();
    let lits: Vec<String> = all.iter().map(|g| group_literal(*g)).collect();
    writeln!(out, "    /// Every group of the template, in wire order.").unwrap();
    writeln!(
        out,
        "    pub const GROUPS: &[Group] = &[{}];",
        lits.join(", ")
    )
    .unwrap();
    for (gname, gfields) in groups {
        let (i, g) = all
            .iter()
            .enumerate()
            .find(|(_, g)| g.attribute("name") == Some(gname))
            .unwrap_or_else(|| panic!("{name}: no group {gname}"));
        writeln!(out, "    pub mod {} {{", snake(gname, false)).unwrap();
        writeln!(out, "        use super::super::*;").unwrap();
        writeln!(out, "        /// Its place among the template's groups.").unwrap();
        writeln!(out, "        pub const INDEX: usize = {i};").unwrap();
        writeln!(out, "        pub const GROUP: Group = {};", lits[i]).unwrap();
        let rows = fields(*g, types);
        for f in *gfields {
            let lit = find(&rows, f).unwrap_or_else(|| panic!("{name}.{gname}: no field {f}"));
            writeln!(out, "        pub const {}: Field = {lit};", snake(f, true)).unwrap();
        }
        writeln!(out, "    }}").unwrap();
    }
    writeln!(out, "}}").unwrap();
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let path = manifest.join("schema/FixBinary.xml");
    println!("cargo:rerun-if-changed={}", path.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&path).expect("schema/FixBinary.xml");
    let doc = roxmltree::Document::parse(&text).expect("FixBinary.xml parses");
    let root = doc.root_element();
    let types = types(&doc);
    let order = root.attribute("byteOrder").unwrap_or("littleEndian");
    assert_eq!(order, "littleEndian", "the decoders read little-endian");
    assert_eq!(types["messageHeader"].size, 8, "messageHeader: four u16");
    let mut out = String::new();
    let schema_id = root.attribute("id").expect("schema id");
    let version = root.attribute("version").expect("schema version");
    writeln!(out, "/// The schema's id (`messageSchema id`).").unwrap();
    writeln!(out, "pub const SCHEMA_ID: u16 = {schema_id};").unwrap();
    writeln!(out, "/// The schema's version (`messageSchema version`).").unwrap();
    writeln!(out, "pub const SCHEMA_VERSION: u16 = {version};").unwrap();
    dimensions(&mut out, &doc);
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
    rpt_seq_table(&mut out, &messages, &types);
    definition_table(&mut out, &messages, &types);
    for (name, root_fields, groups) in READ {
        let m = messages
            .iter()
            .find(|m| m.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("template {name} is not in the schema"));
        template_module(&mut out, *m, root_fields, groups, &types);
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("schema.rs");
    std::fs::write(dest, out).expect("write schema.rs");
}

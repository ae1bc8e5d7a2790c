//! Compiles src/bpf/fixscope.bpf.c (and src/bpf/breakdown.bpf.c, `--breakdown`, and
//! src/bpf/tls_uprobe.bpf.c, `--tls-uprobes`) with
//! clang and generates their libbpf-rs skeletons into OUT_DIR (included by src/skeleton.rs
//! and src/breakdown/skel.rs).

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "src/bpf/fixscope.bpf.c";
const HDR: &str = "src/bpf/fixscope.h";
const BREAKDOWN_SRC: &str = "src/bpf/breakdown.bpf.c";
const BREAKDOWN_HDR: &str = "src/bpf/breakdown.h";
const TLS_UPROBE_SRC: &str = "src/bpf/tls_uprobe.bpf.c";
const TLS_UPROBE_HDR: &str = "src/bpf/tls_uprobe.h";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("fixscope.skel.rs");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("CARGO_CFG_TARGET_ARCH is set by cargo");
    // Debian/Ubuntu keep <asm/*.h> under the multiarch triplet directory.
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        "powerpc64" => "powerpc64le-linux-gnu",
        "s390x" => "s390x-linux-gnu",
        other => other,
    };
    SkeletonBuilder::new()
        .source(SRC)
        .clang_args([
            format!("-I/usr/include/{multiarch}"),
            // clang 14 defaults to -mcpu=v1; v3 (32-bit jumps, ALU32) keeps the verifier's
            // bounds on the variable-size payload copy.
            "-mcpu=v3".to_string(),
            "-Wall".to_string(),
        ])
        .build_and_generate(&out)
        .expect("failed to build the BPF program (clang, libbpf headers, kernel UAPI headers)");
    let breakdown = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("breakdown.skel.rs");
    SkeletonBuilder::new()
        .source(BREAKDOWN_SRC)
        .clang_args([
            format!("-I/usr/include/{multiarch}"),
            "-mcpu=v3".to_string(),
            "-Wall".to_string(),
        ])
        .build_and_generate(&breakdown)
        .expect("failed to build the breakdown BPF program (clang, libbpf headers)");
    let tls_uprobe = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("tls_uprobe.skel.rs");
    // bpf_tracing.h reads uprobe arguments from the target's struct pt_regs.
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        "powerpc64" => "powerpc",
        other => other,
    };
    SkeletonBuilder::new()
        .source(TLS_UPROBE_SRC)
        .clang_args([
            format!("-I/usr/include/{multiarch}"),
            format!("-D__TARGET_ARCH_{target_arch}"),
            "-mcpu=v3".to_string(),
            "-Wall".to_string(),
        ])
        .build_and_generate(&tls_uprobe)
        .expect("failed to build the TLS uprobe BPF program (clang, libbpf headers)");
    println!("cargo:rerun-if-changed={TLS_UPROBE_SRC}");
    println!("cargo:rerun-if-changed={TLS_UPROBE_HDR}");
    println!("cargo:rerun-if-changed=src/bpf/sock_watch.h");
    println!("cargo:rerun-if-changed={BREAKDOWN_SRC}");
    println!("cargo:rerun-if-changed={BREAKDOWN_HDR}");
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed={HDR}");
    println!("cargo:rerun-if-changed=src/bpf/watch_filter.h");
}

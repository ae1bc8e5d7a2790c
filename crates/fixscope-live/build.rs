//! Compiles src/bpf/fixscope.bpf.c with clang and generates the libbpf-rs skeleton into
//! OUT_DIR (included by src/skel.rs).

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "src/bpf/fixscope.bpf.c";
const HDR: &str = "src/bpf/fixscope.h";

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
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed={HDR}");
}

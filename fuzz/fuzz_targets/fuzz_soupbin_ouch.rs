#![no_main]
// libFuzzer entry point; the target itself is `fixscope_fuzz::soupbin_ouch` (also run by the
// workspace tests over the committed seeds and regressions).
libfuzzer_sys::fuzz_target!(|data: &[u8]| fixscope_fuzz::soupbin_ouch(data));

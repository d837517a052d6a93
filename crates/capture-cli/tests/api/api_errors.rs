//! `capture serve` refuses a bad setting at start-up, naming the variable. The error
//! contract itself: `crates/capture-server/tests/service/api/api_errors.rs`.

#[test]
fn bad_configuration_stops_start_up_naming_the_variable() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capture"))
        .args(["serve"])
        .env("CAPTURE_SSE_HEARTBEAT", "soon")
        .env("CAPTURE_DATA_DIR", std::env::temp_dir().join("capture-badcfg"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CAPTURE_SSE_HEARTBEAT"), "{err}");
}

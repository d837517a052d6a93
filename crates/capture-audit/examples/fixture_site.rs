//! Serve the audit fixture site until Ctrl-C (for manual runs and benchmarks):
//! `cargo run -p capture-audit --features fixtures --example fixture_site` prints its address.

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let site = capture_audit::fixtures::FixtureSite::start().await?;
    println!("{}", site.base);
    tokio::signal::ctrl_c().await?;
    drop(site);
    Ok(())
}

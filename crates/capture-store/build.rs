//! Lists the migration files (`migrations/<backend>/<version>_<name>.sql`) for
//! `src/migrations.rs`, which embeds them with `include_str!`: what `sqlx::migrate!` did, without
//! its proc macro, which built sqlx, rustls, aws-lc and SQLite a second time for the host
//! (about a minute of a cold build's CPU; docs/building.md).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let mut code = String::new();
    for backend in ["sqlite", "postgres"] {
        let dir = Path::new("migrations").join(backend);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").file_name().into_string().expect("a UTF-8 file name"))
            .filter(|name| name.ends_with(".sql"))
            .collect();
        files.sort();
        writeln!(code, "pub(crate) const {}: &[(&str, &str)] = &[", backend.to_uppercase()).unwrap();
        for name in files {
            writeln!(
                code,
                "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/migrations/{backend}/{name}\"))),"
            )
            .unwrap();
        }
        code.push_str("];\n");
    }
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("migration_files.rs"), code).expect("writing the migration list");
}

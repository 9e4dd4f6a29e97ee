//! Embeds the signature catalogue: every `src/diagnose/signatures/*.sigs`
//! file, sorted by name, becomes one `(name, include_str!(…))` row of a
//! table in `OUT_DIR` (`diagnose/catalogue.rs` includes it), so a new file
//! needs no code change. Parsing is the agent's (and its unit test's) job:
//! this only lists the files.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = manifest.join("src/diagnose/signatures");
    // The directory itself: a file added or removed changes the table.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sigs"))
        .collect();
    files.sort();
    let mut table = String::from(
        "/// Every `.sigs` file of `src/diagnose/signatures`, by name, sorted.\n\
         pub(crate) const FILES: &[(&str, &str)] = &[\n",
    );
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .expect("a file")
            .to_str()
            .expect("a UTF-8 file name");
        let full = path.to_str().expect("a UTF-8 path");
        writeln!(table, "    ({name:?}, include_str!({full:?})),").expect("write to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("signature_files.rs"), table).expect("write the signature table");
}

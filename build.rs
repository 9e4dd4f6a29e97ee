//! Embeds the signature catalogue: every `src/diagnose/signatures/*.sigs`
//! file, sorted by name, is put in one deflated blob in `OUT_DIR` with a
//! table of `(name, start, end)` rows into its inflated text
//! (`diagnose/catalogue.rs` includes both), so a new file needs no code
//! change. Deflated because the text is a quarter of a megabyte and the
//! static binary has a size budget (docs/packaging.md); the agent inflates
//! it once. Parsing is the agent's (and its unit test's) job: this only
//! packs the files.

use std::fmt::Write as _;
use std::io::Write as _;
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
        "/// Every `.sigs` file of `src/diagnose/signatures`, by name, sorted:\n\
         /// its name and where its text starts and ends in the inflated blob.\n\
         pub(crate) const FILES: &[(&str, usize, usize)] = &[\n",
    );
    let mut text = String::new();
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .expect("a file")
            .to_str()
            .expect("a UTF-8 file name");
        let body = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{}: {e} (a .sigs file is UTF-8 text)", path.display()));
        let start = text.len();
        text.push_str(&body);
        writeln!(table, "    ({name:?}, {start}, {}),", text.len()).expect("write to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let mut deflater = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    deflater
        .write_all(text.as_bytes())
        .expect("deflate into memory");
    let packed = deflater.finish().expect("deflate into memory");
    let blob = out.join("signatures.deflate");
    std::fs::write(&blob, packed).expect("write the packed signatures");
    writeln!(
        table,
        "/// The files' text, deflated.\n\
         pub(crate) const PACKED: &[u8] = include_bytes!({:?});\n\
         /// The inflated text's length.\n\
         pub(crate) const TEXT_LEN: usize = {};",
        blob.to_str().expect("a UTF-8 path"),
        text.len()
    )
    .expect("write to a String");
    std::fs::write(out.join("signature_files.rs"), table).expect("write the signature table");
}

//! The man pages in `packaging/man/` are generated from the CLI definition
//! (clap_mangen), one per command, and must match it: a flag added without
//! regenerating them fails here. Regenerate with
//! `UPDATE_MANPAGES=1 cargo test --test it manpage`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use assisted_boot_reporter::cli::Cli;
use clap::CommandFactory;

fn man_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("packaging/man")
}

/// Every page, by file name: the top command and each subcommand.
fn render() -> BTreeMap<String, Vec<u8>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = BTreeMap::new();
    let mut todo = vec![cmd];
    while let Some(cmd) = todo.pop() {
        todo.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let man = clap_mangen::Man::new(cmd);
        let mut out = Vec::new();
        man.render(&mut out).expect("render into memory");
        pages.insert(man.get_filename(), out);
    }
    pages
}

#[test]
fn man_pages_match_the_cli() {
    // The help texts mention defaults only, never the environment's values,
    // so the pages do not depend on who generates them.
    let pages = render();
    assert!(
        pages.contains_key("assisted-boot-reporter.1"),
        "{:?}",
        pages.keys()
    );
    assert!(pages.contains_key("assisted-boot-reporter-run.1"));
    assert!(pages.contains_key("assisted-boot-reporter-ignition.1"));
    assert!(pages.contains_key("assisted-boot-reporter-signatures.1"));

    let dir = man_dir();
    if std::env::var_os("UPDATE_MANPAGES").is_some() {
        std::fs::create_dir_all(&dir).expect("mkdir packaging/man");
        for entry in std::fs::read_dir(&dir).expect("read packaging/man") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "1") {
                std::fs::remove_file(&path).expect("remove stale page");
            }
        }
        for (name, page) in &pages {
            std::fs::write(dir.join(name), page).expect("write page");
        }
        eprintln!("wrote {} pages to {}", pages.len(), dir.display());
    }

    let mut on_disk = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "1") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            on_disk.insert(name, std::fs::read(&path).expect("read page"));
        }
    }
    let want: Vec<&String> = pages.keys().collect();
    let have: Vec<&String> = on_disk.keys().collect();
    assert_eq!(
        have, want,
        "packaging/man/ has other pages than the CLI's commands; run UPDATE_MANPAGES=1 cargo test --test it manpage"
    );
    for (name, page) in &pages {
        assert!(
            on_disk[name] == *page,
            "packaging/man/{name} is out of date with the CLI; run UPDATE_MANPAGES=1 cargo test --test it manpage"
        );
    }
}

//! `signatures [--json]`: every entry of the signature catalogue the agent
//! recognises (`src/diagnose/signatures/`), so users and support can see
//! what a finding can say: id, category, severity, upstream source and an
//! example line, one line each, or a JSON array.

use std::fmt::Write as _;

use clap::Args;
use serde::Serialize;

use crate::diagnose::{signature_list, SignatureRow};

#[derive(Debug, Clone, Args)]
pub struct SignaturesArgs {
    /// Print one JSON array of objects (`id`, `category`, `severity`,
    /// `source`, `example`, `hint`, `file`) instead of a line each.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    category: &'a str,
    severity: &'a str,
    source: &'a str,
    example: &'a str,
    hint: &'a str,
    file: &'a str,
}

pub(crate) fn signatures_command(args: &SignaturesArgs) -> anyhow::Result<()> {
    print!("{}", render(&signature_list(), args.json)?);
    Ok(())
}

fn render(rows: &[SignatureRow], json: bool) -> anyhow::Result<String> {
    if json {
        let rows: Vec<Row> = rows
            .iter()
            .map(|r| Row {
                id: r.id,
                category: r.category,
                severity: r.severity,
                source: r.source,
                example: r.example,
                hint: r.hint,
                file: r.file,
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&rows)?;
        text.push('\n');
        return Ok(text);
    }
    let width = |f: fn(&SignatureRow) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let (id, category, severity) = (
        width(|r| r.id.len()),
        width(|r| r.category.len()),
        width(|r| r.severity.len()),
    );
    let mut out = String::new();
    for r in rows {
        let _ = writeln!(
            out,
            "{:id$}  {:category$}  {:severity$}  {}  e.g. {}",
            r.id, r.category, r.severity, r.source, r.example
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_is_listed_with_its_source_and_example() {
        let rows = signature_list();
        assert!(!rows.is_empty());
        let text = render(&rows, false).unwrap();
        assert_eq!(text.lines().count(), rows.len());
        for (line, row) in text.lines().zip(&rows) {
            assert!(line.starts_with(row.id), "{line}");
            assert!(
                line.contains(row.source) && line.ends_with(row.example),
                "{line}"
            );
        }
        let json: Vec<serde_json::Value> =
            serde_json::from_str(&render(&rows, true).unwrap()).unwrap();
        assert_eq!(json.len(), rows.len());
        for (value, row) in json.iter().zip(&rows) {
            assert_eq!(value["id"], row.id);
            assert_eq!(value["category"], row.category);
            assert_eq!(value["severity"], row.severity);
            assert!(!value["source"].as_str().unwrap().is_empty());
            assert!(!value["example"].as_str().unwrap().is_empty());
        }
    }
}

//! Docs that cannot go stale: every number the READMEs quote inside a
//! `<!--n:KEY-->TEXT<!--/n-->` span equals `docs/figures/numbers.json` (what
//! `scripts/docs-figures.sh` last measured, with the machine and its load), and every file the docs link exists. A change that moves a number
//! fails here until the script is rerun.

use std::collections::BTreeMap;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

const DOCS: [&str; 3] = ["README.md", "agents/README.md", "docs/CONFIG.md"];

/// (key, text) of every number span of `text`.
fn spans(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("<!--n:") {
        let after = &rest[at + 6..];
        let key_end = after.find("-->").expect("a span's key is closed");
        let key = &after[..key_end];
        let body = &after[key_end + 3..];
        let end = body.find("<!--/n-->").expect("a span is closed");
        out.push((key.to_string(), body[..end].to_string()));
        rest = &body[end..];
    }
    out
}

#[test]
fn every_quoted_number_is_the_scripts_last_output() {
    let numbers: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/figures/numbers.json")).unwrap()).unwrap();
    assert!(
        numbers.get("_machine").is_some_and(|m| m.contains("cores")),
        "numbers.json names no machine"
    );
    let mut quoted = Vec::new();
    for doc in DOCS {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for (key, shown) in spans(&text) {
            let want = numbers
                .get(&key)
                .unwrap_or_else(|| panic!("{doc} quotes `{key}`, which numbers.json lacks"));
            assert_eq!(
                &shown, want,
                "{doc}: `{key}` shows {shown:?}; scripts/docs-figures.sh measured {want:?} (rerun it)"
            );
            quoted.push(key);
        }
    }
    assert!(
        quoted.len() >= 30,
        "the READMEs quote {} numbers: the spans went missing",
        quoted.len()
    );
}

#[test]
fn every_file_the_docs_link_exists() {
    for doc in DOCS {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        let base = root().join(doc).parent().unwrap().to_path_buf();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split('#').next().unwrap_or("");
            rest = &after[end..];
            if target.is_empty() || target.contains("://") || target.contains(' ') || target.starts_with("mailto:") {
                continue;
            }
            assert!(base.join(target).exists(), "{doc} links {target}, which does not exist");
        }
    }
}

#[test]
fn a_stale_number_is_caught() {
    let text = "a <!--n:x-->1 s<!--/n--> b <!--n:y.z-->+0.2 +- 0.1<!--/n-->";
    assert_eq!(
        spans(text),
        [("x".to_string(), "1 s".to_string()), ("y.z".to_string(), "+0.2 +- 0.1".to_string())]
    );
}

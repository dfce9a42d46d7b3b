//! Forms and questions shared by the integration tests (and the
//! benchmark, which includes this file).

#![allow(dead_code)]

use std::path::PathBuf;

use askgate_core::Form;
use serde_json::{Value as Json, json};

fn forms_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/forms")
}

/// A form from `tests/forms/<name>.json`.
pub(crate) fn form(name: &str) -> Form {
    let path = forms_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every form of the test corpus, plus the README's example, by name.
pub(crate) fn corpus() -> Vec<(String, Form)> {
    let mut forms = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(forms_dir())
        .expect("tests/forms exists")
        .map(|entry| entry.expect("readable entry").path())
        .collect();
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/forms");
    paths.extend(
        std::fs::read_dir(example)
            .expect("examples/forms exists")
            .map(|entry| entry.expect("readable entry").path()),
    );
    paths.sort();
    for path in paths
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let text = std::fs::read_to_string(&path).expect("readable form");
        let form =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        forms.push((name, form));
    }
    forms
}

/// A question set the model would put before a billing migration: which
/// environment (one of two, staging pre-picked), which tables (several of
/// three, invoices pre-picked), then the questions `more`.
pub(crate) fn migration_set(more: impl IntoIterator<Item = Json>) -> Json {
    let mut questions = vec![
        json!({"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
         "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}),
        json!({"id": "tables", "prompt": "Which tables?", "multiple": true, "defaults": ["invoices"],
         "options": [{"value": "invoices", "label": "Invoices"}, {"value": "payments", "label": "Payments"},
                     {"value": "refunds", "label": "Refunds"}]}),
    ];
    questions.extend(more);
    json!({"source": "ask", "questions": questions})
}

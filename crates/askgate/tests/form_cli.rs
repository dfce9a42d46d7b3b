//! `askgate form schema` and `askgate form check`, run as a user runs them.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value as Json;

fn askgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .output()
        .expect("askgate runs")
}

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/forms/deploy.json")
        .display()
        .to_string()
}

fn stdout_json(output: &Output) -> Json {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `askgate form check EXAMPLE --content WINDOW ARGS`, the window falling
/// in the night the clocks go forward in Paris.
fn check_window(args: &[&str]) -> Output {
    let content = r#"{"window.from": "2026-03-29T02:30:00", "window.to": "2026-03-29T05:00:00", "team_zone": "Europe/Paris"}"#;
    let example = example();
    let mut all = vec!["form", "check", &example, "--content", content];
    all.extend(args);
    askgate(&all)
}

/// `askgate form schema` of a form file holding `body`.
fn schema_of(name: &str, body: &str) -> Output {
    let dir = askgate_testkit::Scratch::new();
    let path = dir.write(name, body);
    askgate(&["form", "schema", &path.display().to_string()])
}

/// `output` exited with `code`, its stderr saying `words`.
fn says(output: &Output, code: i32, words: &str) {
    let said = stderr(output);
    assert_eq!(output.status.code(), Some(code), "{said}");
    assert!(said.contains(words), "{said}");
}

#[test]
fn schema_prints_the_params_of_the_requested_revision() {
    let new = askgate(&["form", "schema", &example(), "--revision", "2025-11-25"]);
    assert_eq!(new.status.code(), Some(0), "{}", stderr(&new));
    let params = stdout_json(&new);
    assert_eq!(params["mode"], "form");
    assert_eq!(
        params["requestedSchema"]["properties"]["regions"]["type"],
        "array"
    );

    let old = askgate(&["form", "schema", &example(), "--revision", "2025-06-18"]);
    let params = stdout_json(&old);
    assert!(params.get("mode").is_none(), "2025-06-18 has no mode");
    assert_eq!(
        params["requestedSchema"]["properties"]["regions.eu-west-1"]["type"],
        "boolean"
    );
}

#[test]
fn a_valid_answer_settles_with_exit_code_0() {
    let content = r#"{"window.from": "2026-12-01T22:00:00", "window.to": "2026-12-02T01:00:00", "team_zone": "Europe/Paris"}"#;
    let output = askgate(&["form", "check", &example(), "--content", content]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = stdout_json(&output);
    assert_eq!(report["status"], "settled");
    assert_eq!(report["outcome"], "accepted");
    assert_eq!(report["values"]["environment"]["source"], "supplied");
    assert_eq!(report["values"]["replicas"]["source"], "defaulted");
    assert_eq!(
        report["values"]["window"]["value"]["to"],
        "2026-12-02T01:00:00+01:00"
    );
}

#[test]
fn a_decline_is_a_settled_outcome() {
    let output = askgate(&["form", "check", &example(), "--action", "decline"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout_json(&output)["outcome"], "declined");
}

#[test]
fn a_refused_answer_prints_the_reask_with_exit_code_1() {
    let output = check_window(&["--revision", "2025-06-18"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = stdout_json(&output);
    assert_eq!(report["status"], "refused");
    assert_eq!(report["attempt"], 2);
    let problem = report["problems"][0].as_str().expect("a message");
    assert!(
        problem.starts_with("Maintenance window: from:"),
        "{problem}"
    );
    let asked: Vec<&String> = report["reask"]["requestedSchema"]["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .collect();
    assert_eq!(asked, ["window.from", "window.to"]);
}

#[test]
fn the_last_attempt_gives_up_with_exit_code_0() {
    let output = check_window(&["--attempt", "3"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout_json(&output)["outcome"], "gave_up");
}

#[test]
fn a_malformed_form_reports_line_and_column_with_exit_code_2() {
    let output = schema_of(
        "broken.json",
        "{\n  \"message\": \"m\",\n  \"fields\": [\n    {\"id\": \"a\", \"title\": \"A\", \"type\": \"integer\", \"minimun\": 1}\n  ]\n}\n",
    );
    says(&output, 2, "broken.json:4:");
    says(&output, 2, "minimun");
}

#[test]
fn a_form_mcp_cannot_carry_is_malformed_input() {
    let output = schema_of(
        "scalar.json",
        r#"{"message": "m", "fields": [{"id": "n", "title": "N", "type": "number", "options": [{"value": "1", "label": "One"}]}]}"#,
    );
    says(&output, 2, "number with options");
}

#[test]
fn malformed_content_and_unknown_revisions_are_exit_code_2() {
    let output = askgate(&["form", "check", &example(), "--content", "{\"a\": "]);
    says(&output, 2, "--content:1:");
    let output = askgate(&["form", "schema", &example(), "--revision", "2024-11-05"]);
    says(&output, 2, "2025-06-18, 2025-11-25, 2026-07-28");
}

//! What the rules mean: globs, argument pointers, the order they apply
//! in, and what a tool's annotations may change.

use serde_json::json;

use super::*;

fn rule(server: Option<&str>, tool: Option<&str>, args: &[(&str, &str)], risk: Risk) -> Rule {
    Rule {
        server: server.map(|s| Pattern::name(s).expect("glob")),
        tool: tool.map(|t| Pattern::name(t).expect("glob")),
        arguments: args
            .iter()
            .map(|(k, v)| {
                (
                    ArgumentPath::parse(k).expect("path"),
                    Pattern::value(v).expect("glob"),
                )
            })
            .collect(),
        risk,
    }
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn none() -> Map<String, Value> {
    Map::new()
}

#[test]
fn the_first_rule_that_holds_wins() {
    let rules = Rules::new(
        vec![
            rule(Some("files"), Some("delete_*"), &[], Risk::Destructive),
            rule(None, Some("delete_*"), &[], Risk::LowWrite),
            rule(Some("files"), None, &[], Risk::Read),
        ],
        Risk::MediumWrite,
        false,
    );
    let judged = rules.risk_of("files", "delete_all", &none());
    assert_eq!(judged.risk, Risk::Destructive);
    assert_eq!(
        judged.rule.to_string(),
        r#"rules[0] (server="files", tool="delete_*")"#
    );
    assert_eq!(
        rules.risk_of("other", "delete_all", &none()).risk,
        Risk::LowWrite
    );
    let read = rules.risk_of("files", "read_file", &none());
    assert_eq!(read.risk, Risk::Read);
    assert_eq!(read.rule.to_string(), r#"rules[2] (server="files")"#);
}

#[test]
fn a_call_no_rule_describes_gets_the_default() {
    let rules = Rules::new(
        vec![rule(Some("files"), None, &[], Risk::Read)],
        Risk::HighWrite,
        false,
    );
    let judged = rules.risk_of("shell", "run", &none());
    assert_eq!(
        judged,
        Judged {
            risk: Risk::HighWrite,
            rule: RuleRef::Default
        }
    );
    assert_eq!(judged.rule.to_string(), "default");
    assert_eq!(
        Rules::fail_closed().risk_of("x", "y", &none()).risk,
        Risk::MediumWrite
    );
}

#[test]
fn a_name_glob_matches_the_whole_name_and_any_characters() {
    let p = Pattern::name("delete_*").expect("glob");
    assert!(p.is_match("delete_all"));
    assert!(p.is_match("delete_a/b"));
    assert!(!p.is_match("undelete_all"));
    assert!(!p.is_match("Delete_all"));
    assert!(
        Pattern::name("{read,list}_*")
            .expect("glob")
            .is_match("list_dir")
    );
}

#[test]
fn an_argument_glob_holds_only_when_the_value_matches() {
    let rules = Rules::new(
        vec![
            rule(
                Some("files"),
                Some("write_*"),
                &[("path", "/etc/**")],
                Risk::Destructive,
            ),
            rule(
                Some("files"),
                Some("write_*"),
                &[("path", "/tmp/*")],
                Risk::LowWrite,
            ),
        ],
        Risk::MediumWrite,
        false,
    );
    let judge = |value: Value| rules.risk_of("files", "write_file", &args(value)).risk;
    assert_eq!(
        judge(json!({"path": "/etc/ssl/cert.pem"})),
        Risk::Destructive
    );
    assert_eq!(judge(json!({"path": "/tmp/x"})), Risk::LowWrite);
    // `*` stays within a segment: a nested path falls through.
    assert_eq!(judge(json!({"path": "/tmp/a/b"})), Risk::MediumWrite);
    // Missing, or not text: the rule does not hold.
    assert_eq!(judge(json!({})), Risk::MediumWrite);
    assert_eq!(judge(json!({"path": ["/etc/passwd"]})), Risk::MediumWrite);
    assert_eq!(judge(json!({"path": null})), Risk::MediumWrite);
}

#[test]
fn every_argument_condition_must_hold() {
    let rules = Rules::new(
        vec![rule(
            None,
            Some("deploy"),
            &[("env", "prod*"), ("service", "billing")],
            Risk::HighWrite,
        )],
        Risk::LowWrite,
        false,
    );
    let judge = |value: Value| rules.risk_of("ops", "deploy", &args(value)).risk;
    assert_eq!(
        judge(json!({"env": "production", "service": "billing"})),
        Risk::HighWrite
    );
    assert_eq!(
        judge(json!({"env": "production", "service": "search"})),
        Risk::LowWrite
    );
}

#[test]
fn a_json_pointer_reaches_nested_values_and_array_items() {
    let rules = Rules::new(
        vec![
            rule(
                None,
                None,
                &[("/options/target", "/etc/**")],
                Risk::Destructive,
            ),
            rule(None, None, &[("/files/1", "*.key")], Risk::HighWrite),
            rule(None, None, &[("/a~1b/c~0d", "yes")], Risk::Read),
            rule(None, None, &[("/count", "1?")], Risk::LowWrite),
        ],
        Risk::MediumWrite,
        false,
    );
    let judge = |value: Value| rules.risk_of("s", "t", &args(value)).risk;
    assert_eq!(
        judge(json!({"options": {"target": "/etc/hosts"}})),
        Risk::Destructive
    );
    assert_eq!(judge(json!({"files": ["a.txt", "b.key"]})), Risk::HighWrite);
    assert_eq!(judge(json!({"files": {"1": "b.key"}})), Risk::HighWrite);
    assert_eq!(judge(json!({"files": ["b.key"]})), Risk::MediumWrite);
    assert_eq!(judge(json!({"a/b": {"c~d": "yes"}})), Risk::Read);
    // Numbers match as JSON writes them.
    assert_eq!(judge(json!({"count": 12})), Risk::LowWrite);
    let judged = rules.risk_of("s", "t", &args(json!({"a/b": {"c~d": "yes"}})));
    assert_eq!(
        judged.rule.to_string(),
        r#"rules[2] (arguments."/a~1b/c~0d"="yes")"#
    );
}

#[test]
fn a_leading_zero_is_not_an_array_index() {
    assert_eq!(index("0"), Some(0));
    assert_eq!(index("12"), Some(12));
    assert_eq!(index("01"), None);
    assert_eq!(index("-1"), None);
    assert_eq!(index(""), None);
}

#[test]
fn a_read_only_hint_is_not_trusted_by_default() {
    let hints = Hints {
        read_only: Some(true),
        destructive: None,
    };
    let judged = Rules::fail_closed().risk_with_hints("s", "list", hints, &none());
    assert_eq!(judged.risk, Risk::MediumWrite);
    assert_eq!(judged.rule, RuleRef::Default);
}

#[test]
fn a_trusted_read_only_hint_makes_the_tool_a_read() {
    let rules = Rules::new(Vec::new(), Risk::MediumWrite, true);
    let hints = Hints {
        read_only: Some(true),
        destructive: None,
    };
    let judged = rules.risk_with_hints("s", "list", hints, &none());
    assert_eq!(judged.risk, Risk::Read);
    assert_eq!(
        judged.rule.to_string(),
        "annotations.readOnlyHint (trust_read_only_hints)"
    );
}

#[test]
fn a_destructive_hint_is_always_believed_and_wins_over_read_only() {
    for trust in [false, true] {
        let rules = Rules::new(Vec::new(), Risk::MediumWrite, trust);
        let hints = Hints {
            read_only: Some(true),
            destructive: Some(true),
        };
        let judged = rules.risk_with_hints("s", "wipe", hints, &none());
        assert_eq!(judged.risk, Risk::Destructive);
        assert_eq!(judged.rule, RuleRef::DestructiveHint);
    }
}

#[test]
fn hints_come_from_the_tools_annotations() {
    use rmcp::model::{Tool, ToolAnnotations};
    let tool = |annotations: Option<ToolAnnotations>| {
        let tool = Tool::new("t", "a tool", std::sync::Arc::new(Map::new()));
        match annotations {
            Some(annotations) => tool.with_annotations(annotations),
            None => tool,
        }
    };
    assert_eq!(Hints::of(&tool(None)), Hints::default());
    let wipe = tool(Some(
        ToolAnnotations::new().read_only(false).destructive(true),
    ));
    assert_eq!(
        Hints::of(&wipe),
        Hints {
            read_only: Some(false),
            destructive: Some(true)
        }
    );
}

#[test]
fn a_rule_outranks_any_hint() {
    let rules = Rules::new(
        vec![rule(None, Some("wipe"), &[], Risk::LowWrite)],
        Risk::MediumWrite,
        true,
    );
    let hints = Hints {
        read_only: None,
        destructive: Some(true),
    };
    assert_eq!(
        rules.risk_with_hints("s", "wipe", hints, &none()).risk,
        Risk::LowWrite
    );
}

#[test]
fn bad_globs_and_pointers_say_what_is_wrong() {
    let errors = [
        Pattern::name("delete_[").err(),
        Pattern::value("").err(),
        ArgumentPath::parse("/a~2").err(),
        ArgumentPath::parse("").err(),
    ];
    insta::assert_snapshot!(errors.map(|e| e.unwrap_or_default()).join("\n"));
}

#[test]
fn a_path_written_another_way_gets_the_risk_of_where_it_leads() {
    // A narrow rule that lowers the risk listed before a broad one that
    // raises it: the order the module's docs advise against, so that a
    // dodge would show.
    let rules = Rules::new(
        vec![
            rule(None, None, &[("path", "/tmp/**")], Risk::Read),
            rule(None, None, &[("path", "/etc/**")], Risk::Destructive),
            rule(
                None,
                None,
                &[("url", "https://admin.example.com/**")],
                Risk::HighWrite,
            ),
        ],
        Risk::MediumWrite,
        false,
    );
    let judge = |value: Value| rules.risk_of("files", "write_file", &args(value)).risk;
    for dodge in [
        "/tmp/../etc/passwd",
        "/tmp/./../../etc/passwd",
        "/etc//passwd",
        "//etc/passwd",
    ] {
        assert_eq!(
            judge(json!({ "path": dodge })),
            Risk::Destructive,
            "{dodge}"
        );
    }
    assert_eq!(judge(json!({"path": "/tmp/a/../b"})), Risk::Read);
    assert_eq!(
        judge(json!({"url": "HTTPS://Admin.Example.com/x/%2E%2E/users"})),
        Risk::HighWrite
    );
}

#[test]
fn a_value_glob_not_in_normal_form_is_refused_with_how_to_write_it() {
    let refused = Pattern::value("/etc/../root/*").expect_err("refused");
    assert!(refused.contains(r#"write "/root/*""#), "{refused}");
}

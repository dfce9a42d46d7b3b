//! Who may sign in and answer: people, principals and their tokens.

use super::*;

fn error_with_upstream(rest: &str) -> String {
    match with_upstream(rest) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_token_of_both_a_person_and_an_agent_is_refused_naming_both() {
    let said = error_with_upstream(
        "[[principals]]\nname = \"ci-agent\"\ntoken = \"shared-s3cret-0123456789\"\n\
         [[people]]\nname = \"bob\"\ntoken = \"bob-s3cret-0123456789\"\noperator = true\n\
         [[people]]\nname = \"alice\"\ntoken = \"shared-s3cret-0123456789\"\n\
         answers_for = [\"ci-agent\"]\n",
    );
    assert!(
        !said.contains("s3cret"),
        "the token is never quoted: {said}"
    );
    insta::assert_snapshot!(said, @r#"askgate.toml:14: people[1].token: people[1] ("alice") has the same token as principals[0] ("ci-agent"): an agent must never hold a person's credential; give each its own token"#);
}

#[test]
fn operator_on_a_principal_is_refused_with_why() {
    let said = error_with_upstream(
        "[[principals]]\nname = \"ci-agent\"\ntoken = \"agent-token-0123456789\"\noperator = true\n",
    );
    insta::assert_snapshot!(said, @"askgate.toml:8: principals[0].operator: principals[0] (\"ci-agent\") cannot be an operator: [[principals]] are agents' MCP bearer tokens and never sign in to the inbox, so that an agent never holds what approves its own asks; put operator = true on a [[people]] entry, with a token of its own");
}

#[test]
fn a_person_who_answers_for_nobody_is_refused() {
    let nobody = "[[people]]\nname = \"alice\"\ntoken = \"alice-token-0123456789\"\n";
    insta::assert_snapshot!(error_with_upstream(nobody), @r#"askgate.toml:5: people[0]: people[0] ("alice") may answer nobody's asks: give them answers_for = ["PRINCIPAL", ...] (the principals whose asks they answer, or ["*"] for every principal), or operator = true"#);
    let empty = format!("{nobody}answers_for = []\noperator = false\n");
    assert_eq!(error_with_upstream(&empty), error_with_upstream(nobody));
}

#[test]
fn people_answer_for_principals_or_are_operators() {
    let config = with_upstream(
        "[[principals]]\nname = \"ci-agent\"\ntoken = \"agent-token-0123456789\"\n\
         [[people]]\nname = \"alice\"\ntoken = \"alice-token-0123456789\"\n\
         answers_for = [\"ci-agent\", \"deployer\", \"ci-agent\"]\n\
         [[people]]\nname = \"ops\"\ntoken = \"ops-token-0123456789\"\noperator = true\n",
    )
    .expect("parses");
    assert_eq!(config.principals.len(), 1);
    let people: Vec<(&str, &[String], bool)> = config
        .people
        .iter()
        .map(|p| (p.name.as_str(), &p.answers_for[..], p.operator))
        .collect();
    let alice = ["ci-agent".to_owned(), "deployer".to_owned()];
    assert_eq!(
        people,
        [("alice", &alice[..], false), ("ops", &[][..], true)],
        "a principal named twice is kept once"
    );
}

#[test]
fn an_unreadable_file_is_named() {
    let error = Config::load(Path::new("/nonexistent/askgate.toml")).expect_err("no such file");
    assert_eq!(
        error.file.as_deref(),
        Some(Path::new("/nonexistent/askgate.toml"))
    );
    assert!(
        error
            .to_string()
            .starts_with("/nonexistent/askgate.toml: cannot read")
    );
}

#[test]
fn debug_never_shows_a_secret() {
    let config = parse(
        "store = \"postgres://app:pg-s3cret@db/askgate\"\n\
         [[upstreams]]\nname = \"a\"\ncommand = \"x\"\nenv = { API_KEY = \"env-s3cret\" }\n\
         [[upstreams]]\nname = \"b\"\nurl = \"https://h/mcp\"\n\
         headers = { Authorization = \"Bearer header-s3cret\" }\n\
         [[principals]]\nname = \"alice\"\ntoken = \"token-s3cret-0123456789\"\n\
         [[people]]\nname = \"carol\"\ntoken = \"person-s3cret-0123456789\"\noperator = true\n",
    )
    .expect("parses");
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("API_KEY")
            && shown.contains("Authorization")
            && shown.contains("alice")
            && shown.contains("carol")
    );
    assert_eq!(config.store.to_string(), "postgres://app@db/askgate");
    assert_eq!(config.store.expose(), "postgres://app:pg-s3cret@db/askgate");
}

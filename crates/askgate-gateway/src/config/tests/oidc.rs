//! `[inbox.oidc]`: people from an OpenID provider, and rules naming the
//! groups it puts them in.

use super::*;

/// The README's example, under a store and an upstream.
fn readme_example() -> String {
    let block = readme_toml("### People signed in by an OpenID provider");
    block.replace("<from the provider>", "provider-secret-0123456789")
}

/// A config of top-level keys `top`, the `files` upstream, then `tables`.
fn with_top(top: &str, tables: &str) -> Result<Config, ConfigError> {
    parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{top}{UPSTREAM}{tables}"
    ))
}

#[test]
fn the_readme_example_loads_and_its_rule_counts_the_providers_sre_group() {
    let config = with_upstream(&readme_example()).expect("the README's example loads");
    let oidc = config.inbox.oidc.as_ref().expect("[inbox.oidc]");
    assert_eq!(oidc.issuer, "https://idp.example.com/realms/eng");
    assert_eq!(oidc.groups, ["sre", "oncall"]);
    assert_eq!(oidc.name_claim, "preferred_username");
    assert_eq!(oidc.groups_claim, "groups");
    assert_eq!(oidc.answers_for, ["*"]);
    let delete = config
        .approvals
        .for_call(
            "files",
            "delete",
            Risk::Destructive,
            &Map::new(),
            "anonymous",
        )
        .expect("the rule");
    assert_eq!(delete.panel.who, "2 of sre");
    let sre = ["sre".to_owned()];
    assert_eq!(delete.panel.eligible_in("kim", &sre, false), Ok(()));
    assert!(
        delete
            .panel
            .eligible_in("lou", &["oncall".to_owned()], false)
            .is_err()
    );
    // The secret is kept from the log, and from Debug.
    assert!(
        config
            .secrets()
            .contains(&"provider-secret-0123456789".to_owned())
    );
    assert!(!format!("{config:?}").contains("provider-secret-0123456789"));
}

#[test]
fn an_oidc_table_that_could_not_sign_anyone_in_is_refused_at_its_line() {
    let table = |body: &str| {
        format!(
            "[inbox.oidc]\nissuer = \"https://idp.example.com\"\nclient_id = \"askgate\"\n{body}"
        )
    };
    let cases = [
        (
            table("client_secret = \"s3cret-0123456789\"\ngroups = []\n"),
            "[inbox.oidc] groups names nobody",
        ),
        (
            table("client_secret = \"  \"\ngroups = [\"sre\"]\n"),
            "[inbox.oidc] client_secret is blank",
        ),
        (
            table("client_secret = \"s3cret-0123456789\"\ngroups = [\"sre\"]\nanswers_for = []\n"),
            "[inbox.oidc] answers_for is empty",
        ),
        (
            table("client_secret = \"s3cret-0123456789\"\ngroups = [\"sre\"]\nclaims = \"x\"\n"),
            "unknown field `claims`",
        ),
        (
            table("client_secret = \"s3cret-0123456789\"\ngroups = [\"sre\"]\n"),
            "[inbox.oidc] needs answers_for",
        ),
        (
            "[inbox.oidc]\nissuer = \"idp.example.com\"\nclient_id = \"a\"\nclient_secret = \"s3cret-0123456789\"\ngroups = [\"sre\"]\n".to_owned(),
            "expected an https:// URL",
        ),
        (
            "[inbox.oidc]\nissuer = \"http://idp.example.com\"\nclient_id = \"a\"\nclient_secret = \"s3cret-0123456789\"\ngroups = [\"sre\"]\n".to_owned(),
            "http:// only on this machine",
        ),
    ];
    for (text, expected) in cases {
        let error = with_upstream(&text).expect_err(expected).to_string();
        assert!(error.contains(expected), "{error}");
        assert!(error.starts_with("askgate.toml:"), "{error}");
        assert!(!error.contains("s3cret"), "the secret in an error: {error}");
    }
}

#[test]
fn a_signed_in_group_named_like_a_person_and_a_rule_naming_another_group_are_refused() {
    let oidc = "[inbox.oidc]\nissuer = \"https://idp.example.com\"\nclient_id = \"askgate\"\n\
                client_secret = \"s3cret-0123456789\"\ngroups = [\"sre\", \"ana\"]\n\
                answers_for = [\"*\"]\n";
    let person =
        "people = [{ name = \"ana\", token = \"ana-token-0123456789\", answers_for = [\"*\"] }]\n";
    let error = with_top(person, oidc).expect_err("ambiguous").to_string();
    assert!(
        error.contains("\"ana\" names both a person and a group"),
        "{error}"
    );
    let oidc = oidc.replace(", \"ana\"", "");
    let error = with_upstream(&format!(
        "{oidc}[[approvals]]\nquorum = {{ of = \"dba\", need = 2 }}\n"
    ))
    .expect_err("unknown")
    .to_string();
    assert!(
        error.contains("\"dba\" is neither a person nor a group; known: sre"),
        "{error}"
    );
    // A group both of [[people]] and the provider's: refused.
    let bo = "people = [{ name = \"bo\", token = \"bo-token-01234567890\", answers_for = [\"*\"], groups = [\"sre\"] }]\n";
    let error = with_top(bo, &oidc).expect_err("both").to_string();
    assert!(
        error.contains("\"sre\" is both a group of [[people]]"),
        "{error}"
    );
}

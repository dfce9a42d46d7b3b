//! `[inbox.oidc]`: people from an OpenID provider, and rules naming the
//! groups it puts them in.

use super::*;

/// The README's example, under a store and an upstream.
fn readme_example() -> String {
    let block = readme_toml("### People signed in by an OpenID provider");
    block.replace("<from the provider>", "provider-secret-0123456789")
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
    let error = above(person, oidc).expect_err("ambiguous").to_string();
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
    let error = above(bo, &oidc).expect_err("both").to_string();
    assert!(
        error.contains("\"sre\" is both a group of [[people]]"),
        "{error}"
    );
}

/// `[inbox.oidc]` signing in `sre`, and a rule that lets `sre` answer.
const SRE_SIGNS_IN: &str = "[inbox.oidc]\nissuer = \"https://idp.example.com\"\n\
    client_id = \"askgate\"\nclient_secret = \"s3cret-0123456789\"\ngroups = [\"sre\"]\n\
    answers_for = [\"*\"]\n[[approvals]]\nquorum = { of = \"sre\", need = 2 }\n";

#[test]
fn an_agents_person_must_be_known_to_the_provider_when_its_sign_ins_may_approve() {
    // Cy's agent asks; Cy could sign in with the provider as "cy@corp" and
    // approve it: refused until the config knows Cy's subject there.
    let cy = |extra: &str| {
        format!(
            "people = [{{ name = \"cy\", token = \"cy-token-01234567890\", answers_for = [\"*\"]{extra} }}]\n\
             principals = [{{ name = \"cy-agent\", token = \"agent-token-0123456789\", acts_for = [\"cy\"] }}]\n"
        )
    };
    let error = above(&cy(""), SRE_SIGNS_IN)
        .expect_err("cy unknown to the provider")
        .to_string();
    assert!(
        error.contains("principal \"cy-agent\" acts for \"cy\", and [[approvals]] let people signed in with [inbox.oidc] answer"),
        "{error}"
    );
    assert!(error.contains("give \"cy\" oidc_sub"), "{error}");
    // The same for the caller without a token (stdio's).
    let top = "acts_for = [\"cy\"]\npeople = [{ name = \"cy\", token = \"cy-token-01234567890\", answers_for = [\"*\"] }]\n";
    let error = above(top, SRE_SIGNS_IN).expect_err("stdio").to_string();
    assert!(
        error.contains("the caller without a token (acts_for) acts for \"cy\""),
        "{error}"
    );
    // Known by her subject: it loads, and the inbox signs that subject in
    // as Cy.
    let config = above(&cy(", oidc_sub = \"8c1f\""), SRE_SIGNS_IN).expect("loads");
    let person = config.people.iter().find(|p| p.name == "cy").expect("cy");
    assert_eq!(person.oidc_sub.as_deref(), Some("8c1f"));
    // A rule no sign-in may answer needs no subject.
    let tokens_only = SRE_SIGNS_IN
        .replace("of = \"sre\"", "of = \"cy\"")
        .replace("need = 2", "need = 1");
    above(&cy(""), &tokens_only).expect("no provider's person may answer");
}

#[test]
fn an_oidc_sub_is_one_persons_and_needs_a_provider() {
    let two = "people = [\
        { name = \"ana\", token = \"ana-token-0123456789\", answers_for = [\"*\"], oidc_sub = \"x1\" },\
        { name = \"bo\", token = \"bo-token-01234567890\", answers_for = [\"*\"], oidc_sub = \"x1\" }]\n";
    let error = above(two, SRE_SIGNS_IN).expect_err("shared").to_string();
    assert!(
        error.contains("\"ana\" has this oidc_sub too: a subject at the provider is one person's"),
        "{error}"
    );
    let one = "people = [{ name = \"ana\", token = \"ana-token-0123456789\", answers_for = [\"*\"], oidc_sub = \"x1\" }]\n";
    let error = above(one, "").expect_err("no provider").to_string();
    assert!(error.contains("there is no [inbox.oidc]"), "{error}");
}

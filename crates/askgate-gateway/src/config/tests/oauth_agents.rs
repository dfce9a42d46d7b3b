//! The agents an OAuth token names (`[listen.oauth]`): whom they act for
//! (`[listen.oauth.acts_for]`), and what a rule that keeps the requester's
//! people out makes of one the config does not know.

use askgate_core::approval::{Ineligible, Unanswerable};

use super::*;

/// A listener whose agents an authorization server names, one agent of
/// a static token acting for nobody, and three people.
const OAUTH: &str = r#"
[[principals]]
name = "build-bot"
token = "agent-token-0123456789"

[[people]]
name = "ana"
token = "ana-token-0123456789"
answers_for = ["*"]
groups = ["sre"]

[[people]]
name = "bo"
token = "bo-token-01234567890"
answers_for = ["*"]
groups = ["sre"]

[[people]]
name = "cy"
token = "cy-token-01234567890"
answers_for = ["oauth:ci-agent", "deployer"]
groups = ["sre"]

[[approvals]]
any_of = ["sre"]

[listen]
addr = "127.0.0.1:8080"

[listen.oauth]
issuer = "https://idp.example"
resource = "https://askgate.example/mcp"
scope_principals = { "deploy:all" = "deployer" }
"#;

fn oauth(acts_for: &str) -> Result<Config, ConfigError> {
    with_upstream(&format!("{OAUTH}{acts_for}"))
}

fn refused(acts_for: &str) -> String {
    match oauth(acts_for) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn an_oauth_agent_the_config_does_not_know_cannot_have_its_risky_calls_approved_by_anyone() {
    let config = oauth("").expect("parses");
    let none = args(json!({}));
    let unknown = |risk| {
        config
            .approvals
            .for_call("files", "delete_file", risk, &none, "oauth:ci-agent")
            .expect("the rule matches every call")
            .panel
    };
    // From high_write the requester's people are kept out by default; an
    // agent any client of the issuer may be could be anyone's.
    for risk in [Risk::HighWrite, Risk::Destructive] {
        let panel = unknown(risk);
        assert!(matches!(
            panel.unanswerable(),
            Some(Unanswerable::RequesterUnknown { .. })
        ));
        assert_eq!(
            panel.eligible("ana", false),
            Err(Ineligible::RequesterUnknown { risk })
        );
        let said = panel.unanswerable().expect("refused").to_string();
        assert!(said.contains("[listen.oauth.acts_for]"), "{said}");
    }
    // Nor may anyone approve for whoever holds a scope its principal is
    // for, while nobody is named as that agent's person.
    let scoped = config
        .approvals
        .for_call("files", "delete_file", Risk::Destructive, &none, "deployer")
        .expect("matches")
        .panel;
    assert!(matches!(
        scoped.unanswerable(),
        Some(Unanswerable::RequesterUnknown { .. })
    ));
    // Below it nobody is kept out, so nobody need be told apart.
    let medium = unknown(Risk::MediumWrite);
    assert_eq!(medium.unanswerable(), None);
    assert_eq!(medium.eligible("ana", false), Ok(()));
    // An agent of a static token the operator wrote down keeps today's
    // default: it acts for nobody, and its calls may be approved.
    let declared = config
        .approvals
        .for_call(
            "files",
            "delete_file",
            Risk::Destructive,
            &none,
            "build-bot",
        )
        .expect("matches")
        .panel;
    assert_eq!(declared.unanswerable(), None);
}

#[test]
fn an_oauth_agents_person_is_kept_from_approving_its_calls_once_the_config_names_them() {
    let config =
        oauth("\n[listen.oauth.acts_for]\n\"oauth:ci-agent\" = [\"cy\"]\ndeployer = [\"bo\"]\n")
            .expect("parses");
    let none = args(json!({}));
    let call = |principal| {
        config
            .approvals
            .for_call("files", "delete_file", Risk::Destructive, &none, principal)
            .expect("matches")
    };
    let ci = call("oauth:ci-agent");
    assert_eq!(ci.acts_for, ["cy"]);
    assert_eq!(ci.panel.unanswerable(), None);
    assert_eq!(
        ci.panel.eligible("cy", false),
        Err(Ineligible::Requester {
            person: "cy".into(),
            risk: Risk::Destructive
        })
    );
    assert_eq!(ci.panel.eligible("ana", false), Ok(()));
    // A scope's principal no [[principals]] entry declares gets its
    // people here too.
    let deployer = call("deployer");
    assert_eq!(deployer.acts_for, ["bo"]);
    assert!(deployer.panel.eligible("bo", false).is_err());
    // Another OAuth agent is still unknown.
    assert!(call("oauth:other").panel.unanswerable().is_some());
}

#[test]
fn an_acts_for_entry_no_token_could_name_is_refused_at_its_line() {
    let table = "\n[listen.oauth.acts_for]\n";
    let cases = [
        (
            "ci-agent = [\"cy\"]\n",
            r#"askgate.toml:40: listen.oauth.acts_for.ci-agent: [listen.oauth.acts_for] names the agent "ci-agent": no token names an agent so: write "oauth:<client_id>" (or "oauth:<sub>", or the claim principal_claim names) for an agent its token's claim names, or a principal of scope_principals (deployer)"#,
        ),
        (
            "build-bot = [\"cy\"]\n",
            r#"askgate.toml:40: listen.oauth.acts_for.build-bot: [listen.oauth.acts_for] names the agent "build-bot": it is a [[principals]] entry's name: say whom it acts for with that entry's acts_for"#,
        ),
        (
            "\"oauth:a,b\" = [\"cy\"]\n",
            r#"askgate.toml:40: listen.oauth.acts_for."oauth:a,b": [listen.oauth.acts_for] names the agent "oauth:a,b": the name after "oauth:" is not usable: it holds a comma, which separates the names of several approvers"#,
        ),
        (
            "\"oauth:ci-agent\" = []\n",
            r#"askgate.toml:40: listen.oauth.acts_for."oauth:ci-agent": [listen.oauth.acts_for] says the agent "oauth:ci-agent" acts for nobody: a token's agent is anybody's until the config names its people, so its calls are refused wherever a rule keeps the requester's people out; name them, or leave it out"#,
        ),
        (
            "\"oauth:ci-agent\" = [\"zed\"]\n",
            r#"askgate.toml:40: listen.oauth.acts_for."oauth:ci-agent"[0]: [listen.oauth.acts_for] "oauth:ci-agent" acts for "zed", who is not in [[people]]"#,
        ),
    ];
    for (entry, expected) in cases {
        assert_eq!(refused(&format!("{table}{entry}")), expected, "{entry}");
    }
}

#[test]
fn names_no_log_line_or_approver_list_could_hold_are_no_agents() {
    let bidi = "principals = [{ name = \"ci\\u202Etnega\", token = \"agent-token-0123456789\" }]\n";
    let said = match above(bidi, "") {
        Ok(_) => "(parsed)".to_owned(),
        Err(error) => error.to_string(),
    };
    assert!(
        said.contains("is not usable: it holds a line or paragraph separator"),
        "{said}"
    );
    let listen = "[listen]\naddr = \"127.0.0.1:8080\"\n\n[listen.oauth]\n\
                  issuer = \"https://idp.example\"\nresource = \"https://askgate.example/mcp\"\n";
    for (scope, why) in [
        ("a, b", "it holds a comma"),
        ("oauth:ci", "it starts with \"oauth:\""),
    ] {
        let said = match with_upstream(&format!(
            "{listen}scope_principals = {{ \"s\" = {scope:?} }}\n"
        )) {
            Ok(_) => "(parsed)".to_owned(),
            Err(error) => error.to_string(),
        };
        assert!(said.contains(why), "{scope}: {said}");
    }
}

#[test]
fn a_person_answering_for_a_name_no_agent_has_is_noticed_at_start() {
    // cy answers for "oauth:ci-agent" and the scope's "deployer": known.
    assert_eq!(oauth("").expect("parses").notices(), Vec::<String>::new());
    // Before "oauth:", a token's client ci-agent was "ci-agent".
    let written = OAUTH.replace(
        "\"oauth:ci-agent\", \"deployer\"",
        "\"ci-agent\", \"build-bot\"",
    );
    let config = with_upstream(&written).expect("parses: the name may be an askgate ask's");
    assert_eq!(
        config.notices(),
        [
            r#""cy" answers for "ci-agent", which is no [[principals]] entry nor a principal of scope_principals: an agent an OAuth token names by its claim is "oauth:ci-agent" (write that in answers_for, and say whom it acts for in [listen.oauth.acts_for]), or map a scope to "ci-agent" with scope_principals"#
        ]
    );
    // Without [listen.oauth] no token names an agent: nothing to say.
    let no_oauth = written.split("\n[listen]").next().expect("the head");
    assert!(
        with_upstream(no_oauth)
            .expect("parses")
            .notices()
            .is_empty()
    );
}

#[test]
fn an_oauth_agents_client_speaks_for_its_person_only_when_tokens_name_their_users() {
    let acts_for =
        "\n[listen.oauth.acts_for]\n\"oauth:ci-agent\" = [\"cy\"]\ndeployer = [\"bo\"]\n";
    let none = args(json!({}));
    let client_person = |config: &Config, principal: &str| {
        config
            .approvals
            .for_call("files", "write_file", Risk::MediumWrite, &none, principal)
            .expect("matches")
            .client_person()
            .map(str::to_owned)
    };
    // Named by its application's client_id, which all its users share:
    // whoever's client said yes, it was not told apart as Cy's.
    let by_client = oauth(acts_for).expect("parses");
    assert_eq!(client_person(&by_client, "oauth:ci-agent"), None);
    // Nor whoever holds the deployer scope.
    assert_eq!(client_person(&by_client, "deployer"), None);
    // Named by its user (principal_claim = "sub"): its client is Cy's.
    let by_user = oauth(&format!("principal_claim = \"sub\"\n{acts_for}")).expect("parses");
    assert_eq!(
        client_person(&by_user, "oauth:ci-agent").as_deref(),
        Some("cy")
    );
    assert_eq!(client_person(&by_user, "deployer"), None);
}

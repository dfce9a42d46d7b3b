//! `[[approvals]]`: who approves which calls, checked at load against the
//! people, their groups and the agents' people.

use askgate_core::approval::{Ineligible, Progress};

use super::*;

/// Three SRE people (Cy works with the `ci-agent` agent) and one on call.
const TEAM: &str = r#"
[[principals]]
name = "ci-agent"
token = "agent-token-0123456789"
acts_for = ["cy"]

[[people]]
name = "ana"
token = "ana-token-0123456789"
answers_for = ["*"]
groups = ["sre"]

[[people]]
name = "bo"
token = "bo-token-01234567890"
answers_for = ["*"]
groups = ["sre", "oncall"]

[[people]]
name = "cy"
token = "cy-token-01234567890"
answers_for = ["*"]
groups = ["sre"]

[[people]]
name = "di"
token = "di-token-01234567890"
answers_for = ["*"]
groups = ["oncall"]
"#;

fn refused(approvals: &str) -> String {
    match with_upstream(&format!("{TEAM}{approvals}")) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_rule_that_could_never_settle_is_refused_at_load_saying_why() {
    let cases = [
        (
            "[[approvals]]\ntool = \"delete\"\nany_of = [\"sre\", \"dba\"]\n",
            r#"askgate.toml:34: approvals[0]: "dba" is neither a person nor a group; known: oncall, sre, ana, bo, cy, di"#,
        ),
        (
            "[[approvals]]\nquorum = { of = \"oncall\", need = 3 }\n",
            r#"askgate.toml:34: approvals[0]: a quorum of "oncall" needs 3, but "oncall" has 2 people: the ask could never settle"#,
        ),
        (
            "[[approvals]]\ntool = \"delete\"\n",
            r#"askgate.toml:34: approvals[0]: an approval rule names who approves: any_of = ["GROUP", "PERSON", ...] or quorum = { of = "GROUP", need = N }"#,
        ),
        (
            "[[approvals]]\nany_of = [\"sre\"]\nquorum = { of = \"sre\", need = 2 }\n",
            "askgate.toml:36: approvals[0].quorum: write any_of or quorum, not both: any_of lets the first of them answer, a quorum needs `need` of one group",
        ),
        (
            "[[approvals]]\nany_of = [\"sre\"]\nrisk = \"destrutive\"\n",
            r#"askgate.toml:36: approvals[0].risk: risk = "destrutive": expected a risk (read, low_write, medium_write, high_write, destructive) or a list of them"#,
        ),
        (
            "[[approvals]]\nany_of = [\"sre\"]\nnot = \"ana\"\n",
            r#"askgate.toml:36: approvals[0].not: not = "ana": the one value is "requester" (the people the calling agent acts for never approve its asks)"#,
        ),
        (
            "[[approvals]]\nany_of = [\"sre\"]\nescalate = { after = \"2h\", to = \"oncall\" }\nexpires = \"1h\"\n",
            "askgate.toml:34: approvals[0]: escalate.after (2h) must be shorter than expires (1h), or nobody is ever escalated to",
        ),
        (
            "[[approvals]]\nany_of = [\"sre\"]\nexpires = \"0s\"\n",
            r#"askgate.toml:36: approvals[0].expires: expires = "0s": expected a duration from 1s to 720h, written like "30s", "5m" or "2h""#,
        ),
        (
            "[[approvals]]\nany_of = [\"sre\"]\nquorom = 2\n",
            "(unknown key)",
        ),
    ];
    let mut wrong = Vec::new();
    for (approvals, expected) in cases {
        let said = refused(approvals);
        if expected == "(unknown key)" {
            assert!(said.contains("quorom") && said.contains("quorum"), "{said}");
        } else if said != expected {
            wrong.push(said);
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn people_groups_and_agents_people_are_checked_too() {
    let said = error_with(
        "[[principals]]\nname = \"bot\"\ntoken = \"agent-token-0123456789\"\nacts_for = [\"zed\"]\n",
    );
    assert_eq!(
        said,
        r#"askgate.toml:8: principals[0].acts_for[0]: principal "bot" acts for "zed", who is not in [[people]]"#
    );
    let said = error_with(
        "[[people]]\nname = \"sre\"\ntoken = \"sre-token-0123456789\"\nanswers_for = [\"*\"]\n\
         [[people]]\nname = \"ana\"\ntoken = \"ana-token-0123456789\"\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n",
    );
    assert_eq!(
        said,
        r#"askgate.toml:13: people[1].groups[0]: "sre" names both a person and a group; rename one of them"#
    );
}

fn error_with(rest: &str) -> String {
    match with_upstream(rest) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn the_first_matching_rule_decides_who_approves_a_call() {
    let config = with_upstream(&format!(
        "{TEAM}\
         [[approvals]]\nserver = \"files\"\ntool = \"delete_*\"\nrisk = [\"high_write\", \"destructive\"]\n\
         quorum = {{ of = \"sre\", need = 2 }}\nescalate = {{ after = \"30m\", to = \"oncall\" }}\nexpires = \"2h\"\n\
         [[approvals]]\narguments = {{ env = \"prod*\" }}\nany_of = [\"oncall\"]\n"
    ))
    .expect("parses");
    let approvals = &config.approvals;
    let none = args(json!({}));
    // The agent acts for Cy: at destructive, Cy is kept out.
    let delete = approvals
        .for_call("files", "delete_file", Risk::Destructive, &none, "ci-agent")
        .expect("the first rule");
    assert_eq!(delete.panel.rule, "approvals[0]");
    assert_eq!(delete.panel.who, "2 of sre");
    assert_eq!(delete.acts_for, ["cy"]);
    assert_eq!(
        delete.expires,
        Some(std::time::Duration::from_secs(2 * 60 * 60))
    );
    assert_eq!(
        delete.panel.eligible("cy", false),
        Err(Ineligible::Requester {
            person: "cy".into(),
            risk: Risk::Destructive
        })
    );
    assert_eq!(delete.panel.eligible("di", true), Ok(()));
    assert_eq!(
        delete.panel.tally(&[], false),
        Progress::Waiting {
            accepts_needed: 2,
            declines_needed: 1
        }
    );
    // Its risk list leaves a medium write to the next rule, which needs a
    // production argument.
    assert!(
        approvals
            .for_call("files", "delete_file", Risk::MediumWrite, &none, "ci-agent")
            .is_none()
    );
    let prod = args(json!({"env": "production"}));
    let deploy = approvals
        .for_call("files", "deploy", Risk::MediumWrite, &prod, "anonymous")
        .expect("the second rule");
    assert_eq!(deploy.panel.rule, "approvals[1]");
    assert!(deploy.acts_for.is_empty(), "stdio's caller acts for nobody");
    assert_eq!(deploy.client_person(), None);
}

#[test]
fn the_readmes_team_of_three_loads_and_means_what_it_says() {
    let block = readme_toml("### Who approves what");
    let tokens = [
        "ana-token-0123456789",
        "bo-token-01234567890",
        "cy-token-01234567890",
        "agent-token-0123456789",
    ];
    let mut text = block.to_owned();
    for (placeholder, token) in [
        "<32 random bytes, hex>",
        "<another>",
        "<another>",
        "<another>",
    ]
    .into_iter()
    .zip(tokens)
    {
        text = text.replacen(placeholder, token, 1);
    }
    let config = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{text}\n\
         [[upstreams]]\nname = \"deployer\"\ncommand = \"deployer-server\"\n"
    ))
    .expect("the README's example loads");
    let ship = config
        .approvals
        .for_call(
            "deployer",
            "ship",
            Risk::Destructive,
            &args(json!({})),
            "cy-agent",
        )
        .expect("the rule");
    assert_eq!(ship.panel.who, "2 of sre");
    assert!(
        ship.panel.eligible("cy", false).is_err(),
        "Cy's own agent asked"
    );
    assert!(ship.panel.eligible("bo", false).is_ok());
    assert_eq!(
        ship.panel.escalates_after(),
        Some(jiff::SignedDuration::from_mins(30))
    );
    assert!(
        config
            .approvals
            .for_call(
                "deployer",
                "status",
                Risk::Read,
                &args(json!({})),
                "cy-agent"
            )
            .is_none(),
        "reads are not under the rule"
    );
}

#[test]
fn the_caller_without_a_token_acts_for_whom_the_top_level_acts_for_says() {
    let rule = "[[approvals]]\nany_of = [\"sre\"]\nnot = \"requester\"\n";
    let config = above("acts_for = [\"cy\"]\n", &format!("{TEAM}{rule}")).expect("loads");
    let none = Map::new();
    for caller in ["anonymous", "local"] {
        let approving = config
            .approvals
            .for_call("files", "x", Risk::LowWrite, &none, caller)
            .expect("the rule");
        assert_eq!(approving.acts_for, ["cy"], "{caller}");
        assert_eq!(approving.panel.unanswerable(), None);
        assert!(approving.panel.eligible("cy", false).is_err(), "{caller}");
    }
    // Unknown people are refused at their line.
    let error = refused_top("acts_for = [\"zed\"]\n");
    assert!(
        error.contains(
            "the caller without a token (acts_for) acts for \"zed\", who is not in [[people]]"
        ),
        "{error}"
    );
    // Without it, not = "requester" cannot be kept for that caller: its
    // calls under the rule are refused before anyone is asked.
    let config = with_upstream(&format!("{TEAM}{rule}")).expect("loads");
    let anonymous = config
        .approvals
        .for_call("files", "x", Risk::LowWrite, &none, "anonymous")
        .expect("the rule");
    let why = anonymous
        .panel
        .unanswerable()
        .expect("unanswerable")
        .to_string();
    assert!(
        why.contains("this agent acts for nobody in [[people]]"),
        "{why}"
    );
}

/// The error of `top` above the team's config.
fn refused_top(top: &str) -> String {
    match above(top, TEAM) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn names_an_answer_list_or_a_log_line_would_garble_and_oauths_prefix_are_refused() {
    let comma = "people = [{ name = \"ana, bo\", token = \"ab-token-0123456789\", answers_for = [\"*\"] }]\n";
    let error = above(comma, "").expect_err("comma").to_string();
    assert!(error.contains("it holds a comma"), "{error}");
    let group = "people = [{ name = \"al\", token = \"al-token-0123456789\", answers_for = [\"*\"], groups = [\"sre\\n\"] }]\n";
    let error = above(group, "").expect_err("control").to_string();
    assert!(error.contains("control character"), "{error}");
    let oauth = "principals = [{ name = \"oauth:ci\", token = \"agent-token-0123456789\" }]\n";
    let error = above(oauth, "").expect_err("prefix").to_string();
    assert!(error.contains("starts with \"oauth:\""), "{error}");
}

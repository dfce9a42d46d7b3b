//! Signing in and answering: the same checks as over MCP, no agent's token, the
//! operator's token in a private file.

use askgate_store::AskStatus;
use askgate_testkit::page::{field_error, hidden};
use reqwest::StatusCode;
use reqwest::header::LOCATION;
use serde_json::{Value as Json, json};

use super::{
    AGENT, ALICE, cookie, get, park, post, post_answer, post_sign_in, row_of, sign_in, start,
};

#[tokio::test]
async fn a_person_signs_in_and_answers_an_ask_with_the_same_checks_as_mcp() {
    let server = start().await;
    let store = park(&server, "ask_deploy", "alice").await;

    signed_out_only_a_persons_token_signs_in(&server).await;

    let session = sign_in(&server, ALICE).await;
    let (status, list) = get(&server, &session, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        list.contains("Deploy web to production?") && list.contains("ask_deploy"),
        "{list}"
    );

    let (status, page) = get(&server, &session, "/asks/ask_deploy").await;
    assert_eq!(status, StatusCode::OK);
    shows_the_deploy_form_typed(&page);
    let csrf = hidden(&page, "csrf");
    let answer = [
        ("csrf", csrf.as_str()),
        ("action", "accept"),
        ("f.replicas", "9"),
        ("f.env", "prod"),
        ("f.window.from", "2026-12-01T09:00"),
        ("f.window.to", "2026-12-01T17:00"),
    ];

    forged_answers_are_refused(&server, &session, &answer).await;

    // A value out of range: the form again, the error beside the field.
    let (status, page) = post_answer(&server, &session, "ask_deploy", &answer).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let error = field_error(&page, "replicas");
    assert!(
        error.contains("Replicas"),
        "the error names the field: {error}"
    );
    assert!(
        page.contains("value=\"9\""),
        "what the person typed is kept"
    );
    let row = row_of(&store, "ask_deploy").await;
    assert_eq!(
        row.status,
        AskStatus::Pending,
        "a refused answer stores nothing"
    );

    let mut right = answer.to_vec();
    right[2] = ("f.replicas", "3");
    let (status, _) = post_answer(&server, &session, "ask_deploy", &right).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_deploy").await;
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_via.as_deref(), Some("web"));
    assert_eq!(row.answered_by.as_deref(), Some("alice"));
    answered_with_the_deploy_values(&row);

    // Settled: the page shows the outcome; a second answer does not apply.
    let (status, page) = get(&server, &session, "/asks/ask_deploy").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("answered") && page.contains("alice"),
        "{page}"
    );
    let (status, _) = post_answer(&server, &session, "ask_deploy", &right).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_agents_token_does_not_sign_in_to_the_inbox() {
    let server = start().await;
    park(&server, "ask_agent", "ci-agent").await;
    let refused = post_sign_in(&server, AGENT).await;
    assert_eq!(
        refused.status(),
        StatusCode::UNAUTHORIZED,
        "refused exactly like an unknown token"
    );
    assert!(cookie(&refused, "askgate_session").is_none());
    let page = refused.text().await.expect("html");
    assert!(page.contains("That token signs nobody in."), "{page}");
}

#[tokio::test]
async fn the_generated_operator_token_is_in_a_file_only_its_owner_reads_and_never_on_stderr() {
    let server = start().await;
    assert_eq!(
        server.operator_file,
        std::path::PathBuf::from(format!(
            "{}.key.operator-token",
            server.store_url.trim_start_matches("sqlite://")
        )),
        "beside the key"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&server.operator_file)
            .expect("the file")
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "readable and writable by its owner only"
        );
    }
    assert!(server.operator_token.len() >= 32);
    let operator = sign_in(&server, &server.operator_token.clone()).await;
    let (status, page) = get(&server, &operator, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("(operator)"), "{page}");
    let said = server.process.log.all().join("\n");
    assert!(
        !said.contains(&server.operator_token),
        "the token reached stderr: {said}"
    );
}

/// Signed out, the page sends a person to sign in; a wrong token signs
/// nobody in.
async fn signed_out_only_a_persons_token_signs_in(server: &super::Server) {
    let anonymous = server
        .http
        .get(format!("{}/", server.base))
        .send()
        .await
        .expect("a page");
    assert_eq!(
        anonymous.status(),
        StatusCode::SEE_OTHER,
        "signed out: to the sign-in page"
    );
    assert!(
        anonymous.headers()[LOCATION]
            .to_str()
            .expect("text")
            .starts_with("/login")
    );

    // A wrong token signs nobody in.
    let refused = post_sign_in(server, "not-a-token-at-all-000000").await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(cookie(&refused, "askgate_session").is_none());
}

/// The deploy ask's page: typed inputs with their bounds, the default
/// filled in, hotkeys, the zone, who asks and at what risk.
fn shows_the_deploy_form_typed(page: &str) {
    assert!(
        page.contains("type=\"number\"")
            && page.contains("min=\"1\"")
            && page.contains("max=\"5\"")
    );
    assert!(page.contains("value=\"2\""), "the default is filled in");
    assert!(page.contains("data-hotkey=\"p\"") && page.contains("Production"));
    assert!(page.contains("Europe/Paris") && page.contains("type=\"datetime-local\""));
    assert!(page.contains("deployer") && page.contains("high_write"));
}

/// Without the CSRF token, with a forged one, or from another origin: an
/// answer is refused.
async fn forged_answers_are_refused(
    server: &super::Server,
    session: &str,
    answer: &[(&str, &str)],
) {
    let without: Vec<_> = answer
        .iter()
        .copied()
        .filter(|(k, _)| *k != "csrf")
        .collect();
    let (status, _) = post_answer(server, session, "ask_deploy", &without).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let mut wrong = answer.to_vec();
    wrong[0] = ("csrf", "forged-token");
    let (status, _) = post_answer(server, session, "ask_deploy", &wrong).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post(
        server,
        session,
        "/asks/ask_deploy",
        Some("https://evil.example"),
        answer,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

/// The settled deploy ask holds the values the person gave, typed and in
/// the form's zone.
fn answered_with_the_deploy_values(row: &askgate_store::AskRow) {
    let outcome = askgate_mcp::stored::form_outcome(&row.ask.request, row.reply.as_ref())
        .expect("readable")
        .expect("settled");
    let values = match outcome {
        askgate_core::Outcome::Accepted { values } => values,
        other => panic!("expected accepted, got {other:?}"),
    };
    let json: Json = serde_json::to_value(&values).expect("json");
    assert_eq!(json["replicas"]["value"], json!(3));
    assert_eq!(json["env"]["value"], json!("prod"));
    assert_eq!(
        json["window"]["value"]["from"],
        json!("2026-12-01T09:00:00+01:00")
    );
}

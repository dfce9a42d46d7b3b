use serde_json::json;

use super::*;

fn settings() -> OidcSettings {
    OidcSettings {
        issuer: "http://127.0.0.1:1".into(),
        client_id: "askgate".into(),
        client_secret: "s3cret".into(),
        scopes: vec!["openid".into(), "profile".into()],
        name_claim: "preferred_username".into(),
        groups_claim: "groups".into(),
        groups: vec!["sre".into(), "oncall".into()],
        answers_for: vec!["*".into()],
    }
}

fn claims(value: Json) -> Map<String, Json> {
    match value {
        Json::Object(map) => map,
        _ => unreachable!("an object"),
    }
}

/// `check_claims` with nobody of the config signing in with a token.
fn check_claims_free(
    settings: &OidcSettings,
    claims: &Map<String, Json>,
    nonce: &str,
) -> Result<Person, Refusal> {
    check_claims(settings, claims, nonce, &crate::People::default())
}

fn refused(claims: &Map<String, Json>, nonce: &str) -> Refusal {
    match check_claims_free(&settings(), claims, nonce) {
        Err(refusal) => refusal,
        Ok(person) => panic!("signed in {person:?}"),
    }
}

#[test]
fn the_pkce_challenge_is_the_rfc_7636_example() {
    // RFC 7636, Appendix B.
    assert_eq!(
        challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    let fresh = verifier().expect("randomness");
    assert_eq!(fresh.len(), 43);
    assert_ne!(fresh, verifier().expect("randomness"));
}

#[test]
fn a_person_of_a_configured_group_signs_in_with_those_groups_only() {
    let ana = claims(json!({
        "nonce": "n-1", "aud": "askgate", "preferred_username": "ana",
        "groups": ["sre", "payroll"],
    }));
    let person = check_claims_free(&settings(), &ana, "n-1").expect("signs in");
    assert_eq!(person.name, "ana");
    assert_eq!(person.groups, ["sre"]);
    assert_eq!(person.answers_for, ["*"]);
    assert!(!person.operator);
    // A groups claim given as words separated by spaces.
    let bo = claims(json!({"nonce": "n-2", "preferred_username": "bo", "groups": "oncall sre"}));
    let person = check_claims_free(&settings(), &bo, "n-2").expect("signs in");
    assert_eq!(person.groups, ["sre", "oncall"]);
}

#[test]
fn an_id_token_of_another_sign_in_is_refused_by_its_nonce() {
    let ana = claims(json!({"nonce": "n-1", "preferred_username": "ana", "groups": ["sre"]}));
    assert!(refused(&ana, "n-2").log.contains("nonce"));
    let none = claims(json!({"preferred_username": "ana", "groups": ["sre"]}));
    assert!(refused(&none, "n-2").log.contains("nonce"));
}

#[test]
fn an_id_token_for_several_audiences_must_have_been_issued_to_askgate() {
    let other = claims(json!({
        "nonce": "n", "aud": ["askgate", "other"], "azp": "other",
        "preferred_username": "ana", "groups": ["sre"],
    }));
    assert!(refused(&other, "n").log.contains("azp"));
    let ours = claims(json!({
        "nonce": "n", "aud": ["askgate", "other"], "azp": "askgate",
        "preferred_username": "ana", "groups": ["sre"],
    }));
    assert!(check_claims_free(&settings(), &ours, "n").is_ok());
}

#[test]
fn nobody_outside_the_configured_groups_signs_in() {
    let ed = claims(json!({"nonce": "n", "preferred_username": "ed", "groups": ["dev"]}));
    let refusal = refused(&ed, "n");
    assert_eq!(refusal.status, StatusCode::FORBIDDEN);
    assert_eq!(
        refusal.message,
        "ed is in none of the groups that may sign in here (sre, oncall)."
    );
    let no_groups = claims(json!({"nonce": "n", "preferred_username": "ed"}));
    assert_eq!(refused(&no_groups, "n").status, StatusCode::FORBIDDEN);
}

#[test]
fn a_token_without_the_name_claim_or_with_a_reserved_name_signs_nobody_in() {
    let nameless = claims(json!({"nonce": "n", "sub": "x", "groups": ["sre"]}));
    assert!(
        refused(&nameless, "n")
            .message
            .contains("no preferred_username claim")
    );
    for reserved in ["operator", "link:agent"] {
        let token =
            claims(json!({"nonce": "n", "preferred_username": reserved, "groups": ["sre"]}));
        assert!(
            refused(&token, "n").message.contains("keeps for itself"),
            "{reserved}"
        );
    }
}

#[test]
fn the_state_cookie_comes_back_from_the_provider_to_the_callback_only() {
    let cookie = state_cookie("st", true, 600);
    assert_eq!(
        cookie,
        "askgate_oidc=st; Path=/login/oidc/callback; HttpOnly; SameSite=Lax; Secure; Max-Age=600"
    );
}

#[test]
fn the_client_secret_is_never_in_debug_output() {
    let shown = format!("{:?}", settings());
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn a_name_of_a_person_of_the_config_is_not_the_providers_to_sign_in() {
    let ana = claims(json!({"nonce": "n", "preferred_username": "ana", "groups": ["sre"]}));
    let refusal = check_claims(&settings(), &ana, "n", &config_people())
        .expect_err("ana signs in with her token");
    assert_eq!(refusal.status, StatusCode::FORBIDDEN);
    assert!(
        refusal.message.contains("a person of askgate's config"),
        "{}",
        refusal.message
    );
}

/// Ana and Cy sign in with tokens; Cy is also `cy-sub` at the provider.
fn config_people() -> crate::People {
    // Cy is an operator by her token; a provider's sign-in is not.
    let person = |name: &str| Person {
        name: name.to_owned(),
        answers_for: vec!["bot".to_owned()],
        operator: name == "cy",
        groups: Vec::new(),
    };
    crate::People::default()
        .with_token("ana-token-0123456789", person("ana"))
        .with_token("cy-token-0123456789a", person("cy"))
        .with_subject("cy-sub", "cy")
}

#[test]
fn a_person_the_config_knows_by_their_subject_signs_in_as_themselves_under_any_name() {
    // Cy, whose agent asks, signs in with the provider as "cy@corp": it
    // is Cy's sign-in all the same, so Cy stays kept out of its asks.
    let cy = claims(json!({
        "nonce": "n", "sub": "cy-sub", "preferred_username": "cy@corp", "groups": ["sre"]
    }));
    let person = check_claims(&settings(), &cy, "n", &config_people()).expect("signs in");
    assert_eq!(person.name, "cy");
    assert_eq!(person.answers_for, ["bot"]);
    assert_eq!(person.groups, ["sre"]);
    assert!(!person.operator, "the provider never gives operator rights");
    // Out of every group that may sign in: refused, as anyone would be.
    let left = claims(json!({
        "nonce": "n", "sub": "cy-sub", "preferred_username": "cy@corp", "groups": ["dev"]
    }));
    let refusal =
        check_claims(&settings(), &left, "n", &config_people()).expect_err("in none of the groups");
    assert_eq!(refusal.status, StatusCode::FORBIDDEN);
    // Another subject under that name is somebody else.
    let other = claims(json!({
        "nonce": "n", "sub": "other", "preferred_username": "cy@corp", "groups": ["sre"]
    }));
    let person = check_claims(&settings(), &other, "n", &config_people()).expect("signs in");
    assert_eq!(person.name, "cy@corp");
}

#[test]
fn a_name_no_answer_could_record_plainly_signs_nobody_in() {
    for name in ["ana, bo", "ana\nINFO approved"] {
        let token = claims(json!({"nonce": "n", "preferred_username": name, "groups": ["sre"]}));
        let refusal = check_claims_free(&settings(), &token, "n").expect_err(name);
        assert_eq!(refusal.status, StatusCode::FORBIDDEN, "{name:?}");
        assert!(!refusal.log.contains("INFO"), "{}", refusal.log);
    }
}

//! `askgate key rotate`: a new key for the deployment, the old one kept
//! beside it so that what it sealed still opens — a client's retry that
//! carries a state sealed before the rotation still resumes — and a
//! replica still holding the old key alone is refused, told what to copy.

use askgate_testkit::mcp::text;
use askgate_testkit::person::READING;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use serde_json::{Value as Json, json};

use super::{input_requests, needs, retried, round_tripper, tool};

/// `askgate ARGS` with the setup's config (and no key file from the
/// environment): its output.
fn askgate(setup: &askgate_testkit::gateway::Setup, args: &[&str]) -> std::process::Output {
    std::process::Command::new(&setup.binaries().askgate)
        .args(args)
        .arg("--config")
        .arg(setup.config_path())
        .env("ASKGATE_LOG", "warn")
        .env_remove(askgate_gateway::keys::KEY_FILE_ENV)
        .output()
        .expect("askgate runs")
}

#[tokio::test]
async fn a_state_sealed_before_a_rotation_resumes_after_it_and_an_old_replica_is_told_what_to_copy()
{
    let setup = super::setup().config("");
    // A 2026 client is asked to confirm; its gateway stops before the
    // person's answer comes back.
    let (client, _) = round_tripper(&setup).await;
    let params = CallToolRequestParams::new(tool("delete_all_notes"));
    let needed = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    assert!(input_requests(&needed).contains_key("confirm"));
    let state = needed.request_state.clone().expect("a sealed state");
    client.cancel().await.expect("the gateway stops");

    let key_file = askgate_gateway::keys::key_path(setup.store_url());
    let old_key = std::fs::read(&key_file).expect("the first gateway made its key");
    let rotated = askgate(&setup, &["key", "rotate", "--json"]);
    assert!(rotated.status.success(), "{rotated:?}");
    let said: Json = serde_json::from_slice(&rotated.stdout).expect("JSON");
    let new_key = std::fs::read(&key_file).expect("the new key");
    assert_ne!(new_key, old_key, "a new key");
    assert_eq!(
        std::fs::read(askgate_gateway::keys::previous_path(&key_file)).expect("kept"),
        old_key,
        "the old key is kept beside it"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("there")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "readable by its owner only: {mode:o}");
    }
    let shown = askgate(&setup, &["key", "show"]);
    let shown_text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown:?}");
    assert!(
        shown_text.contains(said["fingerprint"].as_str().expect("a fingerprint"))
            && shown_text.contains("uses this key"),
        "{shown_text}"
    );

    // The person's answer comes with the state sealed under the old key,
    // to a gateway on the new one: the call resumes and runs.
    let (client, _) = round_tripper(&setup).await;
    tokio::time::sleep(READING).await;
    let answer = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let done = match client
        .call_tool_once(retried(&params, answer, Some(state)))
        .await
        .expect("a result")
    {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected the call's result, got {other:?}"),
    };
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    client.cancel().await.expect("the gateway stops");

    // A replica still holding the old key alone is refused, told to copy
    // both files.
    let elsewhere = setup.dir().write("old.key", "");
    std::fs::write(&elsewhere, &old_key).expect("writes");
    let old = std::process::Command::new(&setup.binaries().askgate)
        .args(["tools", "--config"])
        .arg(setup.config_path())
        .env("ASKGATE_LOG", "warn")
        .env(askgate_gateway::keys::KEY_FILE_ENV, &elsewhere)
        .output()
        .expect("askgate runs");
    assert_eq!(old.status.code(), Some(1), "{old:?}");
    let refused = String::from_utf8_lossy(&old.stderr);
    assert!(
        refused.contains("was rotated out of the store")
            && refused.contains("askgate key rotate")
            && refused.contains(".previous"),
        "{refused}"
    );

    // A rotation cut short after its files, before the store moved (as a
    // crash would leave it): the next rotate finishes it, rather than
    // being refused for holding a key that is not the store's.
    std::fs::write(askgate_gateway::keys::previous_path(&key_file), &new_key).expect("writes");
    std::fs::write(&key_file, [3u8; 32]).expect("writes");
    let refused_start = askgate(&setup, &["tools"]);
    assert_eq!(refused_start.status.code(), Some(1), "{refused_start:?}");
    assert!(
        String::from_utf8_lossy(&refused_start.stderr).contains("run `askgate key rotate` again"),
        "{refused_start:?}"
    );
    let finished = askgate(&setup, &["key", "rotate", "--json"]);
    assert!(finished.status.success(), "{finished:?}");
    let said: Json = serde_json::from_slice(&finished.stdout).expect("JSON");
    assert_eq!(
        said["fingerprint"],
        askgate_core::LinkSigner::new(vec![3u8; 32]).fingerprint(),
        "the key already written is the new one"
    );
    assert_eq!(std::fs::read(&key_file).expect("reads"), [3u8; 32], "kept");
    assert!(
        askgate(&setup, &["tools"]).status.success(),
        "it starts again"
    );
}

#[tokio::test]
async fn the_audit_chain_still_verifies_after_two_rotations_with_no_gateway_between() {
    let setup = super::setup().config("[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n");
    // A read is audited: the head record is signed under the first key.
    let (client, _) = round_tripper(&setup).await;
    let mut params = CallToolRequestParams::new(tool("read_note"));
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    client.call_tool_once(params).await.expect("a result");
    client.cancel().await.expect("the gateway stops");

    // Two rotations: the first key is gone from both files.
    for _ in 0..2 {
        let rotated = askgate(&setup, &["key", "rotate"]);
        assert!(rotated.status.success(), "{rotated:?}");
    }
    let verified = askgate(&setup, &["audit", "verify", "--json"]);
    let said: Json = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert!(verified.status.success(), "{said}");
    assert_eq!(said["entries"], 1, "{said}");
    assert_eq!(said["broken"], Json::Null, "{said}");
}

#[tokio::test]
async fn a_store_a_gateway_made_verifies_before_its_first_entry() {
    // The gateway made the store (its migration recorded the head) and
    // signed the head once it had the key: another process checking the
    // chain against the key finds it askgate's, with no entry yet.
    let setup = super::setup().config("");
    let (client, _) = round_tripper(&setup).await;
    client.cancel().await.expect("the gateway stops");
    let verified = askgate(&setup, &["audit", "verify", "--json"]);
    let said: Json = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert!(verified.status.success(), "{said}");
    assert_eq!(
        (said["entries"].clone(), said["broken"].clone()),
        (json!(0), Json::Null)
    );
}

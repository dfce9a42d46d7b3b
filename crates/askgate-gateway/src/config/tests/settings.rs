//! Upstream protocols, webhooks, the express lane, durable reads and the
//! trust settings.

use super::*;

#[test]
fn an_unknown_upstream_protocol_names_the_line_and_the_expected_values() {
    let text = "store = \"sqlite:///tmp/a.db\"\n[[upstreams]]\nname = \"x\"\ncommand = \"x\"\nprotocol = \"2024-11-05\"\n";
    let said = error(text);
    assert!(said.starts_with("askgate.toml:5:"), "{said}");
    assert!(said.contains("\"2024-11-05\""), "{said}");
    assert!(
        said.contains("\"2025-11-25\" (the default) or \"2026-07-28\""),
        "{said}"
    );
}

#[test]
fn the_example_notify_table_posts_to_slack() {
    let webhook = example().notify.expect("the example has [notify]");
    assert_eq!(webhook.preset, askgate_inbox::notify::Preset::Slack);
    assert!(webhook.url.starts_with("https://hooks.slack.com/"));
    assert!(webhook.headers.is_empty());
}

#[test]
fn notify_takes_a_webhook_a_preset_and_headers() {
    let config = with_upstream(
        "[notify]\nwebhook = \"https://hooks.example/askgate\"\n\
         headers = { Authorization = \"Bearer hook-secret\" }\n",
    )
    .expect("parses");
    let webhook = config.notify.expect("a webhook");
    assert_eq!(webhook.preset, askgate_inbox::notify::Preset::Generic);
    assert_eq!(webhook.headers["Authorization"], "Bearer hook-secret");
    assert!(!format!("{webhook:?}").contains("hook-secret"));
    assert!(with_upstream("").expect("parses").notify.is_none());
}

#[test]
fn notify_errors_name_the_line_and_the_key_and_never_the_url() {
    let cases = [
        (
            "[notify]\nwebhook = \"https://h/x\"\npreset = \"teams\"\n",
            "askgate.toml:7: notify.preset: unknown preset \"teams\": expected \"generic\" (the \
             default) or \"slack\"",
        ),
        (
            "[notify]\nwebhook = \"hooks.slack.com/services/s3cret\"\n",
            "askgate.toml:6: notify.webhook: invalid webhook URL; expected http://HOST/... or \
             https://HOST/...",
        ),
        (
            "[notify]\nwebhook = \"https://h/x\"\nheaders = { \"X Y\" = \"1\" }\n",
            "askgate.toml:7: notify.headers: invalid header name \"X Y\"",
        ),
        (
            "[notify]\nwebhok = \"https://h/x\"\n",
            "askgate.toml:6: notify.webhok: unknown field `webhok`, expected one of `webhook`, \
             `preset`, `headers`",
        ),
    ];
    for (text, expected) in cases {
        let got = match with_upstream(text) {
            Ok(_) => "(parsed)".to_owned(),
            Err(error) => error.to_string(),
        };
        assert_eq!(got, expected, "for {text:?}");
    }
}

#[test]
fn the_express_lane_is_on_unless_the_config_turns_it_off() {
    let on = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{UPSTREAM}"
    ))
    .expect("parses");
    assert!(on.express_lane);
    let off = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\nexpress_lane = false\n{UPSTREAM}"
    ))
    .expect("parses");
    assert!(!off.express_lane);
}

#[test]
fn durable_reads_makes_reads_wait_for_the_store() {
    let config = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\ndurable_reads = true\n{UPSTREAM}"
    ))
    .expect("parses");
    assert!(config.durable_reads);
}

#[test]
fn the_trust_settings_mean_what_they_say() {
    let config = with_top(
        "caller_confirm = \"medium_write\"\nmin_answer_ms = 400\ninbox_wait = \"30s\"\n\
         ask_expires = \"2h\"\nretry_window = \"1h\"\nstop_grace = \"90s\"\n\n[clients.\"claude-code\"]\nmin_answer_ms = 0\n",
    )
    .expect("parses");
    let c = &config.confirmations;
    assert_eq!(c.caller_confirm, Some(Risk::MediumWrite));
    assert_eq!(c.min_answer, std::time::Duration::from_millis(400));
    assert_eq!(
        c.min_answer_for(Some("claude-code")),
        std::time::Duration::ZERO
    );
    assert_eq!(
        c.min_answer_for(Some("codex")),
        std::time::Duration::from_millis(400)
    );
    assert_eq!(c.inbox_wait, std::time::Duration::from_secs(30));
    assert_eq!(c.ask_lifetime, std::time::Duration::from_secs(2 * 3600));
    assert_eq!(config.retry_window, std::time::Duration::from_secs(3600));
    assert_eq!(config.stop_grace, std::time::Duration::from_secs(90));
    // High risks need the named setting.
    let config =
        with_top("caller_confirm = \"destructive\"\ndanger_caller_confirm_high_risk = true\n")
            .expect("parses");
    assert_eq!(config.confirmations.caller_confirm, Some(Risk::Destructive));
}

#[test]
fn by_default_only_a_person_approves() {
    for config in [
        with_top("").expect("parses"),
        Config::for_command_with_store(vec!["server".into()], "sqlite://x.db".into())
            .expect("a config"),
    ] {
        let c = &config.confirmations;
        assert_eq!(c.caller_confirm, None, "the caller never stands in");
        assert_eq!(c.min_answer, std::time::Duration::from_millis(250));
        assert_eq!(c.inbox_wait, std::time::Duration::ZERO);
        assert_eq!(config.retry_window, std::time::Duration::from_secs(600));
        assert_eq!(config.stop_grace, std::time::Duration::from_secs(10));
    }
}

#[test]
fn an_upstreams_timeouts_have_defaults_and_zero_lifts_the_call_limit() {
    let plain = with_upstream("").expect("parses");
    assert_eq!(
        plain.upstreams[0].timeouts,
        crate::config::Timeouts {
            start: std::time::Duration::from_secs(30),
            call: Some(std::time::Duration::from_secs(60 * 60)),
        }
    );
    let set = with_upstream("start_timeout = \"5s\"\ncall_timeout = \"2h\"\n").expect("parses");
    assert_eq!(
        set.upstreams[0].timeouts.start,
        std::time::Duration::from_secs(5)
    );
    assert_eq!(
        set.upstreams[0].timeouts.call,
        Some(std::time::Duration::from_secs(7200))
    );
    let unlimited = with_upstream("call_timeout = \"0s\"\n").expect("parses");
    assert_eq!(unlimited.upstreams[0].timeouts.call, None);
}

#[test]
fn the_limits_have_defaults_and_take_what_limits_sets() {
    let defaults = with_top("").expect("parses");
    assert_eq!(defaults.limits, crate::config::Limits::default());
    assert_eq!(defaults.limits.sessions, 1024);
    assert_eq!(defaults.limits.serving.connections, 4096);
    assert_eq!(defaults.limits.serving.connections_per_peer, 1024);
    assert_eq!(defaults.limits.request_size(), 16 * 1024 * 1024);
    assert_eq!(defaults.limits.answer_size, 64 * 1024 * 1024);
    assert_eq!(defaults.confirmations.most_pending_per_principal, 256);
    let set = with_top(
        "[limits]\nsessions = 10\nheld_calls = 20\nheld_calls_per_principal = 5\n\
         pending_asks_per_principal = 7\nlive_pages = 3\nconnections = 30\n\
         connections_per_peer = 4\nheader_timeout = \"2s\"\nbody_pause = \"1m\"\n\
         request_mib = 2\nanswer_mib = 100\n",
    )
    .expect("parses");
    let limits = set.limits;
    assert_eq!(
        (limits.request_size(), limits.answer_size),
        (2 * 1024 * 1024, 100 * 1024 * 1024)
    );
    assert_eq!(
        (
            limits.sessions,
            limits.held_calls,
            limits.held_calls_per_principal
        ),
        (10, 20, 5)
    );
    assert_eq!(set.confirmations.most_pending_per_principal, 7);
    assert_eq!(limits.live_pages, 3);
    assert_eq!(
        (
            limits.serving.connections,
            limits.serving.connections_per_peer
        ),
        (30, 4)
    );
    assert_eq!(
        limits.serving.headers_within,
        std::time::Duration::from_secs(2)
    );
    assert_eq!(
        limits.serving.body_pause,
        std::time::Duration::from_secs(60)
    );
    // A whole under the default share: the share follows it down.
    let small = with_top("[limits]\nconnections = 100\nheld_calls = 50\n").expect("parses");
    assert_eq!(small.limits.serving.connections_per_peer, 100);
    assert_eq!(small.limits.held_calls_per_principal, 50);
}

#[test]
fn listen_oauth_needs_https_urls_and_stands_in_for_static_tokens() {
    let listen = "[listen]\naddr = \"0.0.0.0:8080\"\nallow_plain_http = true\n\n[listen.oauth]\n";
    let config = with_upstream(&format!(
        "{listen}issuer = \"https://idp.example\"\nresource = \"https://askgate.example/mcp\"\n\
         scopes = [\"askgate:call\"]\n"
    ))
    .expect("no principals needed: the authorization server names them");
    let oauth = config
        .listen
        .and_then(|l| l.oauth)
        .expect("[listen.oauth] is read");
    assert_eq!(oauth.issuer, "https://idp.example");
    assert_eq!(oauth.resource, "https://askgate.example/mcp");
    assert_eq!(oauth.scopes, ["askgate:call"]);
    assert_eq!(oauth.principal_claim, None);
    let said = match with_upstream(&format!(
        "{listen}issuer = \"http://idp.example\"\nresource = \"https://askgate.example/mcp\"\n"
    )) {
        Ok(_) => "(parsed)".to_owned(),
        Err(error) => error.to_string(),
    };
    assert_eq!(
        said,
        r#"askgate.toml:10: listen.oauth.issuer: issuer = "http://idp.example": expected an https:// URL (http:// only on this machine: localhost, 127.0.0.1, [::1])"#
    );
}

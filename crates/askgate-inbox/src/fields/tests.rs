use super::*;

fn form(json: Json) -> Vec<Field> {
    serde_json::from_value(json).expect("fields")
}

#[test]
fn a_posted_form_reads_back_into_each_fields_shape() {
    let fields = form(serde_json::json!([
        {"id": "replicas", "title": "Replicas", "type": "integer"},
        {"id": "ok", "title": "OK", "type": "boolean"},
        {"id": "env", "title": "Env", "type": "choice", "options": [{"value": "prod", "label": "Prod"}]},
        {"id": "tags", "title": "Tags", "type": "choice", "multiple": true, "strict": false,
         "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]},
        {"id": "at", "title": "At", "type": "instant"},
        {"id": "window", "title": "Window", "type": "time_range", "zone": "Europe/Paris"},
        {"id": "note", "title": "Note", "type": "text", "required": false}
    ]));
    let refs: Vec<&Field> = fields.iter().collect();
    let posted = Posted::from(
        [
            ("f.replicas", "3"),
            ("f.ok.shown", "1"),
            ("f.env", "prod"),
            ("f.tags", "a"),
            ("f.tags", "b"),
            ("f.tags.other", "c"),
            ("f.at", "2026-12-01T10:00"),
            ("f.at.zone", "Asia/Tokyo"),
            ("f.window.from", "2026-12-01T09:00"),
            ("f.window.to", "2026-12-01T17:00"),
            ("f.note", "  "),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect::<Vec<_>>(),
    );
    let values = read_form(&refs, &posted);
    assert_eq!(
        Json::Object(values),
        serde_json::json!({
            "replicas": 3,
            "ok": false,
            "env": "prod",
            "tags": ["a", "b", "c"],
            "at": "2026-12-01T10:00[Asia/Tokyo]",
            "window": {"from": "2026-12-01T09:00", "to": "2026-12-01T17:00"}
        })
    );
}

#[test]
fn a_sensitive_field_is_never_shown_back() {
    let fields = form(serde_json::json!([
        {"id": "token", "title": "Token", "type": "text", "sensitive": true}
    ]));
    let posted = Posted::from(vec![("f.token".into(), "s3cret-value".into())]);
    let html = field(&fields[0], Some(&posted), Some("Token: too short")).into_string();
    assert!(html.contains("type=\"password\""), "{html}");
    assert!(!html.contains("s3cret-value"), "{html}");
    assert!(html.contains("Token: too short"), "{html}");
    // Marked, so that a page keeping an answer leaves it out.
    assert!(html.contains("name=\"f.token.secret\""), "{html}");
    let kept = Posted::from(vec![
        ("f.token".into(), "s3cret-value".into()),
        ("f.token.secret".into(), "1".into()),
        ("f.tokens".into(), "plain".into()),
        ("csrf".into(), "c".into()),
    ]);
    let pairs: Vec<(&str, &str)> = kept.pairs_but_secrets().collect();
    assert_eq!(pairs, [("csrf", "c"), ("f.tokens", "plain")]);
    assert!(kept.has_secrets());
}

#[test]
fn an_instants_default_is_shown_in_its_zone_and_sent_back_as_the_same_instant() {
    let field: Field = serde_json::from_value(serde_json::json!(
        {"id": "at", "title": "Start at", "type": "instant", "zone": "Europe/Paris",
         "default": "2026-12-01T21:00:00Z"}
    ))
    .expect("a field");
    let html = super::field(&field, None, None).into_string();
    // 21:00 UTC is 22:00 in Paris on 1 December.
    assert!(html.contains(r#"value="2026-12-01T22:00""#), "{html}");
    let utc: Field = serde_json::from_value(serde_json::json!(
        {"id": "at", "title": "Start at", "type": "instant", "default": "2026-12-01T22:00:00+01:00"}
    ))
    .expect("a field");
    let html = super::field(&utc, None, None).into_string();
    // No zone of its own: shown in UTC, and the picker says so.
    assert!(
        html.contains(r#"value="2026-12-01T21:00""#) && html.contains(r#"value="UTC""#),
        "{html}"
    );
}

#[test]
fn a_group_of_options_is_named_by_its_legend_and_no_label_points_at_nothing() {
    let fields = form(serde_json::json!([
        {"id": "env", "title": "Environment", "type": "choice",
         "options": [{"value": "prod", "label": "Prod"}, {"value": "dev", "label": "Dev"}]},
        {"id": "zone", "title": "Your zone", "type": "zone", "required": false,
         "options": [{"value": "Europe/Paris", "label": "Paris"}]},
        {"id": "note", "title": "Note", "type": "text"}
    ]));
    for (field, title, required) in [
        (&fields[0], "Environment", true),
        (&fields[1], "Your zone", false),
    ] {
        let page = super::field(field, None, None).into_string();
        let legend = format!("<fieldset class=\"options\"><legend>{title}");
        assert!(page.contains(&legend), "{page}");
        assert_eq!(page.contains("title=\"required\""), required, "{page}");
        assert!(
            !page.contains("<label for="),
            "a label for no input: {page}"
        );
    }
    // A field with its own input keeps its label for it.
    let note = super::field(&fields[2], None, None).into_string();
    assert!(note.contains("<label for=\"f.note\">Note"), "{note}");
    assert!(note.contains("id=\"f.note\""), "{note}");
}

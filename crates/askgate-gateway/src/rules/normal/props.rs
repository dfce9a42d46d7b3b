//! Properties of the normal form: every way of writing a value a rule is
//! about has the same normal form, and the normal form is a fixed point.
//! Each property says what a user would notice if it failed.

use proptest::prelude::*;

use super::{normal, problem};

/// A path segment, the tricky ones often.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just("..".to_owned()),
        2 => Just(".".to_owned()),
        1 => Just(String::new()),
        1 => Just("...".to_owned()),
        1 => Just(".x".to_owned()),
        1 => Just("x..".to_owned()),
        4 => "[a-z0-9_-]{1,5}",
    ]
}

/// A name (a segment that is neither `.`, `..` nor empty).
fn name() -> impl Strategy<Value = String> {
    "[a-z0-9_-]{1,5}"
}

/// Segments and whether the path ends with a `/`.
fn segments() -> impl Strategy<Value = (Vec<String>, bool)> {
    (prop::collection::vec(segment(), 0..10), any::<bool>())
}

/// `segments` joined with `/`, after `start`, with a trailing `/` or not.
fn join(start: &str, segments: &[String], trailing: bool) -> String {
    let mut text = format!("{start}{}", segments.join("/"));
    if trailing {
        text.push('/');
    }
    text
}

/// Text made of the characters the normal form reads, in any order: it
/// finds the inputs nobody writes on purpose.
fn tricky_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9./:%@?#\\\\\t\n _~-]{0,40}"
}

/// Text made of the pieces the normal form reads (`%2`, `:443`, `..`,
/// `://`), in any order.
fn tricky_pieces() -> impl Strategy<Value = String> {
    let pieces = vec![
        "https", "HTTP", "s3", "://", ":\\\\", ":/\\", ":", "/", "//", "\\", ".", "..", "%", "%2",
        "%2e", "%2E", "%32", "%65", "%25", "%2f", "@", ":443", ":80", "?", "#", "\t", "\n", " ",
        "a", "B", "host", "~",
    ];
    prop::collection::vec(prop::sample::select(pieces), 0..14).prop_map(|p| p.concat())
}

/// A URL built of the pieces its host, port and path are read from
/// (`..`, `:443`, `@`, `%%32%65`), in any order.
fn tricky_url() -> impl Strategy<Value = String> {
    let authority = vec![
        "a", "B", ".", "..", ":", ":443", ":0443", ":80", ":8443", "@", "%2e", "%%32%65", "%41",
        "%2f", "[::1]", "/", "//", "\\",
    ];
    let path = vec![
        "/", "//", "\\", ".", "..", "a", "%2e", "%2E", "%%32%65", "%2f", "%2F", "?", "#", "@",
    ];
    (
        prop::sample::select(vec!["https", "HTTP", "ws", "ftp", "file", "s3"]),
        prop::sample::select(vec!["://", ":\\\\", ":/\\", ":\\/"]),
        prop::collection::vec(prop::sample::select(authority), 0..8),
        prop::collection::vec(prop::sample::select(path), 0..8),
    )
        .prop_map(|(scheme, slashes, authority, path)| {
            format!("{scheme}{slashes}{}{}", authority.concat(), path.concat())
        })
}

/// A URL with a random-case scheme and host, and the parts it is written
/// with: (scheme, host labels, path segments, query).
fn url_parts() -> impl Strategy<Value = (String, Vec<String>, Vec<String>, String)> {
    (
        prop::sample::select(vec!["https", "http", "wss", "ws", "s3", "ftp"]),
        prop::collection::vec("[a-zA-Z0-9-]{1,6}", 1..4),
        prop::collection::vec(segment(), 0..6),
        prop_oneof![Just(String::new()), "\\?[a-z=&/.]{0,8}", "#[a-z/.]{0,6}"],
    )
        .prop_map(|(scheme, host, path, query)| (scheme.to_owned(), host, path, query))
}

/// The URL of `url_parts` as written: `scheme://host/path…query`.
fn write_url(scheme: &str, host: &[String], path: &[String], query: &str) -> String {
    let path = if path.is_empty() {
        String::new()
    } else {
        format!("/{}", path.join("/"))
    };
    format!("{scheme}://{}{path}{query}", host.join("."))
}

/// The lexical resolution of `/tmp/` + `segments`, worked out on its own:
/// a stack of names, `..` popping one (the root's parent is the root).
fn resolved_under_tmp(segments: &[String], ends_with_slash: bool) -> String {
    let mut names = vec!["tmp"];
    for segment in segments {
        match segment.as_str() {
            "" | "." => {}
            ".." => {
                names.pop();
            }
            name => names.push(name),
        }
    }
    let mut text = String::from("/");
    text.push_str(&names.join("/"));
    // `/tmp/x/` stays a directory; the root is written `/` either way.
    if ends_with_slash && !names.is_empty() {
        text.push('/');
    }
    text
}

/// `text` with its ASCII letters in the case `upper` picks, one by one.
fn recase(text: &str, upper: &[bool]) -> String {
    text.chars()
        .zip(upper.iter().copied().chain(std::iter::repeat(false)))
        .map(|(c, up)| {
            if up {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

proptest! {
    // No regressions file: what a property found is kept as a named unit
    // test in `normal.rs`.
    #![proptest_config(ProptestConfig {
        cases: 2048,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Normalizing twice is normalizing once. If not, an operator who
    /// writes the glob the gateway suggests (`write "…"`) is told again
    /// that it is not in normal form, and a value normalized by an
    /// upstream first is matched differently from the same value as typed.
    #[test]
    fn normalizing_a_path_twice_is_normalizing_it_once(
        absolute in any::<bool>(),
        (segments, trailing) in segments(),
    ) {
        let text = join(if absolute { "/" } else { "" }, &segments, trailing);
        let once = normal(&text).into_owned();
        prop_assert_eq!(normal(&once), once.as_str(), "{:?}", text);
        prop_assert_eq!(problem(&once), None);
    }

    /// Normalizing twice is normalizing once, for URLs: otherwise the glob
    /// the gateway suggests for a URL rule is refused in turn.
    #[test]
    fn normalizing_a_url_twice_is_normalizing_it_once(
        (scheme, host, path, query) in url_parts(),
        port in prop::sample::select(vec!["", ":443", ":80", ":8443"]),
        user in prop::sample::select(vec!["", "user@", "a:b@"]),
        dot in any::<bool>(),
    ) {
        let host = format!("{user}{}{}{port}", host.join("."), if dot { "." } else { "" });
        let text = write_url(&scheme, &[host], &path, &query);
        let once = normal(&text).into_owned();
        prop_assert_eq!(normal(&once), once.as_str(), "{:?}", text);
    }

    /// Normalizing twice is normalizing once, whatever the text: the
    /// inputs nobody writes on purpose (`%%32%65`, `host..`) included.
    #[test]
    fn normalizing_any_text_twice_is_normalizing_it_once(
        text in prop_oneof![tricky_text(), tricky_pieces(), tricky_url()],
    ) {
        let once = normal(&text).into_owned();
        prop_assert_eq!(normal(&once), once.as_str(), "{:?}", text);
    }

    /// A normalized absolute path has no `.`, `..` or empty segment (but a
    /// trailing `/`). If it had, `/etc/**` would not hold for
    /// `/srv/../etc/passwd`, and a destructive call on it would pass as a
    /// read.
    #[test]
    fn a_normal_absolute_path_has_no_dot_dotdot_or_empty_segment(
        (segments, trailing) in segments(),
    ) {
        let text = join("/", &segments, trailing);
        let normal = normal(&text);
        prop_assert!(normal.starts_with('/'), "{:?} -> {:?}", text, normal);
        let inner = normal.strip_prefix('/').unwrap_or(&normal);
        let inner = inner.strip_suffix('/').unwrap_or(inner);
        if !inner.is_empty() {
            for segment in inner.split('/') {
                prop_assert!(
                    !matches!(segment, "" | "." | ".."),
                    "{:?} -> {:?}", text, normal
                );
            }
        }
    }

    /// Under `/tmp/`, with `.` and `..` anywhere, the normal form is the
    /// path's lexical resolution (worked out here on its own). If not, a
    /// rule on `/etc/**` is dodged by `/tmp/../etc/x`, or a rule on
    /// `/tmp/**` catches a path that left it.
    #[test]
    fn a_path_under_tmp_normalizes_to_its_lexical_resolution(
        (segments, trailing) in segments(),
    ) {
        let text = join("/tmp/", &segments, trailing);
        prop_assert_eq!(
            normal(&text),
            resolved_under_tmp(&segments, text.ends_with('/')),
            "{:?}",
            text
        );
    }

    /// `..` is never left in a normal absolute path, however many there are
    /// and wherever they climb to (`/a/../../../b`): a `..` left behind
    /// would let a path out from under a rule's directory.
    #[test]
    fn a_climb_out_of_an_absolute_path_leaves_no_dotdot(
        names in prop::collection::vec(name(), 0..4),
        climbs in 0usize..8,
        target in prop::collection::vec(name(), 1..4),
    ) {
        let up = vec!["..".to_owned(); climbs];
        let segments: Vec<String> = names.iter().chain(&up).chain(&target).cloned().collect();
        let text = join("/", &segments, false);
        let normal = normal(&text);
        prop_assert!(!normal.split('/').any(|s| s == ".."), "{:?} -> {:?}", text, normal);
        prop_assert!(normal.ends_with(&target.join("/")), "{:?} -> {:?}", text, normal);
    }

    /// Putting `/./` between two segments, or doubling a `/`, does not
    /// change a path's normal form: otherwise `/etc/./passwd` or
    /// `/etc//passwd` slips past a rule on `/etc/passwd`.
    #[test]
    fn a_dot_segment_or_a_doubled_slash_does_not_change_a_path(
        absolute in any::<bool>(),
        names in prop::collection::vec(name(), 2..6),
        at in any::<prop::sample::Index>(),
        dot in any::<bool>(),
    ) {
        let start = if absolute { "/" } else { "" };
        let plain = join(start, &names, false);
        let at = at.index(names.len() - 1);
        let (before, after) = names.split_at(at + 1);
        let extra = if dot { "/./" } else { "//" };
        let written = format!("{start}{}{extra}{}", before.join("/"), after.join("/"));
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }

    /// The case of a URL's scheme and host does not change its normal
    /// form: `HTTPS://Admin.Example.COM/users` is the same place as
    /// `https://admin.example.com/users`, and a rule on one holds for the
    /// other.
    #[test]
    fn the_case_of_a_url_scheme_and_host_does_not_change_it(
        (scheme, host, path, query) in url_parts(),
        upper in prop::collection::vec(any::<bool>(), 40),
    ) {
        let host_text = host.join(".");
        let lower = write_url(&scheme.to_ascii_lowercase(), &[host_text.to_ascii_lowercase()], &path, &query);
        let written = write_url(&recase(&scheme, &upper), &[recase(&host_text, &upper[8..])], &path, &query);
        prop_assert_eq!(normal(&written), normal(&lower), "{:?}", written);
    }

    /// Who signs in (`user@`, `user:password@`), the scheme's default port
    /// and a trailing dot on the host do not change where a URL goes, so
    /// they do not change its normal form: otherwise
    /// `https://x@admin.example.com:443./users` dodges a rule on
    /// `https://admin.example.com/**`.
    #[test]
    fn userinfo_a_default_port_and_a_trailing_dot_do_not_change_a_url(
        (_, host, path, query) in url_parts(),
        scheme in prop::sample::select(vec![("https", ":443"), ("http", ":80"), ("wss", ":443"), ("ws", ":80")]),
        user in prop::sample::select(vec!["", "user@", "a:b@", "@"]),
        port in any::<bool>(),
        dot in any::<bool>(),
    ) {
        let (scheme, default_port) = scheme;
        let plain = write_url(scheme, &[host.join(".")], &path, &query);
        let host = format!(
            "{user}{}{}{}",
            host.join("."),
            if dot { "." } else { "" },
            if port { default_port } else { "" },
        );
        let written = write_url(scheme, &[host], &path, &query);
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }

    /// Writing an unreserved character of a URL's host or path as a
    /// percent-escape (`%2e`, `%2E`, `%61`) does not change its normal
    /// form: a server reads `/a/%2e%2e/admin` as `/admin`, and so must a
    /// rule.
    #[test]
    fn a_percent_escaped_unreserved_character_does_not_change_a_url(
        (scheme, host, path, query) in url_parts(),
        escape in prop::collection::vec(any::<bool>(), 64),
        upper_hex in any::<bool>(),
    ) {
        let plain = write_url(&scheme, &host, &path, &query);
        let mut flags = escape.iter().copied().cycle();
        let encode = |text: &str, flags: &mut dyn Iterator<Item = bool>| -> String {
            text.chars()
                .map(|c| {
                    let unreserved = c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
                    match (unreserved, flags.next()) {
                        (true, Some(true)) if upper_hex => format!("%{:02X}", u32::from(c)),
                        (true, Some(true)) => format!("%{:02x}", u32::from(c)),
                        _ => c.to_string(),
                    }
                })
                .collect()
        };
        let host: Vec<String> = host.iter().map(|label| encode(label, &mut flags)).collect();
        let path: Vec<String> = path.iter().map(|segment| encode(segment, &mut flags)).collect();
        let written = write_url(&scheme, &host, &path, &query);
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }

    /// Backslashes for the slashes of a URL (`https:\\host\a\b`, or one of
    /// each) and tabs or line breaks anywhere in it (`ht\ttps://host`) do
    /// not change its normal form: browsers and HTTP libraries read them
    /// away, so a rule that did not would be dodged by them.
    #[test]
    fn backslashes_tabs_and_line_breaks_do_not_change_a_url(
        (scheme, host, path, query) in url_parts(),
        slashes in prop::collection::vec(any::<bool>(), 16),
        breaks in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec!['\t', '\n', '\r'])), 0..3),
    ) {
        let plain = write_url(&scheme, &host, &path, &query);
        let mut flags = slashes.iter().copied().cycle();
        let (head, tail) = plain.split_at(plain.find(['?', '#']).unwrap_or(plain.len()));
        let mut written: String = head
            .chars()
            .map(|c| if c == '/' && flags.next() == Some(true) { '\\' } else { c })
            .chain(tail.chars())
            .collect();
        for (at, c) in breaks {
            // Anywhere, in the scheme (`ht\ttps://`) and its `://` too:
            // WHATWG parsers read them away before they read the scheme.
            let boundaries: Vec<usize> = (0..=written.len()).filter(|i| written.is_char_boundary(*i)).collect();
            if let Some(&at) = boundaries.get(at.index(boundaries.len())) {
                written.insert(at, c);
            }
        }
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }

    /// The case of a percent-escape's hex digits does not change a URL's
    /// normal form (RFC 3986 section 6.2.2.1): otherwise a rule on
    /// `https://h/a%2Fb/**` is dodged by `https://h/a%2fb/x`.
    #[test]
    fn the_case_of_a_percent_escape_does_not_change_a_url(
        (scheme, host, path, query) in url_parts(),
        byte in prop::sample::select(vec![b'/', b'?', b'#', b'%', b' ', b':', b'@', 0xc3, 0xa9]),
        upper in any::<bool>(),
    ) {
        let mut path = path;
        let lower = format!("%{byte:02x}");
        path.push(if upper { lower.to_ascii_uppercase() } else { lower.clone() });
        let written = write_url(&scheme, &host, &path, &query);
        *path.last_mut().expect("pushed") = lower.to_ascii_uppercase();
        let canonical = write_url(&scheme, &host, &path, &query);
        prop_assert_eq!(normal(&written), normal(&canonical), "{:?}", written);
    }

    /// Extra slashes between an `http`, `https`, `ws`, `wss` or `ftp`
    /// scheme and its host (`https:///host`) do not change the URL's normal
    /// form: WHATWG parsers (browsers, Node's `fetch`, Rust's `url`) skip
    /// them, so a rule that did not would be dodged by them.
    #[test]
    fn extra_slashes_before_the_host_do_not_change_a_url(
        (_, host, path, query) in url_parts(),
        scheme in prop::sample::select(vec!["https", "http", "ws", "wss", "ftp"]),
        extra in 1usize..4,
    ) {
        let plain = write_url(scheme, &host, &path, &query);
        let written = plain.replacen("://", &format!("://{}", "/".repeat(extra)), 1);
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }

    /// Leaving out the `//` of an `http`, `https`, `ws`, `wss` or `ftp`
    /// URL, or writing one `/` or `\` of it (`https:host/x`,
    /// `https:/host/x`), does not change its normal form: WHATWG parsers
    /// read them all as `https://host/x`, so a rule on
    /// `https://host/**` that did not would be dodged by them.
    #[test]
    fn leaving_out_the_slashes_of_a_special_url_does_not_change_it(
        (_, host, path, query) in url_parts(),
        scheme in prop::sample::select(vec!["https", "HTTP", "ws", "wss", "ftp"]),
        slashes in prop::sample::select(vec!["", "/", "\\"]),
    ) {
        let plain = write_url(scheme, &host, &path, &query);
        let written = plain.replacen("://", &format!(":{slashes}"), 1);
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }

    /// A `file:` URL without its `//` (`file:etc/x`, `file:/etc/x`) is
    /// the path from the root, as WHATWG parsers read it: otherwise a rule
    /// on `file:///etc/**` is dodged by `file:etc/passwd`.
    #[test]
    fn a_file_url_without_its_slashes_is_the_path_from_the_root(
        first in name(),
        (segments, trailing) in segments(),
        slash in prop::sample::select(vec!["", "/", "\\"]),
    ) {
        let path = join(&format!("{first}/"), &segments, trailing);
        let plain = format!("file:///{path}");
        let written = format!("file:{slash}{path}");
        prop_assert_eq!(normal(&written), normal(&plain), "{:?}", written);
    }
}

//! The normal form of an argument value, which the rules' value globs
//! match.
//!
//! A rule on a path must hold for every way of writing that path, or a
//! model dodges it: `/tmp/../etc/passwd` is under `/etc/**`, and so are
//! `/etc//passwd` and `/etc/./passwd`. So before a glob is tried, a value
//! is put in its normal form, lexically (nothing is looked up on a disk,
//! since the files are the upstream's, not the gateway's):
//!
//! - **A URL**, read as a WHATWG URL parser (browsers, `fetch`) reads it:
//!   `scheme://…` after surrounding blanks and control characters, with
//!   tabs and line breaks anywhere dropped (`ht\ttps://host` is
//!   `https://host`) and `\` read as `/` (`https:\\host` and
//!   `https:/\host` are `https://host`); a special scheme's URL may leave
//!   out its `//` (`https:host/x` and `https:/host/x` are
//!   `https://host/x`, `file:etc/x` is `file:///etc/x`) when its host (or
//!   first segment) is there and has no blank, so `HTTP: Error 404` stays
//!   a sentence. It is written `scheme://…`, with the scheme and the host
//!   lowercased, the user part (`user@`) dropped, the host's trailing dots dropped, the port written
//!   as a number (`:0443` is `:443`) and dropped when it is empty or the
//!   scheme's default (`:443`, `:80`, `:21`), extra slashes before the
//!   host of an `http`, `https`, `ws`, `wss` or `ftp` URL dropped
//!   (`https:///host`, as WHATWG parsers read it), every percent-encoded
//!   unreserved character decoded until none is left (`%2e` is `.`, as RFC
//!   3986 section 6.2.2.2 has it) and every other escape written in upper
//!   case (`%2f` is `%2F`, section 6.2.2.1), and its path normalized as
//!   below (an empty one is `/`); the query and the fragment are kept as
//!   they are, but for that decoding. A scheme may hold glob characters
//!   (`http{,s}://…`), so a glob is normalized as the URLs it matches are.
//! - **A path** (any other text with a `/` and no whitespace): `.` segments and empty ones
//!   (`//`) taken out, each `..` taken out with the segment before it; a
//!   `..` above the root of an absolute path is the root (as the kernel
//!   has it), and above the start of a relative one it stays. A trailing
//!   `/` stays.
//! - Other text as it is.
//!
//! A value glob must itself be in normal form (see [`problem`]): one that
//! is not could never match, and the operator is told how to write it.

use std::borrow::Cow;

/// `text` in its normal form (see the module's docs).
pub(crate) fn normal(text: &str) -> Cow<'_, str> {
    let normal = match url_parts(&as_url(text)) {
        Some(parts) => url(&parts),
        // Text with spaces is a sentence or a command line, not a path.
        None if text.contains('/') && !text.contains(char::is_whitespace) => path(text),
        None => return Cow::Borrowed(text),
    };
    if normal == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(normal)
    }
}

/// Why a value glob can never match a value in normal form, if it cannot:
/// it is not in normal form itself.
pub(crate) fn problem(glob: &str) -> Option<String> {
    let normal = normal(glob);
    (normal != glob).then(|| {
        format!(
            "the glob {glob:?} is not in normal form, so it can never match: argument values \
             are matched with no \".\", \"..\" or empty path segments, and URLs with their \
             scheme and host lowercased; write {normal:?}"
        )
    })
}

/// `text` as a URL parser reads it (WHATWG's URL standard, which browsers
/// and `fetch` follow): without the blanks and control characters around
/// it, and without a tab or line break anywhere, so `ht\ttps://host` is
/// `https://host`.
fn as_url(text: &str) -> Cow<'_, str> {
    let text = text.trim_matches(|c: char| matches!(c, '\0'..=' ') || c.is_whitespace());
    if text.contains(['\t', '\n', '\r']) {
        Cow::Owned(
            text.chars()
                .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// The schemes WHATWG's URL standard calls special: their URLs have a
/// host, and their `//` may be left out.
const SPECIAL: [&str; 6] = ["http", "https", "ws", "wss", "ftp", "file"];

/// A URL, as [`url_parts`] splits it.
struct Parts<'a> {
    /// Its scheme, as written.
    scheme: &'a str,
    /// What follows the scheme's `:` and its slashes.
    rest: &'a str,
    /// Whether `rest` starts with a host (else it is a `file:` URL's
    /// path, and its host is empty).
    host: bool,
}

/// A URL's parts, when `text` is one: `scheme://…`, or a special
/// scheme's URL without its `//`.
fn url_parts(text: &str) -> Option<Parts<'_>> {
    // A scheme ends at the first `:`.
    let at = text.find(':')?;
    let (scheme, after) = (&text[..at], &text[at + 1..]);
    let mut chars = scheme.chars();
    let glob = |c: char| matches!(c, '*' | '?' | '{' | '}' | ',' | '[' | ']' | '!');
    let starts = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || glob(c));
    let scheme_chars =
        chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.') || glob(c));
    if !(starts && scheme_chars) {
        return None;
    }
    // `https:\\host` and `https:/\host` are `https://host` to the
    // libraries that fetch it.
    let slash = |b: &u8| matches!(b, b'/' | b'\\');
    if after
        .as_bytes()
        .get(..2)
        .is_some_and(|two| two.iter().all(slash))
    {
        return Some(Parts {
            scheme,
            rest: &after[2..],
            host: true,
        });
    }
    // A WHATWG parser reads `https:host/x` and `https:/host/x` as
    // `https://host/x`, and `file:etc/x` and `file:/etc/x` as
    // `file:///etc/x`. Only when what follows reads as a host (or a first
    // segment): `HTTP: Error 404` is a sentence.
    let lower = scheme.to_ascii_lowercase();
    if !SPECIAL.contains(&lower.as_str()) {
        return None;
    }
    let rest = after.strip_prefix(['/', '\\']).unwrap_or(after);
    let first = &rest[..rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len())];
    if first.is_empty() || first.contains(char::is_whitespace) {
        return None;
    }
    Some(Parts {
        scheme,
        rest,
        host: lower != "file",
    })
}

/// The normal form of the URL of `parts` (its tabs and line breaks
/// already gone: see [`as_url`]).
fn url(parts: &Parts<'_>) -> String {
    let scheme = parts.scheme.to_ascii_lowercase();
    let rest: String = parts
        .rest
        .chars()
        .map(|c| if c == '\\' { '/' } else { c })
        .collect();
    let rest = decode_unreserved(&rest);
    // `file:etc/x`: no host, and the path from the root.
    if !parts.host {
        let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
        let (url_path, tail) = rest.split_at(path_end);
        return format!("{scheme}://{}{tail}", path(&format!("/{url_path}")));
    }
    let mut rest: &str = &rest;
    let (default_port, special) = match scheme.as_str() {
        "https" | "wss" => (Some("443"), true),
        "http" | "ws" => (Some("80"), true),
        "ftp" => (Some("21"), true),
        _ => (None, false),
    };
    let (host, after) = loop {
        // `https:///host` is `https://host` to the libraries that fetch
        // it (not so `file:///etc`, whose host is empty).
        if special {
            rest = rest.trim_start_matches('/');
        }
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, after) = rest.split_at(authority_end);
        // Who signs in is not where the request goes.
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let host = host_and_port(&host.to_ascii_lowercase(), default_port);
        // No host (`https://@/x`): what follows is read as one.
        if special && host.is_empty() && after.starts_with('/') {
            rest = after;
            continue;
        }
        break (host, after);
    };
    let path_end = after.find(['?', '#']).unwrap_or(after.len());
    let (url_path, tail) = after.split_at(path_end);
    let url_path = if url_path.is_empty() {
        "/".to_owned()
    } else {
        path(url_path)
    };
    format!("{scheme}://{host}{url_path}{tail}")
}

/// A URL's host and port (lowercased) without the host's trailing dots,
/// with the port as a number (`:0443` is `:443`), and without it when it
/// is empty (`host:`) or the scheme's `default`.
fn host_and_port(authority: &str, default: Option<&str>) -> String {
    let mut host = authority.to_owned();
    loop {
        let before = host.len();
        while host.len() > 1 && host.ends_with('.') {
            host.pop();
        }
        // A port follows the last `:`, unless that is inside an IPv6
        // address (`[::1]`).
        if let Some((name, port)) = host.rsplit_once(':')
            && port.bytes().all(|b| b.is_ascii_digit())
            && (!name.contains(':') || name.ends_with(']'))
        {
            let number = match port.trim_start_matches('0') {
                "" if port.is_empty() => None,
                "" => Some("0"),
                number => Some(number),
            };
            host = match number {
                Some(number) if Some(number) != default => format!("{name}:{number}"),
                _ => name.to_owned(),
            };
        }
        if host.len() == before {
            return host;
        }
    }
}

/// Percent-encoded unreserved characters (`A-Z a-z 0-9 - . _ ~`) decoded
/// until none is left (`%%32%65` is `%2e`, which is `.`); every other
/// escape kept, its hex digits in upper case (`%2f` is `%2F`).
fn decode_unreserved(text: &str) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let mut text = text.to_owned();
    loop {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        while at < bytes.len() {
            let escape = bytes
                .get(at + 1..at + 3)
                .filter(|hex| bytes[at] == b'%' && hex.iter().all(u8::is_ascii_hexdigit))
                .and_then(|hex| {
                    let byte = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                    Some((hex, byte))
                });
            match escape {
                Some((hex, byte)) => {
                    if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                        out.push(char::from(byte));
                    } else {
                        out.push('%');
                        out.extend(
                            hex.iter()
                                .map(|digit| char::from(digit.to_ascii_uppercase())),
                        );
                    }
                    at += 3;
                }
                None => {
                    let c = text[at..].chars().next().unwrap_or('%');
                    out.push(c);
                    at += c.len_utf8();
                }
            }
        }
        if out == text {
            return Cow::Owned(out);
        }
        text = out;
    }
}

fn path(text: &str) -> String {
    let absolute = text.starts_with('/');
    let mut kept: Vec<&str> = Vec::new();
    for segment in text.split('/') {
        match segment {
            "" | "." => {}
            ".." => match kept.last() {
                Some(&last) if last != ".." => {
                    kept.pop();
                }
                // The root's parent is the root.
                _ if absolute => {}
                _ => kept.push(".."),
            },
            _ => kept.push(segment),
        }
    }
    let mut out = String::with_capacity(text.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&kept.join("/"));
    if text.ends_with('/') && !kept.is_empty() {
        out.push('/');
    }
    if out.is_empty() {
        out.push('.');
    }
    // `./https:\\host` is a file, and stays one: without its `./` it
    // would read as a URL.
    if !absolute && url_parts(&out).is_some() {
        out.insert_str(0, "./");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_of_writing_a_path_has_one_normal_form() {
        for (written, normal_form) in [
            ("/tmp/../etc/passwd", "/etc/passwd"),
            ("/etc//passwd", "/etc/passwd"),
            ("/etc/./passwd", "/etc/passwd"),
            ("//etc/passwd", "/etc/passwd"),
            ("/../../etc/passwd", "/etc/passwd"),
            ("/srv/a/b/../../c/", "/srv/c/"),
            ("a/../../b", "../b"),
            ("./notes/x.md", "notes/x.md"),
            ("/", "/"),
            ("./", "."),
            ("owner/repo", "owner/repo"),
            ("no slash at all", "no slash at all"),
            ("echo a//b ../c", "echo a//b ../c"),
            // Found by the properties in `props.rs`.
            ("./a:\\\\", "./a:\\\\"),
            (".//a:/\\b", "./a:/\\b"),
        ] {
            assert_eq!(normal(written), normal_form, "{written:?}");
        }
    }

    #[test]
    fn a_url_has_its_scheme_host_and_path_normalized_and_its_query_kept() {
        for (written, normal_form) in [
            (
                "HTTPS://Example.COM/a/%2e%2e/admin?x=/../y#f",
                "https://example.com/admin?x=/../y#f",
            ),
            ("https://example.com", "https://example.com/"),
            ("http://User@Host.example//a", "http://host.example/a"),
            (
                "https://x@admin.example.com/users",
                "https://admin.example.com/users",
            ),
            (
                "https://admin.example.com:443/users",
                "https://admin.example.com/users",
            ),
            (
                "https://admin.example.com./users",
                "https://admin.example.com/users",
            ),
            (
                "https://admin.example.com?op=delete",
                "https://admin.example.com/?op=delete",
            ),
            (
                " https://admin.example.com/users ",
                "https://admin.example.com/users",
            ),
            (
                "https://admin.exa\tmple.com/us\ners",
                "https://admin.example.com/users",
            ),
            (
                "https:\\\\admin.example.com\\users",
                "https://admin.example.com/users",
            ),
            (
                "https://admin.example.com:8443/x",
                "https://admin.example.com:8443/x",
            ),
            ("https://h/a%2Fb", "https://h/a%2Fb"),
            ("s3://bucket/x/./y", "s3://bucket/x/y"),
            // Found by the properties in `props.rs`.
            (
                "https:/\\admin.example.com/x",
                "https://admin.example.com/x",
            ),
            (
                "https:\\\\admin.example.com/x?next=http://a",
                "https://admin.example.com/x?next=http://a",
            ),
            (
                "https://admin.example.com../x",
                "https://admin.example.com/x",
            ),
            (
                "https://admin.example.com:443./x",
                "https://admin.example.com/x",
            ),
            (
                "https://admin.example.com:0443/x",
                "https://admin.example.com/x",
            ),
            (
                "https://admin.example.com:/x",
                "https://admin.example.com/x",
            ),
            ("https://h:08443/x", "https://h:8443/x"),
            (
                "https:///admin.example.com/x",
                "https://admin.example.com/x",
            ),
            ("file:///etc/../passwd", "file:///passwd"),
            ("https://h/%%32%65%%32%65/x", "https://h/x"),
            ("https://h/a%2fb", "https://h/a%2Fb"),
            ("https://[::1]:443/x", "https://[::1]/x"),
        ] {
            assert_eq!(normal(written), normal_form, "{written:?}");
        }
    }

    #[test]
    fn a_special_scheme_without_its_slashes_is_the_same_url() {
        for (written, normal_form) in [
            ("https:admin.example.com/x", "https://admin.example.com/x"),
            ("https:/admin.example.com/x", "https://admin.example.com/x"),
            ("https:\\admin.example.com/x", "https://admin.example.com/x"),
            (
                "HTTPS:Admin.Example.com:443/a/../x?q=1",
                "https://admin.example.com/x?q=1",
            ),
            ("http:host", "http://host/"),
            ("wss:host/socket", "wss://host/socket"),
            ("ws:host:80/socket", "ws://host/socket"),
            ("ftp:host/pub", "ftp://host/pub"),
            ("file:etc/../passwd", "file:///passwd"),
            ("file:/etc/passwd", "file:///etc/passwd"),
        ] {
            assert_eq!(normal(written), normal_form, "{written:?}");
        }
    }

    #[test]
    fn a_colon_without_slashes_is_not_a_url_unless_a_host_follows_a_special_scheme() {
        for text in [
            "HTTP: Error 404",
            "https: see the docs",
            "https:",
            "https:/",
            "https:?x",
            "mailto:someone@example.com",
            "s3:bucket/x",
            "note:a/../b",
        ] {
            let normal = normal(text);
            assert!(!normal.contains("://"), "{text:?} -> {normal:?}");
        }
        // A path that resolves to one such text stays a path.
        assert_eq!(normal("x/../https:host"), "./https:host");
    }

    #[test]
    fn a_tab_or_line_break_in_the_scheme_is_read_away() {
        for written in [
            "ht\ttps://admin.example.com/x",
            "h\nt\rtps://admin.example.com/x",
            "https\t://admin.example.com/x",
            "https:\t//admin.example.com/x",
            "https:/\n/admin.example.com/x",
            "\thttps://admin.example.com/x",
            "\u{1}https://admin.example.com/x\u{0}",
            "ht\ttps:admin.example.com/x",
        ] {
            assert_eq!(
                normal(written),
                "https://admin.example.com/x",
                "{written:?}"
            );
        }
        // Not a URL once they are gone: the text as it is.
        assert_eq!(normal("a\tb/c"), "a\tb/c");
    }

    #[test]
    fn a_glob_not_in_normal_form_is_told_how_to_write_it() {
        assert_eq!(problem("/etc/**"), None);
        assert_eq!(problem("https://example.com/**"), None);
        // Glob characters in the scheme: a URL glob all the same.
        assert_eq!(problem("http{,s}://admin.example.com/**"), None);
        assert_eq!(problem("*://internal/**"), None);
        assert_eq!(problem("*curl https://*"), None);
        let told = problem("./notes/*").expect("refused");
        assert!(told.contains(r#"write "notes/*""#), "{told}");
        assert!(problem("https://Example.com/*").is_some());
    }
}

#[cfg(test)]
mod props;

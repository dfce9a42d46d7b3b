//! The normal form of an argument value, which the rules' value globs
//! match.
//!
//! A rule on a path must hold for every way of writing that path, or a
//! model dodges it: `/tmp/../etc/passwd` is under `/etc/**`, and so are
//! `/etc//passwd` and `/etc/./passwd`. So before a glob is tried, a value
//! is put in its normal form, lexically (nothing is looked up on a disk,
//! since the files are the upstream's, not the gateway's):
//!
//! - **A URL** (`scheme://…`): the scheme and the host lowercased, every
//!   percent-encoded unreserved character decoded (`%2e` is `.`, as RFC
//!   3986 section 6.2.2.2 has it), and its path normalized as below; the
//!   query and the fragment are kept as they are, but for that decoding.
//! - **A path** (any other text with a `/`): `.` segments and empty ones
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
    let normal = match url_parts(text) {
        Some((scheme, rest)) => url(scheme, rest),
        None if text.contains('/') => path(text),
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

/// A URL's scheme and what follows its `://`, when `text` is one.
fn url_parts(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let scheme_chars = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (starts && scheme_chars).then_some((scheme, rest))
}

fn url(scheme: &str, rest: &str) -> String {
    let rest = decode_unreserved(rest);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    // The user part before `@` is case-sensitive; the host is not.
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => format!("{user}@{}", host.to_ascii_lowercase()),
        None => authority.to_ascii_lowercase(),
    };
    let path_end = after.find(['?', '#']).unwrap_or(after.len());
    let (url_path, tail) = after.split_at(path_end);
    let url_path = if url_path.is_empty() {
        String::new()
    } else {
        path(url_path)
    };
    format!(
        "{}://{authority}{url_path}{tail}",
        scheme.to_ascii_lowercase()
    )
}

/// Percent-encoded unreserved characters (`A-Z a-z 0-9 - . _ ~`) decoded;
/// every other escape kept as written.
fn decode_unreserved(text: &str) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        let decoded = (bytes[at] == b'%')
            .then(|| text.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        match decoded {
            Some(byte) => {
                out.push(char::from(byte));
                at += 3;
            }
            None => {
                let c = text[at..].chars().next().unwrap_or('%');
                out.push(c);
                at += c.len_utf8();
            }
        }
    }
    Cow::Owned(out)
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
            ("https://example.com", "https://example.com"),
            ("http://User@Host.example//a", "http://User@host.example/a"),
            ("https://h/a%2Fb", "https://h/a%2Fb"),
            ("s3://bucket/x/./y", "s3://bucket/x/y"),
        ] {
            assert_eq!(normal(written), normal_form, "{written:?}");
        }
    }

    #[test]
    fn a_glob_not_in_normal_form_is_told_how_to_write_it() {
        assert_eq!(problem("/etc/**"), None);
        assert_eq!(problem("https://example.com/**"), None);
        let told = problem("./notes/*").expect("refused");
        assert!(told.contains(r#"write "notes/*""#), "{told}");
        assert!(problem("https://Example.com/*").is_some());
    }
}

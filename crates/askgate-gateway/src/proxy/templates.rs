//! Which resource template a URI was expanded from (RFC 6570, as far as a
//! router needs): literal text must match exactly; each `{...}` expression
//! stands for any text — none for a `{?query}` or `{&more}` form left out,
//! no `/` for a simple `{var}` (level 1), anything for `{+var}`, `{#var}`,
//! `{/var}` and the other operators.

/// Whether `uri` may be an expansion of `template`.
pub(crate) fn matches(template: &str, uri: &str) -> bool {
    let parts = parse(template);
    fits(&parts, uri)
}

/// A template's pieces.
#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    /// Text as written.
    Literal(&'a str),
    /// An expression, by its operator (`None`: a simple `{var}`).
    Expression(Option<char>),
}

fn parse(template: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let Some(close) = rest[open..].find('}') else {
            // No closing brace: the rest is text.
            parts.push(Part::Literal(&rest[open..]));
            return parts;
        };
        let body = &rest[open + 1..open + close];
        let operator = body
            .chars()
            .next()
            .filter(|c| matches!(c, '+' | '#' | '.' | '/' | ';' | '?' | '&'));
        parts.push(Part::Expression(operator));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// Whether `uri` is what `parts` expand to, trying every split (templates
/// are short; so is the search).
fn fits(parts: &[Part<'_>], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(text), rest)) => uri
            .strip_prefix(text)
            .is_some_and(|after| fits(rest, after)),
        Some((Part::Expression(operator), rest)) => {
            let optional = matches!(operator, Some('?' | '&' | ';' | '#' | '.' | '/'));
            let end = match operator {
                // A simple expansion percent-encodes '/', so it holds none.
                None => uri.find('/').unwrap_or(uri.len()),
                Some(_) => uri.len(),
            };
            let shortest = usize::from(!optional);
            (shortest..=end)
                .filter(|&at| uri.is_char_boundary(at))
                .any(|at| fits(rest, &uri[at..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_uri_matches_the_template_it_was_expanded_from() {
        assert!(matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(matches("demo://resource/{id}", "demo://resource/7"));
        assert!(matches("search://{?q,lang}", "search://?q=x&lang=en"));
        assert!(matches("search://items{?q}", "search://items"));
    }

    #[test]
    fn other_text_or_a_missing_part_does_not() {
        assert!(!matches(
            "test://template/{id}/data",
            "test://template/123/info"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template//data"
        ));
        assert!(!matches("test://template/{id}", "test://template/1/2"));
        assert!(!matches("demo://resource/{id}", "other://resource/7"));
        assert!(!matches("unclosed/{id", "unclosed/7"));
        assert!(matches("unclosed/{id", "unclosed/{id"));
    }
}

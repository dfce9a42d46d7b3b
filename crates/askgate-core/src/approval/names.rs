//! The names of people and groups, as answers and logs record them.

/// What is wrong with `name` as a person's or a group's name, if
/// anything: it is recorded on answers, listed with others
/// (`answered_by = "ana, bo"`) and logged, so it may not be empty, start or
/// end with a space, or hold a comma, a control character, a line or
/// paragraph separator, or a formatting character (a line break, U+2028 or
/// U+2029 would forge a log line; a bidirectional control reorder what is
/// shown around it; a zero-width space or joiner make one name look like
/// another; a comma, a second approver).
///
/// # Example
/// ```
/// use askgate_core::approval::name_problem;
/// assert_eq!(name_problem("ana"), None);
/// assert!(name_problem("ana, bo").is_some());
/// assert!(name_problem("ana\nINFO approved").is_some());
/// assert!(name_problem("ana\u{202E}ob").is_some());
/// ```
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        Some("it holds a control character (a line break, a tab)")
    } else if name.chars().any(unseen) {
        Some(
            "it holds a line or paragraph separator (U+2028, U+2029) or an invisible formatting \
             character (a bidirectional control such as U+202E, a zero-width space or joiner, \
             U+FEFF), which changes how the name or the text around it is shown",
        )
    } else if name.trim().is_empty() {
        Some("it is empty")
    } else if name.trim() != name {
        Some("it starts or ends with a space")
    } else if name.contains(',') {
        Some("it holds a comma, which separates the names of several approvers")
    } else {
        None
    }
}

/// Whether `c` breaks a line or is not shown as itself: Unicode's line
/// and paragraph separators (`Zl`, `Zp`) and format characters (`Cf`:
/// bidirectional controls, zero-width spaces and joiners, the byte order
/// mark, tags).
fn unseen(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    matches!(
        c.general_category(),
        GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::Format
    )
}

#[cfg(test)]
mod tests {
    use super::name_problem;

    #[test]
    fn a_name_that_breaks_a_line_or_reorders_text_is_refused() {
        for name in [
            "ana\u{2028}bo",
            "ana\u{2029}",
            "\u{202E}ana",
            "ana\u{2066}x\u{2069}",
            "a\u{200F}b",
        ] {
            let why = name_problem(name).unwrap_or_else(|| panic!("{name:?} was taken"));
            assert!(why.contains("bidirectional"), "{why}");
        }
        for name in ["ana", "José María", "李雷", "o'brien"] {
            assert_eq!(name_problem(name), None, "{name:?}");
        }
    }
}

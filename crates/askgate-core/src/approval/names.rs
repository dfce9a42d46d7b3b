//! The names of people and groups, as answers and logs record them.

/// What is wrong with `name` as a person's or a group's name, if
/// anything: it is recorded on answers, listed with others
/// (`answered_by = "ana, bo"`) and logged, so it may not be empty, start or
/// end with a space, or hold a comma or a control character (a line break
/// would forge a log line; a comma, a second approver).
///
/// # Example
/// ```
/// use askgate_core::approval::name_problem;
/// assert_eq!(name_problem("ana"), None);
/// assert!(name_problem("ana, bo").is_some());
/// assert!(name_problem("ana\nINFO approved").is_some());
/// ```
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        Some("it holds a control character (a line break, a tab)")
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

//! The example upstream's own checks: its tools, their risks, its note
//! names and its directory.

use super::catalogue::tools;
use super::*;

#[test]
fn every_tool_is_listed_with_its_intended_risk() {
    let listed: Vec<String> = tools().iter().map(|t| t.name.to_string()).collect();
    let intended: Vec<&str> = TOOLS.iter().map(|(name, _)| *name).collect();
    assert_eq!(listed, intended);
}

#[test]
fn only_reads_say_they_are_read_only() {
    for tool in tools() {
        let risk = TOOLS
            .iter()
            .find(|(name, _)| *name == tool.name)
            .map(|(_, risk)| *risk);
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(
            read_only == Some(true),
            risk == Some(Risk::Read),
            "{}",
            tool.name
        );
    }
}

#[test]
fn a_note_name_cannot_leave_the_directory() {
    assert!(valid_name("groceries_2"));
    for bad in ["", "../etc/passwd", "a/b", "a.txt", &"x".repeat(65)] {
        assert!(!valid_name(bad), "{bad}");
    }
}

#[test]
fn notes_in_a_directory_survive_a_new_handler() -> Result<(), ErrorData> {
    let dir = std::env::temp_dir().join(format!("askgate-notes-{}", std::process::id()));
    let notes = Notes::in_dir(dir.clone()).map_err(|e| io_error(&e))?;
    notes.write("a", "one", false)?;
    notes.write("a", " two", true)?;
    let again = Notes::in_dir(dir.clone()).map_err(|e| io_error(&e))?;
    assert_eq!(again.read("a")?.as_deref(), Some("one two"));
    assert_eq!(again.delete_all()?, 1);
    assert_eq!(again.names()?, Vec::<String>::new());
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

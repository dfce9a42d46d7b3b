//! What the model reads: a settled question set as text it can act on.
//!
//! The format is stable (snapshot-tested): one line per question, the
//! prompt against the chosen option labels, marked when defaulted or
//! skipped, typed answers quoted.

use std::fmt::Write;

use crate::reply::QuestionOutcome;

impl QuestionOutcome {
    /// Render the outcome for the model.
    ///
    /// # Example
    /// ```
    /// use askgate_core::{QuestionSet, Reply, Surface};
    /// let set: QuestionSet = serde_json::from_str(r#"{"source": "ask", "questions": [
    ///   {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
    ///    "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}]}"#)?;
    /// let mut reply = Reply::new(Surface::Web);
    /// reply.answers.insert("env".into(), vec!["prod".into()]);
    /// let text = set.settle(&reply)?.render();
    /// assert!(text.contains("Which environment? → Production"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn render(&self) -> String {
        let mut text = String::new();
        let who = match &self.answered_by {
            Some(person) => format!("{person} (via {})", self.answered_via),
            None => format!("The person (via {})", self.answered_via),
        };
        // Writing to a String cannot fail.
        let _ = if self.skipped {
            writeln!(
                text,
                "{who} skipped these questions: proceed on your own assumptions, shown below as your pre-picked answers."
            )
        } else {
            writeln!(text, "{who} answered:")
        };
        for (number, answer) in self.answers.iter().enumerate() {
            let chosen = if answer.chosen.is_empty() {
                "(none)".to_owned()
            } else {
                answer
                    .chosen
                    .iter()
                    .map(|c| {
                        if c.free {
                            format!("{:?} (typed)", c.label)
                        } else {
                            c.label.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mark = match (self.skipped, answer.defaulted) {
                (true, _) => " [skipped: your default]",
                (false, true) => " [your default, kept]",
                (false, false) => "",
            };
            let _ = writeln!(text, "{}. {} → {chosen}{mark}", number + 1, answer.prompt);
        }
        text
    }
}

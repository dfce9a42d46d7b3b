//! Answering in a terminal: each property prompted by its type, checked as
//! typed, asked again with the reason when it does not fit.
//!
//! The prompts go to stderr (stdout may be an MCP channel) or to an
//! injected writer; answers come from stdin or an injected reader. At any
//! prompt `!decline` says no and `!cancel` dismisses; an empty line takes
//! the default; the end of the input cancels.

use std::fmt::Write as _;
use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex};

use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{Map, Value as Json};

use super::requested::{Choice, Elicitation, Format, Kind, Property, Requested, show};

/// A person at a terminal.
///
/// Elicitations arriving together (the input requests of one multi
/// round-trip round) are asked one after the other, never interleaved.
#[derive(Clone)]
pub struct Terminal {
    console: Arc<Mutex<Console>>,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal").finish_non_exhaustive()
    }
}

impl Terminal {
    /// Prompt on stderr, read stdin.
    pub fn stdio() -> Terminal {
        Terminal::new(io::BufReader::new(io::stdin()), io::stderr())
    }

    /// Prompt on `output`, read `input` (a script, in tests).
    pub fn new(
        input: impl BufRead + Send + 'static,
        output: impl Write + Send + 'static,
    ) -> Terminal {
        Terminal {
            console: Arc::new(Mutex::new(Console {
                input: Box::new(input),
                output: Box::new(output),
            })),
        }
    }

    /// Ask the person `elicitation` from `origin` (the server's name) and
    /// return what they decided. Blocking IO runs off the async runtime.
    ///
    /// # Errors
    /// An [`io::Error`] when the terminal cannot be read or written.
    pub async fn answer(
        &self,
        elicitation: &Elicitation,
        origin: &str,
    ) -> Result<ElicitResult, io::Error> {
        let console = Arc::clone(&self.console);
        let elicitation = elicitation.clone();
        let origin = origin.to_owned();
        tokio::task::spawn_blocking(move || {
            // A panic while prompting poisons the lock; the console itself
            // is still usable.
            let mut console = console.lock().unwrap_or_else(|p| p.into_inner());
            match &elicitation {
                Elicitation::Form(form) => console.form(&origin, form),
                Elicitation::Url { message, url, .. } => console.url(&origin, message, url),
            }
        })
        .await
        .map_err(io::Error::other)?
    }
}

struct Console {
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
}

/// What the person typed at one prompt.
enum Said {
    Line(String),
    Decline,
    Cancel,
}

const DECLINE: &str = "!decline";
const CANCEL: &str = "!cancel";

impl Console {
    fn form(&mut self, origin: &str, form: &Requested) -> io::Result<ElicitResult> {
        writeln!(self.output, "\n== {origin} asks ==")?;
        writeln!(self.output, "{}", form.message)?;
        writeln!(
            self.output,
            "(Enter takes the default; {DECLINE} says no; {CANCEL} dismisses)"
        )?;
        let mut content = Map::new();
        for property in &form.properties {
            match self.property(property)? {
                Step::Value(value) => {
                    content.insert(property.name.clone(), value);
                }
                Step::Skip => {}
                Step::Decline => return Ok(ElicitResult::new(ElicitationAction::Decline)),
                Step::Cancel => return Ok(ElicitResult::new(ElicitationAction::Cancel)),
            }
        }
        self.output.flush()?;
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(Json::Object(content)))
    }

    fn url(&mut self, origin: &str, message: &str, url: &str) -> io::Result<ElicitResult> {
        writeln!(self.output, "\n== {origin} asks you to open a page ==")?;
        writeln!(self.output, "{message}")?;
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned));
        match host {
            Some(host) => writeln!(self.output, "  {url}\n  (on {host})")?,
            None => writeln!(self.output, "  {url}")?,
        }
        write!(
            self.output,
            "Press Enter once done there ({DECLINE} says no, {CANCEL} dismisses): "
        )?;
        Ok(match self.read()? {
            Said::Line(_) => ElicitResult::new(ElicitationAction::Accept),
            Said::Decline => ElicitResult::new(ElicitationAction::Decline),
            Said::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn property(&mut self, property: &Property) -> io::Result<Step> {
        let required = if property.required { " (required)" } else { "" };
        writeln!(self.output, "\n{}{required}", property.label())?;
        if let Some(description) = &property.description {
            writeln!(self.output, "  {description}")?;
        }
        if let Kind::Choice { options } | Kind::Choices { options, .. } = &property.kind {
            for (index, option) in options.iter().enumerate() {
                if option.label == option.value {
                    writeln!(self.output, "  {}) {}", index + 1, option.label)?;
                } else {
                    writeln!(
                        self.output,
                        "  {}) {} [{}]",
                        index + 1,
                        option.label,
                        option.value
                    )?;
                }
            }
        }
        let mut hint = hint(&property.kind);
        if let Some(default) = &property.default {
            let _ = write!(hint, "; default: {}", shown(&property.kind, default));
        } else if !property.required {
            hint.push_str("; Enter leaves it empty");
        }
        loop {
            write!(self.output, "  {hint}\n  > ")?;
            self.output.flush()?;
            let line = match self.read()? {
                Said::Line(line) => line,
                Said::Decline => return Ok(Step::Decline),
                Said::Cancel => return Ok(Step::Cancel),
            };
            let text = line.trim();
            if text.is_empty() {
                match &property.default {
                    Some(default) => return Ok(Step::Value(default.clone())),
                    None if !property.required => return Ok(Step::Skip),
                    None => {
                        writeln!(self.output, "  ! an answer is needed")?;
                        continue;
                    }
                }
            }
            match typed(&property.kind, text)
                .and_then(|value| property.check(&value).map_err(|why| why.to_string()))
            {
                Ok(value) => return Ok(Step::Value(value)),
                Err(reason) => writeln!(self.output, "  ! {reason}")?,
            }
        }
    }

    fn read(&mut self) -> io::Result<Said> {
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            writeln!(self.output)?;
            return Ok(Said::Cancel);
        }
        Ok(match line.trim() {
            DECLINE => Said::Decline,
            CANCEL => Said::Cancel,
            _ => Said::Line(line.trim_end_matches(['\r', '\n']).to_owned()),
        })
    }
}

/// Where one property's prompt ended.
enum Step {
    Value(Json),
    Skip,
    Decline,
    Cancel,
}

/// A range a value must be in, as a person reads it.
enum Span<T> {
    /// `min to max`.
    Between(T, T),
    /// `at least min`.
    AtLeast(T),
    /// `at most max`.
    AtMost(T),
}

impl<T: std::fmt::Display> std::fmt::Display for Span<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Span::Between(min, max) => write!(f, "{min} to {max}"),
            Span::AtLeast(min) => write!(f, "at least {min}"),
            Span::AtMost(max) => write!(f, "at most {max}"),
        }
    }
}

/// The range between bounds, if there is one.
fn span<T>(min: Option<T>, max: Option<T>) -> Option<Span<T>> {
    match (min, max) {
        (Some(min), Some(max)) => Some(Span::Between(min, max)),
        (Some(min), None) => Some(Span::AtLeast(min)),
        (None, Some(max)) => Some(Span::AtMost(max)),
        (None, None) => None,
    }
}

/// What to type, in a few words.
fn hint(kind: &Kind) -> String {
    let bounds = |minimum: Option<f64>, maximum: Option<f64>| match span(
        minimum.map(show),
        maximum.map(show),
    ) {
        Some(between @ Span::Between(..)) => format!(" from {between}"),
        Some(bound) => format!(", {bound}"),
        None => String::new(),
    };
    match kind {
        Kind::Text {
            min_length,
            max_length,
            format,
        } => {
            let mut hint = match format {
                None => "text".to_owned(),
                Some(Format::Email) => "an email address".to_owned(),
                Some(Format::Uri) => "a URI such as https://example.com/".to_owned(),
                Some(Format::Date) => "a date, YYYY-MM-DD".to_owned(),
                Some(Format::DateTime) => "a date and time such as 2026-07-01T09:30:00Z".to_owned(),
            };
            if let Some(length) = span(*min_length, *max_length) {
                let _ = write!(hint, ", {length} characters");
            }
            hint
        }
        Kind::Number { minimum, maximum } => format!("a number{}", bounds(*minimum, *maximum)),
        Kind::Integer { minimum, maximum } => {
            format!("a whole number{}", bounds(*minimum, *maximum))
        }
        Kind::Boolean => "y or n".to_owned(),
        Kind::Choice { .. } => "pick one: its number or its value".to_owned(),
        Kind::Choices {
            min_items,
            max_items,
            ..
        } => {
            let mut hint = "pick any: numbers or values, separated by commas".to_owned();
            if let Some(count) = span(*min_items, *max_items) {
                let _ = write!(hint, " ({count})");
            }
            hint
        }
    }
}

/// A default as the person reads it.
fn shown(kind: &Kind, default: &Json) -> String {
    let label = |options: &[Choice], value: &Json| {
        let value = value.as_str().unwrap_or_default();
        options
            .iter()
            .find(|o| o.value == value)
            .map_or_else(|| value.to_owned(), |o| o.label.clone())
    };
    match (kind, default) {
        (Kind::Boolean, Json::Bool(true)) => "y".to_owned(),
        (Kind::Boolean, Json::Bool(false)) => "n".to_owned(),
        (Kind::Choice { options }, value) => label(options, value),
        (Kind::Choices { options, .. }, Json::Array(values)) => values
            .iter()
            .map(|value| label(options, value))
            .collect::<Vec<_>>()
            .join(", "),
        (_, Json::String(text)) => text.clone(),
        (_, value) => value.to_string(),
    }
}

/// The typed line as a JSON value of the property's type (checked after).
fn typed(kind: &Kind, text: &str) -> Result<Json, String> {
    match kind {
        Kind::Text { .. } => Ok(Json::String(text.to_owned())),
        Kind::Number { .. } | Kind::Integer { .. } => {
            if let Ok(whole) = text.parse::<i64>() {
                return Ok(Json::from(whole));
            }
            text.parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(Json::Number)
                .ok_or_else(|| "expected a number".to_owned())
        }
        Kind::Boolean => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(Json::Bool(true)),
            "n" | "no" | "false" | "0" => Ok(Json::Bool(false)),
            _ => Err("answer y or n".to_owned()),
        },
        Kind::Choice { options } => pick(options, text).map(Json::String),
        Kind::Choices { options, .. } => text
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| pick(options, part).map(Json::String))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array),
    }
}

/// An option by its value, its number in the list, or its label.
fn pick(options: &[Choice], text: &str) -> Result<String, String> {
    if let Some(option) = options.iter().find(|o| o.value == text) {
        return Ok(option.value.clone());
    }
    if let Ok(number) = text.parse::<usize>()
        && let Some(option) = number.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(option.value.clone());
    }
    if let Some(option) = options.iter().find(|o| o.label.eq_ignore_ascii_case(text)) {
        return Ok(option.value.clone());
    }
    Err(format!(
        "not an option: type a number from 1 to {}, or a value",
        options.len()
    ))
}

//! Config errors that a person can act on: the file, the line, the key (as a
//! path such as `rules[2].risk`) and what was expected.
//!
//! Every error is located through a byte span of the file: the span the
//! `toml` parser or deserializer reports, or the span of a
//! [`toml::Spanned`] value kept for the checks that run after parsing. The
//! key is found by walking the document's spanned tree for the smallest node
//! that holds the span, so a syntax error, a type error and a semantic error
//! all name it the same way.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use crate::rules::toml_key;

/// A config that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, when the config came from one.
    pub file: Option<PathBuf>,
    /// The 1-based line, when the error has a place in the file.
    pub line: Option<usize>,
    /// The key, as a path: `upstreams[0].command`, `inbox.listen`.
    pub key: Option<String>,
    /// What is wrong and what was expected. Never a secret's value.
    pub message: String,
}

impl ConfigError {
    /// An error with no place in a file (the command line, the environment).
    pub(crate) fn bare(key: Option<&str>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: None,
            line: None,
            key: key.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    /// `FILE:LINE: KEY: MESSAGE`, leaving out what is not known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, _) => {}
        }
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// The text of a config file, to turn spans into lines and keys.
pub(super) struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    /// Every key and value of the document, with its path and span.
    nodes: Vec<(String, Range<usize>)>,
}

impl<'a> Source<'a> {
    pub(super) fn new(file: &'a Path, text: &'a str) -> Source<'a> {
        // A document with a syntax error still yields what it could parse,
        // which is enough to name the key near the error.
        let (table, _errors) = DeTable::parse_recoverable(text);
        let mut nodes = Vec::new();
        walk_table(table.get_ref(), "", &mut nodes);
        Source { file, text, nodes }
    }

    /// An error at `span`, its key found from the document.
    pub(super) fn at(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: Some(self.file.to_owned()),
            line: Some(self.line_of(span.start)),
            key: self.key_at(&span),
            message: message.into(),
        }
    }

    /// An error at `span` about `key`, a path the caller knows (used where
    /// the span alone is ambiguous, such as a key that is missing).
    pub(super) fn at_key(
        &self,
        span: Option<Range<usize>>,
        key: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            file: Some(self.file.to_owned()),
            line: span.map(|span| self.line_of(span.start)),
            key: Some(key.to_owned()),
            message: message.into(),
        }
    }

    /// Whether the document has a key at `path` (`rules[0].arguments.risk`).
    pub(super) fn has_key(&self, path: &str) -> bool {
        self.nodes.iter().any(|(node, _)| node == path)
    }

    /// The error of the `toml` parser or deserializer.
    pub(super) fn toml_error(&self, error: &toml::de::Error) -> ConfigError {
        let message = error.message().trim_end().to_owned();
        match error.span() {
            Some(span) => self.at(span, message),
            None => ConfigError {
                file: Some(self.file.to_owned()),
                line: None,
                key: None,
                message,
            },
        }
    }

    /// The 1-based line of a byte offset.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// The path of the smallest key or value that holds `span`.
    fn key_at(&self, span: &Range<usize>) -> Option<String> {
        self.nodes
            .iter()
            .filter(|(_, node)| node.start <= span.start && span.end <= node.end)
            .min_by_key(|(_, node)| node.end - node.start)
            .map(|(path, _)| path.clone())
    }
}

fn walk_table(table: &DeTable<'_>, prefix: &str, nodes: &mut Vec<(String, Range<usize>)>) {
    for (key, value) in table.iter() {
        let key_span = key.span();
        let key = toml_key(key.get_ref());
        let path = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        nodes.push((path.clone(), key_span));
        walk_value(value.get_ref(), value.span(), path, nodes);
    }
}

fn walk_value(
    value: &DeValue<'_>,
    span: Range<usize>,
    path: String,
    nodes: &mut Vec<(String, Range<usize>)>,
) {
    match value {
        DeValue::Table(table) => walk_table(table, &path, nodes),
        DeValue::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk_value(
                    item.get_ref(),
                    item.span(),
                    format!("{path}[{index}]"),
                    nodes,
                );
            }
        }
        _ => {}
    }
    nodes.push((path, span));
}

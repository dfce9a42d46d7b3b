//! The risk of a tool call, from the configured rules.
//!
//! How a call's risk is found, in this order:
//! 1. The rules, in the order the config file lists them: the **first** rule
//!    whose every condition holds gives the risk. A condition left out holds
//!    for every call. So put narrow rules (one tool, one argument value)
//!    before broad ones (`tool = "*"`).
//! 2. No rule holds, and the upstream's tool says `destructiveHint: true`:
//!    `destructive`. A server's own warning is always believed, because it
//!    can only make a call stricter.
//! 3. No rule holds, `trust_read_only_hints = true`, and the tool says
//!    `readOnlyHint: true`: `read`. Off by default: a hint is the server's
//!    claim about itself, and askgate fails closed.
//! 4. Otherwise the default risk (`medium_write` unless configured): a tool
//!    nobody described is asked about before it runs.
//!
//! Globs (the `globset` syntax: `*`, `?`, `[abc]`, `{a,b}`, `**`) match the
//! whole text, case-sensitively. On server and tool names `*` matches any
//! characters. On argument values `*` stays within one `/`-separated segment
//! and `**` crosses segments, as in paths: `/etc/*` matches `/etc/passwd`,
//! not `/etc/ssl/cert.pem`; `/etc/**` matches both. Values are matched in
//! their normal form ([`normal`]): `/tmp/../etc/passwd` is under `/etc/**`
//! and not under `/tmp/**`, whichever way the model writes it. Still, a
//! rule that lowers the risk of a path should be narrow, and one that
//! raises it broad: the normal form is lexical, and a symbolic link on the
//! upstream's disk is not seen.

use std::fmt;
use std::sync::Arc;

use askgate_core::Risk;
use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::{Map, Value};

mod normal;

/// A glob, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    text: String,
    matcher: GlobMatcher,
}

impl Pattern {
    /// A glob on a server or tool name: `*` matches any characters.
    ///
    /// # Errors
    /// The glob does not parse; the text says why.
    pub(crate) fn name(text: &str) -> Result<Pattern, String> {
        Pattern::build(text, false)
    }

    /// A glob on an argument value: `*` stays within a `/`-separated
    /// segment, `**` crosses segments. It matches values in their normal
    /// form, so it must be written in it.
    ///
    /// # Errors
    /// The glob does not parse, or is not in normal form; the text says
    /// why.
    pub(crate) fn value(text: &str) -> Result<Pattern, String> {
        if let Some(problem) = normal::problem(text) {
            return Err(problem);
        }
        Pattern::build(text, true)
    }

    fn build(text: &str, literal_separator: bool) -> Result<Pattern, String> {
        if text.is_empty() {
            return Err("an empty glob matches nothing; use \"*\" to match anything".into());
        }
        let glob: Glob = GlobBuilder::new(text)
            .literal_separator(literal_separator)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("invalid glob {text:?}: {}", e.kind()))?;
        Ok(Pattern {
            text: text.to_owned(),
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether `text` matches.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.matcher.is_match(text)
    }

    /// The glob as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }
}

/// Where a rule looks in a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgumentPath {
    /// A top-level key: `path`.
    Key(String),
    /// A JSON pointer (RFC 6901), which starts with `/`: `/options/target`,
    /// `/files/0`.
    Pointer(Vec<String>),
}

impl ArgumentPath {
    /// `text` as a top-level key, or, when it starts with `/`, a JSON
    /// pointer.
    ///
    /// # Errors
    /// An empty name, or a pointer with a `~` not followed by `0` or `1`.
    pub(crate) fn parse(text: &str) -> Result<ArgumentPath, String> {
        if text.is_empty() {
            return Err("an empty argument name; write a top-level key (\"path\") \
                        or a JSON pointer (\"/options/path\")"
                .into());
        }
        let Some(pointer) = text.strip_prefix('/') else {
            return Ok(ArgumentPath::Key(text.to_owned()));
        };
        pointer
            .split('/')
            .map(|token| {
                let mut out = String::with_capacity(token.len());
                let mut chars = token.chars();
                while let Some(c) = chars.next() {
                    match (c, c == '~') {
                        (_, false) => out.push(c),
                        (_, true) => match chars.next() {
                            Some('0') => out.push('~'),
                            Some('1') => out.push('/'),
                            _ => {
                                return Err(format!(
                                    "invalid JSON pointer {text:?}: `~` must be followed \
                                     by 0 (for ~) or 1 (for /)"
                                ));
                            }
                        },
                    }
                }
                Ok(out)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ArgumentPath::Pointer)
    }

    /// The value at this path, if there is one.
    fn lookup<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        match self {
            ArgumentPath::Key(key) => arguments.get(key),
            ArgumentPath::Pointer(tokens) => {
                let (first, rest) = tokens.split_first()?;
                rest.iter()
                    .try_fold(arguments.get(first)?, |value, token| match value {
                        Value::Object(map) => map.get(token),
                        Value::Array(items) => index(token).and_then(|i| items.get(i)),
                        _ => None,
                    })
            }
        }
    }
}

impl fmt::Display for ArgumentPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgumentPath::Key(key) => f.write_str(key),
            ArgumentPath::Pointer(tokens) => tokens.iter().try_for_each(|token| {
                write!(f, "/{}", token.replace('~', "~0").replace('/', "~1"))
            }),
        }
    }
}

/// An array index as RFC 6901 writes it: digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// The text an argument value is matched as: a string as it is, a number
/// or a boolean as JSON writes it. Other values (null, arrays, objects)
/// match no glob.
fn as_text(value: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match value {
        Value::String(text) => Some(text.as_str().into()),
        Value::Number(number) => Some(number.to_string().into()),
        Value::Bool(flag) => Some(flag.to_string().into()),
        _ => None,
    }
}

/// One rule: conditions on the server, the tool and argument values, and
/// the risk they give. A condition left out holds for every call.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// The upstream's name (the namespace prefix).
    pub(crate) server: Option<Pattern>,
    /// The tool's name as the upstream lists it (without the prefix).
    pub(crate) tool: Option<Pattern>,
    /// Every one must match.
    pub(crate) arguments: Vec<(ArgumentPath, Pattern)>,
    /// The risk when the rule holds.
    pub(crate) risk: Risk,
}

impl Rule {
    fn holds(&self, server: &str, tool: &str, arguments: &Map<String, Value>) -> bool {
        names_hold(self.server.as_ref(), self.tool.as_ref(), server, tool)
            && arguments_hold(&self.arguments, arguments)
    }

    /// The conditions, as in the config: `server="files", tool="delete_*"`.
    fn conditions(&self) -> String {
        let names = [("server", &self.server), ("tool", &self.tool)]
            .into_iter()
            .filter_map(|(key, p)| p.as_ref().map(|p| format!("{key}={:?}", p.as_str())));
        let arguments = self
            .arguments
            .iter()
            .map(|(path, p)| format!("arguments.{}={:?}", toml_key(&path.to_string()), p.as_str()));
        names.chain(arguments).collect::<Vec<_>>().join(", ")
    }
}

/// Whether a call of `tool` on `server` matches the globs given (a glob
/// left out matches every name).
pub(crate) fn names_hold(
    server_glob: Option<&Pattern>,
    tool_glob: Option<&Pattern>,
    server: &str,
    tool: &str,
) -> bool {
    server_glob.is_none_or(|p| p.is_match(server)) && tool_glob.is_none_or(|p| p.is_match(tool))
}

/// Whether every condition on argument values holds of `arguments`: the
/// value at each path, as text and normalized (see the `normal` module),
/// matches its glob.
pub(crate) fn arguments_hold(
    conditions: &[(ArgumentPath, Pattern)],
    arguments: &Map<String, Value>,
) -> bool {
    conditions.iter().all(|(path, pattern)| {
        path.lookup(arguments)
            .and_then(as_text)
            .is_some_and(|text| pattern.is_match(&normal::normal(&text)))
    })
}

/// `text` as a TOML key: bare when it can be, quoted otherwise.
pub(super) fn toml_key(text: &str) -> String {
    let bare = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        text.to_owned()
    } else {
        format!("{text:?}")
    }
}

/// What a tool's MCP annotations say about it (`readOnlyHint`,
/// `destructiveHint`); `None` where the tool says nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// `annotations.readOnlyHint`.
    pub(crate) read_only: Option<bool>,
    /// `annotations.destructiveHint`.
    pub(crate) destructive: Option<bool>,
}

impl Hints {
    /// What `tool`'s annotations say, as an upstream listed it.
    pub(crate) fn of(tool: &rmcp::model::Tool) -> Hints {
        let annotations = tool.annotations.as_ref();
        Hints {
            read_only: annotations.and_then(|a| a.read_only_hint),
            destructive: annotations.and_then(|a| a.destructive_hint),
        }
    }
}

/// The risk of a call and what gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Judged {
    /// The risk.
    pub(crate) risk: Risk,
    /// The rule, hint or default that gave it.
    pub(crate) rule: RuleRef,
}

/// What gave a call its risk, for the operator's dry run and the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RuleRef {
    /// A configured rule: its index in `rules` (from 0) and its conditions.
    Rule {
        /// The index in the config's `rules`.
        index: usize,
        /// `server="files", tool="delete_*"`, written once per rule.
        conditions: Arc<str>,
    },
    /// The tool's `destructiveHint: true`.
    DestructiveHint,
    /// The tool's `readOnlyHint: true`, trusted by `trust_read_only_hints`.
    ReadOnlyHint,
    /// No rule and no hint: the default risk.
    Default,
}

impl RuleRef {
    /// What gave the risk, in words for the person asked (the
    /// confirmation's "Risk from:" line).
    pub(crate) fn for_people(&self) -> String {
        match self {
            RuleRef::Rule { index, conditions } => format!("rules[{index}] ({conditions})"),
            RuleRef::DestructiveHint => "the tool's own destructiveHint".to_owned(),
            RuleRef::ReadOnlyHint => {
                "the tool's own readOnlyHint, trusted by the config".to_owned()
            }
            RuleRef::Default => "no rule names this tool: askgate's default risk".to_owned(),
        }
    }
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleRef::Rule { index, conditions } => write!(f, "rules[{index}] ({conditions})"),
            RuleRef::DestructiveHint => f.write_str("annotations.destructiveHint"),
            RuleRef::ReadOnlyHint => {
                f.write_str("annotations.readOnlyHint (trust_read_only_hints)")
            }
            RuleRef::Default => f.write_str("default"),
        }
    }
}

/// The rules, compiled once when the config loads.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    rules: Vec<Rule>,
    /// Each rule's conditions as the config has them, written when the
    /// rules are made, not on every call a rule decides.
    conditions: Vec<Arc<str>>,
    default: Risk,
    trust_read_only_hints: bool,
}

impl Rules {
    /// `rules` in the order they apply, the risk when none holds, and
    /// whether `readOnlyHint: true` is believed.
    pub(crate) fn new(rules: Vec<Rule>, default: Risk, trust_read_only_hints: bool) -> Rules {
        let conditions = rules.iter().map(|rule| rule.conditions().into()).collect();
        Rules {
            rules,
            conditions,
            default,
            trust_read_only_hints,
        }
    }

    /// The default policy: no rule, `medium_write` for every tool, hints
    /// other than `destructiveHint` not believed.
    pub(crate) fn fail_closed() -> Rules {
        Rules::new(Vec::new(), Risk::MediumWrite, false)
    }

    /// The risk when no rule holds and the tool has no hint.
    pub(crate) fn default_risk(&self) -> Risk {
        self.default
    }

    /// These rules, `readOnlyHint: true` believed.
    pub(crate) fn trusting_read_only_hints(mut self) -> Rules {
        self.trust_read_only_hints = true;
        self
    }

    /// Whether `readOnlyHint: true` lowers a tool's risk to `read`.
    pub(crate) fn trusts_read_only_hints(&self) -> bool {
        self.trust_read_only_hints
    }

    /// The risk of calling `tool` on `server` with `arguments`, from the
    /// rules alone (no annotations). `tool` is the upstream's own name for
    /// it, without the namespace prefix.
    #[cfg(test)]
    pub(crate) fn risk_of(
        &self,
        server: &str,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Judged {
        self.risk_with_hints(server, tool, Hints::default(), arguments)
    }

    /// The risk of calling `tool` on `server` with `arguments`, with what
    /// the tool's annotations say (see the module's docs for the order).
    pub(crate) fn risk_with_hints(
        &self,
        server: &str,
        tool: &str,
        hints: Hints,
        arguments: &Map<String, Value>,
    ) -> Judged {
        let ruled = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.holds(server, tool, arguments));
        if let Some((index, rule)) = ruled {
            return Judged {
                risk: rule.risk,
                rule: RuleRef::Rule {
                    index,
                    conditions: Arc::clone(&self.conditions[index]),
                },
            };
        }
        if hints.destructive == Some(true) {
            return Judged {
                risk: Risk::Destructive,
                rule: RuleRef::DestructiveHint,
            };
        }
        if self.trust_read_only_hints && hints.read_only == Some(true) {
            return Judged {
                risk: Risk::Read,
                rule: RuleRef::ReadOnlyHint,
            };
        }
        Judged {
            risk: self.default,
            rule: RuleRef::Default,
        }
    }
}

#[cfg(test)]
mod tests;

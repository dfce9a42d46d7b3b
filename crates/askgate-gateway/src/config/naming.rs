//! Names: an upstream's name when the operator gave none (from the command
//! that starts it, or from the name the server gives itself), and how its
//! tools and prompts are named downstream (its namespace, the separator).

use toml::Spanned;

use super::MAX_NAME;
use super::error::{ConfigError, Source};

/// The name of the upstream `command args` starts: the program's file stem,
/// or, for a runner (`npx`, `uvx`, `node`, `python -m`, ...), the package,
/// module or script it runs; lowercased, other characters than
/// `[a-z0-9_-]` made `_`.
pub(super) fn server_name(command: &str, args: &[String]) -> String {
    const RUNNERS: [&str; 12] = [
        "npx", "bunx", "pnpx", "uvx", "pipx", "uv", "node", "deno", "bun", "python", "python3",
        "py",
    ];
    // Flags of those runners that take a value, and words that are not the
    // thing run.
    const VALUED: [&str; 6] = ["-p", "--package", "--from", "--with", "--python", "-c"];
    const VERBS: [&str; 4] = ["run", "tool", "x", "exec"];
    let program = file_stem(command);
    let mut target = None;
    if RUNNERS.contains(&program.to_ascii_lowercase().as_str()) {
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if arg == "-m" {
                target = args.next();
                break;
            }
            if VALUED.contains(&arg.as_str()) {
                args.next();
            } else if !arg.starts_with('-') && !VERBS.contains(&arg.as_str()) {
                target = Some(arg);
                break;
            }
        }
    }
    let stem = target.map_or(program, |target| file_stem(target));
    usable_name(stem).unwrap_or_else(|| "upstream".to_owned())
}

/// `text` as an upstream name (lowercase; `[a-z0-9_-]`, other characters
/// as `_`, a run of `_` as one, so it never holds the default separator;
/// at most 32 characters), if anything is left.
pub(crate) fn usable_name(text: &str) -> Option<String> {
    let mut name = String::with_capacity(text.len());
    for c in text.chars().map(|c| c.to_ascii_lowercase()) {
        let c = match c {
            'a'..='z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        };
        if !(c == '_' && name.ends_with('_')) {
            name.push(c);
        }
    }
    let name = name.trim_matches(['_', '-']);
    let name = name
        .get(..MAX_NAME.min(name.len()))?
        .trim_end_matches(['_', '-']);
    (!name.is_empty()).then(|| name.to_owned())
}

/// `/usr/bin/server.py` -> `server`; `@scope/server-x@1.2` -> `server-x`.
fn file_stem(path: &str) -> &str {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let base = match base.find('@') {
        Some(at) if at > 0 => &base[..at],
        _ => base,
    };
    match base.rfind('.') {
        Some(dot) if dot > 0 => &base[..dot],
        _ => base,
    }
}

/// How an upstream's tools and prompts are named downstream
/// (`namespace` in its `[[upstreams]]` table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Namespace {
    /// Its name as the prefix when the gateway has several upstreams;
    /// none when it is the only one (the default).
    #[default]
    Auto,
    /// Always its name (`namespace = true`).
    Name,
    /// This prefix (`namespace = "<prefix>"`).
    Prefix(String),
    /// None: every name as the server gives it (`namespace = false`).
    Off,
}

/// The default between a prefix and a name.
pub(crate) const DEFAULT_SEPARATOR: &str = "__";

/// The longest name some model APIs accept for a function (a tool): a
/// longer one is warned about.
pub(crate) const MODEL_NAME_LIMIT: usize = 64;

/// The characters a tool name may hold (MCP 2025-11-25: A-Z, a-z, 0-9,
/// `_`, `-`, `.`), so a prefix and a separator may hold no others.
fn tool_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// What is wrong with a `namespace` prefix, if anything.
pub(super) fn prefix_problem(prefix: &str) -> Option<String> {
    if prefix.is_empty() || prefix.len() > MAX_NAME || !prefix.chars().all(tool_name_char) {
        Some(format!(
            "invalid namespace {prefix:?}; expected true, false, or a prefix of 1 to {MAX_NAME} \
             characters of A-Z, a-z, 0-9, _, - and . (the characters of a tool name)"
        ))
    } else {
        None
    }
}

/// Why `prefix` (an upstream's name or its `namespace`, as `what` says)
/// cannot prefix its tools' names, if it cannot: it holds the separator.
/// Then `a` + `__` + `b__c` and `a__b` + `__` + `c` would be one name, and
/// one upstream could list a tool in another's place.
pub(crate) fn separator_inside(prefix: &str, what: &str, separator: &str) -> Option<String> {
    // Its own end is the first separator of `prefix + separator`: `a_`
    // with `__` would read as `a` + `__` + `_…`.
    let joined = format!("{prefix}{separator}");
    (joined.find(separator) != Some(prefix.len())).then(|| {
        format!(
            "the {what} {prefix:?} holds the separator {separator:?} (or ends in part of it), \
             which ends the prefix of a tool's name; write it without {separator:?} (or set \
             another `separator`)"
        )
    })
}

/// What is wrong with a `separator`, if anything.
pub(super) fn separator_problem(separator: &str) -> Option<String> {
    if separator.is_empty()
        || separator.len() > 4
        || !separator.chars().all(|c| matches!(c, '_' | '-' | '.'))
    {
        Some(format!(
            "invalid separator {separator:?}; expected 1 to 4 characters of _, - and . (a tool \
             name holds no others besides letters and digits)"
        ))
    } else {
        None
    }
}

/// An upstream's `namespace` as written: `true`, `false` or a prefix.
pub(super) fn namespace(
    value: Option<Spanned<toml::Value>>,
    separator: &str,
    src: &Source<'_>,
) -> Result<Namespace, ConfigError> {
    let Some(value) = value else {
        return Ok(Namespace::Auto);
    };
    let span = value.span();
    match value.into_inner() {
        toml::Value::Boolean(true) => Ok(Namespace::Name),
        toml::Value::Boolean(false) => Ok(Namespace::Off),
        toml::Value::String(prefix) => {
            match prefix_problem(&prefix)
                .or_else(|| separator_inside(&prefix, "namespace", separator))
            {
                None => Ok(Namespace::Prefix(prefix)),
                Some(problem) => Err(src.at(span, problem)),
            }
        }
        other => Err(src.at(
            span,
            format!(
                "expected true (the upstream's name), false (no prefix) or a prefix string as \
                 the namespace, not a value of type {}",
                other.type_str()
            ),
        )),
    }
}

/// The `separator` as written, or the default.
pub(super) fn separator(
    value: Option<Spanned<String>>,
    src: &Source<'_>,
) -> Result<String, ConfigError> {
    let Some(value) = value else {
        return Ok(DEFAULT_SEPARATOR.to_owned());
    };
    match separator_problem(value.get_ref()) {
        None => Ok(value.into_inner()),
        Some(problem) => Err(src.at(value.span(), problem)),
    }
}

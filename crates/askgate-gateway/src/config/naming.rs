//! An upstream's name when the operator gave none: from the command that
//! starts it, or from the name the server gives itself.

use super::MAX_NAME;

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
/// as `_`; at most 32 characters), if anything is left.
pub(crate) fn usable_name(text: &str) -> Option<String> {
    let name: String = text
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
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

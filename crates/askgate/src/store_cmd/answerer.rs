//! Who answers from the command line: the person whose credential is in
//! [`TOKEN_ENV`], or typed at a prompt (without echo) on a terminal,
//! checked against the config's `[[people]]` and the inbox's operator
//! token — the config's `[inbox] token`, or the digest of the generated one
//! beside the store's key ([`askgate_inbox::people_known`], the inbox's own
//! list). An agent's token, like any other, answers as nobody.

use std::io::IsTerminal;

use super::REFUSED;
use crate::failure::Failure;
use askgate_gateway::Config;
use askgate_inbox::Person;

/// The environment variable that holds a person's inbox token, for
/// `asks answer|decline|skip`.
pub(super) const TOKEN_ENV: &str = "ASKGATE_TOKEN";

/// The person `askgate asks VERB` answers as: whose credential is in
/// [`TOKEN_ENV`], or typed at a prompt on a terminal — checked against the
/// config's people and the inbox's operator token beside the store's key.
pub(super) fn answerer(
    verb: &str,
    config: Option<&Config>,
    store_url: &str,
) -> Result<Person, Failure> {
    let key_file = askgate_gateway::keys::key_path(store_url);
    let people = askgate_inbox::people_known(
        config.and_then(|c| c.inbox.token.as_deref()),
        config.map_or(&[][..], |c| &c.people),
        &key_file,
    )
    .map_err(Failure::malformed)?;
    if people.is_empty() {
        return Err(Failure::new(
            REFUSED,
            format!(
                "`askgate asks {verb}` has nobody to answer as: pass --config FILE, the gateway's \
                 config with its [[people]] (or its [inbox] token), or start the inbox once to \
                 have an operator token made; nothing was changed"
            ),
        ));
    }
    let token = credential(verb)?;
    // Not said: whether the token is an agent's, or close to anyone's.
    people.find(&token).cloned().ok_or_else(|| {
        Failure::new(
            REFUSED,
            format!(
                "`askgate asks {verb}`: that token is no person's credential here (expected \
                 your token from the config's [[people]], or the inbox's operator token); \
                 nothing was changed"
            ),
        )
    })
}

/// A person's token: [`TOKEN_ENV`] when set, else typed at a prompt
/// (without echo) when standard input is a terminal.
fn credential(verb: &str) -> Result<String, Failure> {
    if let Some(token) = std::env::var_os(TOKEN_ENV) {
        let token = token.into_string().map_err(|_| {
            Failure::new(
                REFUSED,
                format!("{TOKEN_ENV} is not valid UTF-8; expected your inbox token"),
            )
        })?;
        if !token.trim().is_empty() {
            return Ok(token.trim().to_owned());
        }
    }
    if std::io::stdin().is_terminal() {
        let typed = rpassword::prompt_password(format!("askgate asks {verb}: your inbox token: "))
            .map_err(|e| {
                Failure::new(
                    REFUSED,
                    format!("cannot read a token from the terminal: {e}"),
                )
            })?;
        if !typed.trim().is_empty() {
            return Ok(typed.trim().to_owned());
        }
    }
    Err(Failure::new(
        REFUSED,
        format!(
            "`askgate asks {verb}` needs a person's credential: set {TOKEN_ENV} to your inbox \
             token, or run it in a terminal to be asked for it"
        ),
    ))
}

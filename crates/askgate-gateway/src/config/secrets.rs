//! The secrets a config holds, for the log writer to keep out of every
//! line: whatever logs them by mistake (an upstream's URL in a connection
//! error, rmcp's own events), they are written as `[redacted]`.

use super::{Config, Transport};

/// A secret shorter than this is not looked for: it would match ordinary
/// words (the config refuses tokens this short anyway).
const SHORTEST: usize = 8;

impl Config {
    /// Every secret in the config: tokens (principals', people's, the
    /// operator's), HTTP upstreams' header values and the query strings of
    /// their URLs, stdio upstreams' `env` values, the store URL's
    /// password, the webhook's URL path and header values.
    pub fn secrets(&self) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        found.extend(self.principals.iter().map(|p| p.token.clone()));
        found.extend(self.people.iter().map(|p| p.token.clone()));
        found.extend(self.inbox.token.iter().cloned());
        for upstream in &self.upstreams {
            match &upstream.transport {
                Transport::Http(http) => {
                    found.extend(http.headers.values().cloned());
                    found.extend(query_of(&http.url));
                }
                Transport::Stdio(stdio) => found.extend(stdio.env.values().cloned()),
            }
        }
        if let Ok(url) = url::Url::parse(self.store.expose())
            && let Some(password) = url.password()
        {
            found.push(password.to_owned());
        }
        if let Some(webhook) = &self.notify {
            found.extend(webhook.headers.values().cloned());
            if let Ok(url) = url::Url::parse(&webhook.url) {
                found.push(url.path().to_owned());
                found.extend(query_of(&webhook.url));
            }
        }
        found.retain(|secret| secret.trim().len() >= SHORTEST);
        // The longest first, so a secret inside another is not left half.
        found.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        found.dedup();
        found
    }
}

/// A URL's query string, as written and as a URL parser writes it again.
fn query_of(url: &str) -> Vec<String> {
    let mut queries = Vec::new();
    if let Some((_, query)) = url.split_once('?') {
        queries.push(query.split('#').next().unwrap_or(query).to_owned());
    }
    if let Ok(parsed) = url::Url::parse(url)
        && let Some(query) = parsed.query()
    {
        queries.push(query.to_owned());
    }
    queries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_of_a_config_is_found_and_nothing_short() {
        let text = "store = \"postgres://askgate:pg-password-1@db/askgate\"\n\
            [[upstreams]]\nname = \"web\"\nurl = \"https://mcp.example/mcp?api_key=query-secret-1\"\n\
            [upstreams.headers]\nAuthorization = \"Bearer header-secret-1\"\n\
            [[upstreams]]\nname = \"local\"\ncommand = \"x\"\n[upstreams.env]\nTOKEN = \"env-secret-1\"\nLEVEL = \"debug\"\n\
            [[principals]]\nname = \"ci\"\ntoken = \"principal-token-0123\"\n\
            [notify]\nwebhook = \"https://hooks.slack.com/services/T0/B0/webhook-secret\"\n";
        let config = Config::parse(std::path::Path::new("askgate.toml"), text).expect("parses");
        let secrets = config.secrets();
        for secret in [
            "pg-password-1",
            "api_key=query-secret-1",
            "Bearer header-secret-1",
            "env-secret-1",
            "principal-token-0123",
            "/services/T0/B0/webhook-secret",
        ] {
            assert!(
                secrets.iter().any(|s| s == secret),
                "{secret} in {secrets:?}"
            );
        }
        assert!(!secrets.iter().any(|s| s == "debug"), "{secrets:?}");
    }
}

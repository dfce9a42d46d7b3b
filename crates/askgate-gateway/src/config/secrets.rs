//! The secrets a config holds, for the log writer to keep out of every
//! line: whatever logs them by mistake (an upstream's URL in a connection
//! error, rmcp's own events), they are written as `[redacted]`.

use super::{Config, Transport};

/// A secret shorter than this is not looked for: it would match ordinary
/// words (the config refuses tokens this short anyway).
const SHORTEST: usize = 8;

impl Config {
    /// Every secret in the config: tokens (principals', people's, the
    /// operator's), the OpenID and introspection client secrets, HTTP upstreams' header values and the query strings of
    /// their URLs, stdio upstreams' `env` values, the store URL's
    /// password, the webhook's URL path and header values.
    pub fn secrets(&self) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        found.extend(self.principals.iter().map(|p| p.token.clone()));
        found.extend(self.people.iter().map(|p| p.token.clone()));
        found.extend(self.inbox.token.iter().cloned());
        found.extend(
            self.inbox
                .oidc
                .iter()
                .map(|oidc| oidc.client_secret.clone()),
        );
        found.extend(
            self.listen
                .iter()
                .filter_map(|listen| listen.oauth.as_ref())
                .filter_map(|oauth| oauth.introspection.as_ref())
                .map(|introspection| introspection.client_secret.clone()),
        );
        for upstream in &self.upstreams {
            match &upstream.transport {
                Transport::Http(http) => {
                    for value in http.headers.values() {
                        found.push(value.clone());
                        // `Bearer <token>`: the token alone, too.
                        found.extend(value.split_whitespace().skip(1).map(str::to_owned));
                    }
                    found.extend(query_of(&http.url));
                    if let Ok(url) = url::Url::parse(&http.url) {
                        found.extend(url.password().map(str::to_owned));
                        // A key carried in the path (`/s/<key>/mcp`): each
                        // segment long and token-shaped enough.
                        found.extend(
                            url.path_segments()
                                .into_iter()
                                .flatten()
                                .filter(|segment| askgate_core::looks_secret(segment))
                                .map(str::to_owned),
                        );
                    }
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
        // As JSON writes them (a log line in JSON, an error's Debug form).
        let escaped: Vec<String> = found
            .iter()
            .filter_map(|secret| {
                let json = serde_json::to_string(secret).ok()?;
                let inner = json.get(1..json.len() - 1)?.to_owned();
                (inner != *secret).then_some(inner)
            })
            .collect();
        found.extend(escaped);
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
            [[upstreams]]\nname = \"web\"\nurl = \"https://u:url-password-1@mcp.example/s/sk_live_0123456789abcdef/mcp?api_key=query-secret-1\"\n\
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
            "header-secret-1",
            "url-password-1",
            "sk_live_0123456789abcdef",
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

//! An upstream over Streamable HTTP: how it is reached (headers, the
//! longest answer read), and its URL as errors may show it.

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// How to reach upstream `name` at `url` over Streamable HTTP, sending
/// `headers` (credentials: never in an error), reading at most
/// `answer_size` bytes in one answer (a JSON body or one SSE event): a
/// longer one fails its request, which its client is told of.
pub(super) fn config(
    name: &str,
    url: &str,
    headers: &[(String, String)],
    answer_size: usize,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.max_json_response_size = answer_size;
    config.max_sse_event_size = answer_size;
    for (key, value) in headers {
        let header = http::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("upstream {name}: {key:?} is not a header name"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("upstream {name}: the value of header {key} is not valid"))?;
        config.custom_headers.insert(header, value);
    }
    Ok(config)
}

/// `url` as it may be shown in an error: scheme, host, port and path,
/// without the user part, the query or the fragment (where keys go).
pub(super) fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            // Only a URL that cannot have a user part refuses these, and
            // then it has none to hide.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "(an unreadable URL)".to_owned(),
    }
}

/// `text` with `url` (as written, and as a URL parser writes it) put as
/// `shown`.
pub(super) fn without_url(text: &str, url: &str, shown: &str) -> String {
    let mut text = text.replace(url, shown);
    if let Ok(parsed) = url::Url::parse(url) {
        text = text.replace(parsed.as_str(), shown);
    }
    text
}

/// Why a call to an HTTP upstream reading at most `most` bytes in one
/// answer ended with its connection (all rmcp's client tells).
pub(crate) fn answer_not_arrived(most: usize) -> String {
    #[allow(clippy::cast_precision_loss)]
    let mib = most as f64 / (1024.0 * 1024.0);
    format!(
        "its answer did not arrive: the connection to its server ended, or the answer was \
         longer than the {mib:.1} MiB askgate reads in one message ([limits] answer_mib)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_user_part_query_or_fragment() {
        assert_eq!(
            shown_url("https://me:pw@mcp.example.com:8443/s/mcp?api_key=k1#frag"),
            "https://mcp.example.com:8443/s/mcp"
        );
        assert_eq!(shown_url("not a url ?key=k1"), "(an unreadable URL)");
    }

    #[test]
    fn an_error_naming_the_url_names_it_shown() {
        let url = "http://127.0.0.1:9/mcp?api_key=k1";
        let shown = shown_url(url);
        assert_eq!(
            without_url(
                &format!("error sending request for url ({url})"),
                url,
                &shown
            ),
            "error sending request for url (http://127.0.0.1:9/mcp)"
        );
        // As a URL parser writes it again (a default port dropped).
        let url = "http://EXAMPLE.com:80/mcp?api_key=k1";
        let written = url::Url::parse(url).expect("a URL").to_string();
        assert_eq!(
            without_url(&format!("at {written}"), url, &shown_url(url)),
            "at http://example.com/mcp"
        );
    }

    #[test]
    fn the_longest_answer_read_is_the_one_given() {
        let config = config("web", "http://127.0.0.1:9/mcp", &[], 3 << 20).expect("config");
        assert_eq!(config.max_json_response_size, 3 << 20);
        assert_eq!(config.max_sse_event_size, 3 << 20);
    }
}

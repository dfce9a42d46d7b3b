//! Names people read, made from Rust names: `notify_list` is titled
//! "Notify list", `BlueGreen` is labelled "Blue green" and valued
//! `blue_green`.

/// The words of a Rust name, split at underscores and at case changes
/// (`HTTPServer` is `HTTP` and `Server`).
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split('_').filter(|part| !part.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut word = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let starts_word = i > 0
                && c.is_uppercase()
                && (chars[i - 1].is_lowercase()
                    || chars[i - 1].is_ascii_digit()
                    || (chars[i - 1].is_uppercase()
                        && chars.get(i + 1).is_some_and(|next| next.is_lowercase())));
            if starts_word {
                words.push(std::mem::take(&mut word));
            }
            word.push(c);
        }
        words.push(word);
    }
    words
}

/// A name in snake case: `BlueGreen` is `blue_green`.
pub(crate) fn snake_case(name: &str) -> String {
    words(name)
        .iter()
        .map(|word| word.to_lowercase())
        .collect::<Vec<_>>()
        .join("_")
}

/// A name as words in sentence case: `notify_list` is "Notify list",
/// `HttpServer` "Http server"; an acronym stays in capitals (`HTTPServer` is
/// "HTTP server").
pub(crate) fn sentence(name: &str) -> String {
    let mut out = String::new();
    for (i, word) in words(name).iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let acronym = word.chars().count() > 1 && !word.chars().any(char::is_lowercase);
        if acronym {
            out.push_str(word);
        } else if i == 0 {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(&chars.as_str().to_lowercase());
            }
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_become_sentence_case_titles() {
        assert_eq!(sentence("notify_list"), "Notify list");
        assert_eq!(sentence("when"), "When");
        assert_eq!(sentence("max_replicas_2"), "Max replicas 2");
    }

    #[test]
    fn variant_names_become_labels_and_snake_case_values() {
        assert_eq!(sentence("BlueGreen"), "Blue green");
        assert_eq!(snake_case("BlueGreen"), "blue_green");
        assert_eq!(sentence("HTTPServer"), "HTTP server");
        assert_eq!(snake_case("HTTPServer"), "http_server");
        assert_eq!(snake_case("Prod"), "prod");
        assert_eq!(snake_case("V2Api"), "v2_api");
    }
}

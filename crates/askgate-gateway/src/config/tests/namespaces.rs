//! `namespace` and `separator`: what each prefixes, and a clear error for
//! a value that cannot be one.

use super::*;

const TWO: &str = "store = \"sqlite:///tmp/a.db\"\n\
    [[upstreams]]\nname = \"files\"\ncommand = \"x\"\n\
    [[upstreams]]\nname = \"notes\"\ncommand = \"x\"\n";

fn prefixes(config: &Config) -> Vec<Option<String>> {
    (0..config.upstreams.len())
        .map(|index| config.prefix_of(index))
        .collect()
}

#[test]
fn one_upstream_has_no_prefix_and_several_have_their_names() {
    let one = with_upstream("").expect("parses");
    assert_eq!(prefixes(&one), [None]);
    assert_eq!(one.separator, "__");
    let two = parse(TWO).expect("parses");
    assert_eq!(
        prefixes(&two),
        [Some("files".to_owned()), Some("notes".to_owned())]
    );
    let zero = Config::for_command(vec!["server".into()]).expect("a command");
    assert_eq!(prefixes(&zero), [None]);
}

#[test]
fn namespace_true_false_or_a_prefix_overrides_the_default() {
    let one = with_upstream("namespace = true\n").expect("parses");
    assert_eq!(prefixes(&one), [Some("files".to_owned())]);
    let text = TWO.replace(
        "name = \"files\"\ncommand = \"x\"\n",
        "name = \"files\"\ncommand = \"x\"\nnamespace = false\n",
    );
    let config = parse(&format!("separator = \"-\"\n{text}namespace = \"N.2\"\n")).expect("parses");
    assert_eq!(prefixes(&config), [None, Some("N.2".to_owned())]);
    assert_eq!(config.separator, "-");
}

#[test]
fn a_namespace_that_is_not_a_prefix_names_the_line_and_what_is_expected() {
    let said = error(&format!("{TWO}namespace = 3\n"));
    assert!(
        said.starts_with("askgate.toml:8: upstreams[1].namespace:"),
        "{said}"
    );
    assert!(said.contains("expected true"), "{said}");
    assert!(said.contains("not a value of type integer"), "{said}");
    let said = error(&format!("{TWO}namespace = \"has space\"\n"));
    assert!(said.contains("invalid namespace \"has space\""), "{said}");
    assert!(said.contains("A-Z, a-z, 0-9, _, - and ."), "{said}");
    let said = error(&format!("{TWO}namespace = \"\"\n"));
    assert!(said.contains("invalid namespace \"\""), "{said}");
}

#[test]
fn a_separator_of_other_characters_is_refused() {
    for bad in ["", "/", "::", "_____"] {
        let said = error(&format!("separator = {bad:?}\n{TWO}"));
        assert!(said.starts_with("askgate.toml:1:"), "{bad}: {said}");
        assert!(said.contains("invalid separator"), "{bad}: {said}");
    }
}

#[test]
fn a_prefix_holding_the_separator_is_refused_so_no_upstream_lists_in_anothers_place() {
    // `a` + `__` + `b__c` and `a__b` + `__` + `c` would be one name.
    let said = error(&TWO.replace("name = \"notes\"", "name = \"files__x\""));
    assert!(
        said.starts_with("askgate.toml:6: upstreams[1].name:"),
        "{said}"
    );
    assert!(said.contains("holds the separator \"__\""), "{said}");
    let said = error(&format!("{TWO}namespace = \"n_\"\n"));
    assert!(
        said.contains("the namespace \"n_\" holds the separator"),
        "{said}"
    );
    let said = error(&format!("{TWO}namespace = \"n__x\"\n"));
    assert!(
        said.contains("the namespace \"n__x\" holds the separator"),
        "{said}"
    );
    let said = error(&format!(
        "separator = \"-\"\n{}",
        TWO.replace("notes", "my-notes")
    ));
    assert!(said.contains("holds the separator \"-\""), "{said}");
    // With no prefix, the name is only a name.
    let text = TWO.replace(
        "name = \"notes\"\ncommand = \"x\"\n",
        "name = \"no__prefix\"\ncommand = \"x\"\nnamespace = false\n",
    );
    assert!(parse(&text).is_ok());
    // A name askgate derives never holds it; `--name` may not either.
    assert_eq!(usable_name("My__Server").as_deref(), Some("my_server"));
    let one = with_upstream("").expect("parses");
    let said = one
        .with_upstream_name("a__b")
        .expect_err("refused")
        .to_string();
    assert!(said.contains("holds the separator"), "{said}");
}

//! `#[derive(AskChoice)]`: a fieldless enum as the options of a choice.
//!
//! MCP carries choices as strings, so every variant has a string value
//! (its name in snake case unless `#[ask(value = "...")]`) and a label (its
//! name in words unless `#[ask(label = "...")]`). An enum whose variants
//! carry data or numbers cannot be one, and is refused here.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::token::Comma;
use syn::{Data, DeriveInput, Fields, Ident, LitChar, LitStr, Path, Variant};

use crate::attr::{self, ENUM_KEYS, VARIANT_KEYS};
use crate::emit::{self, Errors};
use crate::words;

/// One variant as an option: the variant, its value and label, and its
/// hotkey as an `Option` expression.
struct Choice<'a> {
    ident: &'a Ident,
    value: String,
    label: String,
    hotkey: TokenStream,
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let (variants, krate) = enum_variants(input)?;
    let mut errors = Errors::default();
    let mut choices: Vec<Choice<'_>> = Vec::new();
    for variant in variants {
        match choice(variant, &choices) {
            Ok(choice) => choices.push(choice),
            Err(error) => errors.push(error),
        }
    }
    errors.finish()?;
    Ok(expand(&input.ident, &krate, &choices))
}

/// The enum's variants, and where its generated code finds askgate-core;
/// an error when it is not a fieldless enum without generic parameters
/// and with one variant at least.
fn enum_variants(input: &DeriveInput) -> syn::Result<(&Punctuated<Variant, Comma>, TokenStream)> {
    let name = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            name.span(),
            "AskChoice is derived for a fieldless enum: each variant is one option of the choice (derive AskForm on a struct)",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "AskChoice is derived for an enum without generic parameters: its options are fixed strings",
        ));
    }
    let mut krate: Option<Path> = None;
    attr::each_key(&input.attrs, |key, meta| match key {
        "crate" => attr::once(&mut krate, key, meta, attr::krate(meta)?),
        _ => Err(attr::unknown(meta, key, "an enum", ENUM_KEYS)),
    })?;
    if data.variants.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "AskChoice needs at least one variant: a choice without options cannot be answered",
        ));
    }
    Ok((&data.variants, emit::krate(krate)))
}

/// One variant as an option, unless it carries data or a number, its
/// attributes are wrong, or its value is blank or taken by an option
/// `before` it.
fn choice<'a>(variant: &'a Variant, before: &[Choice<'_>]) -> syn::Result<Choice<'a>> {
    let ident = &variant.ident;
    if !matches!(variant.fields, Fields::Unit) {
        return Err(syn::Error::new(
            variant.fields.span(),
            format!(
                "variant `{ident}` carries data, and an AskChoice option cannot: MCP choices are plain strings from a fixed set; make `{ident}` a unit variant (or ask for its data in fields of the form)"
            ),
        ));
    }
    if let Some((_, discriminant)) = &variant.discriminant {
        return Err(syn::Error::new(
            discriminant.span(),
            format!(
                "variant `{ident}` has a number value, and an AskChoice option cannot: MCP choices are strings (its schema has no number enums); remove `= {}` and, if that text must be the answer, write `#[ask(value = \"{}\")]`",
                discriminant.to_token_stream(),
                discriminant.to_token_stream(),
            ),
        ));
    }
    let mut label: Option<LitStr> = None;
    let mut value: Option<LitStr> = None;
    let mut hotkey: Option<LitChar> = None;
    attr::each_key(&variant.attrs, |key, meta| match key {
        "label" => attr::once(&mut label, key, meta, attr::string(meta)?),
        "value" => attr::once(&mut value, key, meta, attr::string(meta)?),
        "hotkey" => attr::once(&mut hotkey, key, meta, attr::character(meta)?),
        _ => Err(attr::unknown(meta, key, "a variant", VARIANT_KEYS)),
    })?;
    let rust_name = ident.unraw().to_string();
    let (value, value_span) = match &value {
        Some(value) => (value.value(), value.span()),
        None => (words::snake_case(&rust_name), ident.span()),
    };
    if value.trim().is_empty() {
        return Err(syn::Error::new(
            value_span,
            "an option's value cannot be blank: a blank answer means \"left empty\"",
        ));
    }
    if before.iter().any(|choice| choice.value == value) {
        return Err(syn::Error::new(
            value_span,
            format!("two variants have the value {value:?}; each option's value must be unique"),
        ));
    }
    let label = label
        .as_ref()
        .map_or_else(|| words::sentence(&rust_name), LitStr::value);
    Ok(Choice {
        ident,
        value,
        label,
        hotkey: emit::option(hotkey.as_ref()),
    })
}

/// The `AskChoice` and `AskField` impls of the enum `name`.
fn expand(name: &Ident, krate: &TokenStream, choices: &[Choice<'_>]) -> TokenStream {
    let options = choices.iter().map(
        |Choice {
             value,
             label,
             hotkey,
             ..
         }| {
            quote! {
                #krate::ChoiceOption {
                    value: ::std::string::String::from(#value),
                    label: ::std::string::String::from(#label),
                    hotkey: #hotkey,
                }
            }
        },
    );
    let from_choice = choices.iter().map(
        |Choice { ident, value, .. }| quote!(#value => ::core::option::Option::Some(Self::#ident)),
    );
    let value_of = choices
        .iter()
        .map(|Choice { ident, value, .. }| quote!(Self::#ident => #value));
    quote! {
        impl #krate::AskChoice for #name {
            fn options() -> ::std::vec::Vec<#krate::ChoiceOption> {
                ::std::vec![#(#options),*]
            }

            fn from_choice(value: &str) -> ::core::option::Option<Self> {
                match value {
                    #(#from_choice,)*
                    _ => ::core::option::Option::None,
                }
            }

            fn value(&self) -> &'static str {
                match self {
                    #(#value_of,)*
                }
            }
        }

        impl #krate::AskField for #name {
            type Default = Self;

            fn kind() -> #krate::FieldKind {
                #krate::__private::choice_kind::<Self>()
            }

            fn from_value(
                value: &#krate::Value,
                _zone: #krate::__private::Zone<'_>,
            ) -> ::core::option::Option<Self> {
                #krate::__private::choice_from_value(value)
            }

            fn default_json(default: Self) -> #krate::__private::Json {
                #krate::__private::choice_json(&default)
            }
        }
    }
}

//! The suite's prompts that ask nothing — a simple one, one with two
//! arguments, one embedding a resource, one with an image — and the
//! completions of prompt arguments and template parameters.

use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptRequestParams,
    GetPromptResult, Prompt, PromptArgument, PromptMessage, Reference, ResourceContents, Role,
};

use crate::resource_fixtures;
use crate::tool_fixtures::PNG;

const SIMPLE: &str = "test_simple_prompt";
const WITH_ARGUMENTS: &str = "test_prompt_with_arguments";
const EMBEDDED: &str = "test_prompt_with_embedded_resource";
const IMAGE: &str = "test_prompt_with_image";

/// The prompts of this module.
pub(crate) fn prompts() -> Vec<Prompt> {
    let argument = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(SIMPLE, Some("A prompt without arguments"), None),
        Prompt::new(
            WITH_ARGUMENTS,
            Some("A prompt with two arguments"),
            Some(vec![
                argument("arg1", "First test argument"),
                argument("arg2", "Second test argument"),
            ]),
        ),
        Prompt::new(
            EMBEDDED,
            Some("A prompt that embeds the resource given"),
            Some(vec![argument(
                "resourceUri",
                "URI of the resource to embed",
            )]),
        ),
        Prompt::new(IMAGE, Some("A prompt with an image"), None),
    ]
}

/// Whether `name` is one of this module's prompts.
pub(crate) fn has(name: &str) -> bool {
    [SIMPLE, WITH_ARGUMENTS, EMBEDDED, IMAGE].contains(&name)
}

/// The argument `name` of a prompt request.
fn argument<'a>(params: &'a GetPromptRequestParams, name: &str) -> Result<&'a str, ErrorData> {
    crate::fixture::argument(params.arguments.as_ref(), name).ok_or_else(|| {
        ErrorData::invalid_params(
            format!("prompt {:?} needs a string argument {name:?}", params.name),
            None,
        )
    })
}

/// The prompt `params` names (one of [`has`]).
pub(crate) fn get(params: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    let user = |content: ContentBlock| PromptMessage::new(Role::User, content);
    let messages = match &*params.name {
        SIMPLE => vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )],
        WITH_ARGUMENTS => {
            let (arg1, arg2) = (argument(params, "arg1")?, argument(params, "arg2")?);
            vec![PromptMessage::new_text(
                Role::User,
                format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
            )]
        }
        EMBEDDED => {
            let uri = argument(params, "resourceUri")?;
            vec![
                user(ContentBlock::resource(ResourceContents::text(
                    "Embedded resource content for testing.",
                    uri,
                ))),
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ]
        }
        IMAGE => vec![
            user(ContentBlock::image(PNG, "image/png")),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ],
        other => {
            return Err(crate::fixture::unknown(
                "prompt",
                other,
                "prompts/list names the fixtures",
            ));
        }
    };
    Ok(GetPromptResult::new(messages))
}

/// The completions of a prompt argument or a template parameter: the
/// candidates starting with what the client typed.
pub(crate) fn complete(params: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let typed = &params.argument.value;
    let values = match &params.r#ref {
        Reference::Prompt(prompt) if prompt.name == WITH_ARGUMENTS => {
            let candidates: &[&str] = match &*params.argument.name {
                "arg1" => &["paris", "park", "party", "test", "testing"],
                "arg2" => &["world", "wonder", "test"],
                _ => &[],
            };
            candidates
                .iter()
                .filter(|c| c.starts_with(typed.as_str()))
                .map(|c| (*c).to_owned())
                .collect()
        }
        Reference::Resource(template) => {
            resource_fixtures::complete_id(&template.uri, &params.argument.name, typed)
        }
        _ => Vec::new(),
    };
    let completion = CompletionInfo::with_all_values(values)
        .map_err(|e| ErrorData::internal_error(format!("completion: {e}"), None))?;
    Ok(CompleteResult::new(completion))
}

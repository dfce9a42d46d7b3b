//! A `tools/call`'s parameters as the lane reads them from a client, and
//! as it writes them to an upstream.

use std::borrow::Cow;
use std::fmt;

use askgate_mcp::replay::MARKER_KEY;
use rmcp::model::JsonObject;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A `tools/call`'s parameters: the name and arguments, its `_meta` (of
/// which the lane passes on only the progress token), and whether it
/// carries anything else (`requestState`, `inputResponses`, `task`...:
/// then the call is rmcp's).
///
/// Read by a visitor of its own rather than with `#[serde(flatten)]` for
/// the rest: flatten makes serde buffer every member first (the arguments
/// built twice, each of their strings copied twice), on every call the
/// lane reads. A member named twice is an error, as serde's derive has it.
pub(crate) struct CallParams<'a> {
    /// The tool's name.
    pub(crate) name: Cow<'a, str>,
    /// Its arguments (none when absent or null).
    pub(crate) arguments: Option<JsonObject>,
    /// Its `_meta`: of it, the lane passes on only the progress token
    /// (as one of its own, the upstream's progress routed back).
    pub(crate) meta: Option<CallMeta>,
    /// Whether it has members besides these three.
    pub(crate) others: bool,
}

/// What the lane reads of a call's `_meta`.
#[derive(Deserialize)]
pub(crate) struct CallMeta {
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: Option<rmcp::model::ProgressToken>,
    /// The capabilities the request declares, if it does (a 2026-07-28
    /// request, or a classic one carrying the tasks extension's).
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub(crate) client_capabilities: Option<IgnoredAny>,
    /// The revision the request names for itself, if it does: rmcp checks
    /// it against those the gateway speaks (and, for 2026-07-28, the
    /// request's other metadata), so such a call is rmcp's.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub(crate) protocol_version: Option<IgnoredAny>,
}

/// A member of a call's parameters, by its name.
#[derive(Deserialize)]
#[serde(field_identifier)]
enum Member {
    #[serde(rename = "name")]
    Name,
    #[serde(rename = "arguments")]
    Arguments,
    #[serde(rename = "_meta")]
    Meta,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for CallParams<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(CallParamsVisitor(std::marker::PhantomData))
    }
}

struct CallParamsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for CallParamsVisitor<'a> {
    type Value = CallParams<'a>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a tools/call's params: an object with a name")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallParams<'a>, A::Error> {
        let mut name: Option<Cow<'a, str>> = None;
        let mut arguments: Option<Option<JsonObject>> = None;
        let mut meta: Option<Option<CallMeta>> = None;
        let mut others = false;
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Name => once(&mut name, "name", || {
                    map.next_value::<Borrowed<'a>>().map(|b| b.0)
                })?,
                Member::Arguments => once(&mut arguments, "arguments", || map.next_value())?,
                Member::Meta => once(&mut meta, "_meta", || map.next_value())?,
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                    others = true;
                }
            }
        }
        Ok(CallParams {
            name: name.ok_or_else(|| de::Error::missing_field("name"))?,
            arguments: arguments.flatten(),
            meta: meta.flatten(),
            others,
        })
    }
}

/// Set `slot`, read by `read`, unless it was set already (`member` named
/// twice: an error).
fn once<T, E: de::Error>(
    slot: &mut Option<T>,
    member: &'static str,
    read: impl FnOnce() -> Result<T, E>,
) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(member));
    }
    *slot = Some(read()?);
    Ok(())
}

/// A string, borrowed from the input when it has no escapes.
#[derive(Deserialize)]
struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);

/// A call's parameters as they go upstream.
#[derive(Serialize)]
pub(crate) struct Params<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a JsonObject,
    #[serde(rename = "_meta", skip_serializing_if = "Meta::is_empty")]
    pub(crate) meta: Meta<'a>,
}

/// The `_meta` of a call on the lane: the replay contract's marker (under
/// [`MARKER_KEY`]), and the lane's progress token, when there are any.
/// Written as a JSON object of those it has; left out when it has neither.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Meta<'a> {
    /// The call's marker.
    pub(crate) marker: Option<&'a str>,
    /// The lane's progress token.
    pub(crate) progress_token: Option<&'a str>,
}

impl Meta<'_> {
    fn is_empty(&self) -> bool {
        self.marker.is_none() && self.progress_token.is_none()
    }
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries = [
            (MARKER_KEY, self.marker),
            ("progressToken", self.progress_token),
        ];
        let count = entries.iter().filter(|(_, value)| value.is_some()).count();
        let mut map = serializer.serialize_map(Some(count))?;
        for (key, value) in entries {
            if let Some(value) = value {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::{CallParams, Meta, Params};

    fn read(params: &str) -> Result<CallParams<'_>, serde_json::Error> {
        serde_json::from_str(params)
    }

    #[test]
    fn a_calls_params_are_read_with_whatever_else_it_carries_noticed() {
        let call = read(r#"{"name":"echo","arguments":{"message":"hi"}}"#).expect("params");
        assert_eq!(call.name, "echo");
        assert!(matches!(call.name, std::borrow::Cow::Borrowed(_)));
        let arguments = call.arguments.expect("arguments");
        assert_eq!(arguments["message"], "hi");
        assert!(call.meta.is_none() && !call.others);

        // A retry's requestState, a task: the lane leaves such a call.
        for other in [
            r#"{"name":"echo","requestState":"abc"}"#,
            r#"{"task":{"ttl":5},"name":"echo","arguments":{}}"#,
        ] {
            assert!(read(other).expect("params").others, "{other}");
        }

        // Null arguments are none; a name with escapes is read whole.
        let call = read(r#"{"name":"ec\u0068o","arguments":null,"_meta":{"progressToken":7}}"#)
            .expect("params");
        assert_eq!(call.name, "echo");
        assert!(call.arguments.is_none());
        assert!(call.meta.and_then(|meta| meta.progress_token).is_some());
    }

    #[test]
    fn params_that_do_not_fit_are_refused_naming_what_is_wrong() {
        for (params, expected) in [
            (r#"{"arguments":{}}"#, "missing field `name`"),
            (r#"{"name":"a","name":"b"}"#, "duplicate field `name`"),
            (
                r#"{"name":"a","arguments":{},"arguments":{}}"#,
                "duplicate field `arguments`",
            ),
            (r#"{"name":"a","arguments":[1]}"#, "invalid type"),
            (r#"{"name":7}"#, "invalid type"),
            (r#"["echo"]"#, "invalid type"),
        ] {
            let error = read(params).err().expect(params).to_string();
            assert!(error.contains(expected), "{params}: {error}");
        }
    }

    #[test]
    fn a_calls_meta_upstream_holds_what_it_has() {
        let arguments = serde_json::Map::new();
        let written = |meta: Meta<'_>| {
            serde_json::to_string(&Params {
                name: "echo",
                arguments: &arguments,
                meta,
            })
            .expect("written")
        };
        assert_eq!(
            written(Meta::default()),
            r#"{"name":"echo","arguments":{}}"#
        );
        assert_eq!(
            written(Meta {
                marker: Some("m_1"),
                progress_token: None
            }),
            r#"{"name":"echo","arguments":{},"_meta":{"io.askgate/call":"m_1"}}"#
        );
        assert_eq!(
            written(Meta {
                marker: Some("m_1"),
                progress_token: Some("t")
            }),
            r#"{"name":"echo","arguments":{},"_meta":{"io.askgate/call":"m_1","progressToken":"t"}}"#
        );
    }
}

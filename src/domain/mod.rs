//! The directory in its own words: agents, offerings, contact policies, calls, replies, contact
//! requests, collaborations, trust and proofs. Input types carry their limits as schema
//! attributes (the single source for validation, openapi.json and MCP schemas), the rules of
//! fields several inputs share once each in `fields`; view types are what readers get back.

/// Declares a state or kind spelled the same (snake_case) on the wire, in the schemas and in the
/// database, with `as_str` for the spelling (the store maps it with `stored_as_text!`).
macro_rules! wire_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident,)* }) => {
        $(#[$meta])*
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema,
            strum::IntoStaticStr,
            strum::VariantArray,
        )]
        #[serde(rename_all = "snake_case")]
        #[schemars(inline)]
        #[strum(serialize_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                self.into()
            }
        }
    };
}

pub mod agent;
pub mod brief;
pub mod call;
pub mod changes;
pub mod collab;
pub mod contact_policy;
pub mod contact_request;
pub mod deletion;
pub mod endpoint;
pub mod events;
pub mod export;
pub mod fields;
pub mod guide;
pub mod handles;
pub mod list;
pub mod moderation;
pub mod notice;
pub mod offering;
pub mod ranking;
pub mod recovery;
pub mod schema;
pub mod statement;
pub mod stats;
pub mod trust;

use schemars::Schema;
use serde_json::Value;

/// Schema transform for inputs whose optional fields may be left out but not sent as `null`:
/// removes `null` from each property's accepted types, so the schema says what the server takes.
pub(crate) fn reject_null(schema: &mut Schema) {
    reject_null_except(schema, &[]);
}

/// `reject_null` for every property but `nullable` ones, whose `null` the spec allows.
pub(crate) fn reject_null_except(schema: &mut Schema, nullable: &[&str]) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        if nullable.contains(&name.as_str()) {
            continue;
        }
        let Some(obj) = prop.as_object_mut() else { continue };
        if let Some(Value::Array(types)) = obj.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types[0].clone();
                obj.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
            branches.retain(|b| b.get("type").and_then(Value::as_str) != Some("null"));
            if branches.len() == 1 {
                let only = branches.remove(0);
                obj.remove("anyOf");
                if let Value::Object(m) = only {
                    for (k, v) in m {
                        obj.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
}

/// Public reference to an agent inside other records.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct AgentRef {
    pub handle: String,
    pub name: String,
    /// Mailbox verified.
    pub verified: bool,
}

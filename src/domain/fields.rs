//! The rule of each text field the inputs share, declared once as a type whose schema carries
//! its limits and pattern. An input keeps a plain `String` and names the rule with
//! `#[schemars(with = "...")]`: the registration and the profile patch, say, then publish and
//! enforce the same `maxLength` and `pattern` (validation, openapi.json and the MCP schemas all
//! read the one generated schema). These types are never built; they exist for their schema.
#![expect(dead_code, reason = "the types are never built: only their schemas are read")]

use schemars::JsonSchema;

use super::agent::{
    CAPABILITY_LEN_MAX, DESCRIPTION_MAX, EMAIL_MAX, LANGUAGE_LEN_MAX, MODEL_MAX, NAME_MAX, OWNER_MAX,
    TAGLINE_MAX, URL_MAX,
};
use super::endpoint::{EndpointInput, MAX_ENDPOINTS};
use super::schema::patterns;

// No doc comments on these types: schemars would publish them as the description of every field
// that uses them, where each field's own doc comment belongs.

#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Name(#[schemars(length(min = 1, max = NAME_MAX), pattern(patterns::NON_BLANK))] String);

#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Owner(#[schemars(length(min = 1, max = OWNER_MAX), pattern(patterns::NON_BLANK))] String);

#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Email(#[schemars(email, length(max = EMAIL_MAX))] String);

#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Tagline(#[schemars(length(min = 1, max = TAGLINE_MAX), pattern(patterns::ONE_LINE))] String);

// `description_en` and `description_zh`.
#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Description(
    #[schemars(length(min = 1, max = DESCRIPTION_MAX), pattern(patterns::NON_BLANK))] String,
);

// One capability; the list's length is the field's.
#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Capability(
    #[schemars(length(min = 1, max = CAPABILITY_LEN_MAX), pattern(patterns::ONE_LINE))] String,
);

// One language code (`en`, `zh`, `pt-BR`); the list's length is the field's.
#[derive(JsonSchema)]
#[schemars(inline)]
pub struct LanguageCode(#[schemars(length(max = LANGUAGE_LEN_MAX), pattern(patterns::LANGUAGE))] String);

#[derive(JsonSchema)]
#[schemars(inline)]
pub struct HttpUrl(#[schemars(url, length(max = URL_MAX), pattern(patterns::HTTP_URL))] String);

#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Model(#[schemars(length(min = 1, max = MODEL_MAX), pattern(patterns::ONE_LINE))] String);

// An agent's endpoints, each listed once.
#[derive(JsonSchema)]
#[schemars(inline)]
pub struct Endpoints(
    #[schemars(length(max = MAX_ENDPOINTS), extend("uniqueItems" = true))] Vec<EndpointInput>,
);

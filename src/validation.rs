//! Input validation driven by the JSON Schema of each input type.
//!
//! The limits of every input are declared once, as schemars attributes on the type. The same
//! generated schema is published in openapi.json and in the MCP tool schemas, and it is what this
//! module enforces: a body or query is checked against it before it is deserialised, so the
//! server accepts exactly what the documents promise. Schema errors become `validation_failed`
//! with the field path and a bilingual message. Where a failed keyword alone does not tell the
//! client what it got wrong, the type names the rule next to the keyword (`domain::schema::declared`); the
//! validator never looks at a field's name.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, ValidationError, Validator};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::domain::schema::{declared, patterns};
use crate::error::{Error, Result, Rule};

struct Compiled {
    schema: Value,
    validator: Validator,
}

static COMPILED: LazyLock<RwLock<HashMap<TypeId, Arc<Compiled>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// The settings every schema of the directory is generated with (also used for openapi.json).
pub fn schema_settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with_transform(schemars::transform::RecursiveTransform(plain_integers))
}

/// Integers are published without schemars' `int64`/`uint64` formats: generators read those as
/// big integers (a `BigInt` in TypeScript, which neither `JSON.stringify` nor arithmetic with
/// numbers takes), while every integer the directory sends (a count, a timestamp in
/// milliseconds, a seq) fits a JSON number exactly. Bounds stay in `minimum` and `maximum`.
fn plain_integers(schema: &mut Schema) {
    if schema.get("format").and_then(|f| f.as_str()).is_some_and(|f| f.ends_with("int64")) {
        schema.remove("format");
    }
}

/// The standalone JSON Schema of an input type, `$defs` included.
pub fn schema_of<T: JsonSchema>() -> Schema {
    schema_settings().into_generator().into_root_schema_for::<T>()
}

fn compiled<T: JsonSchema + 'static>() -> Arc<Compiled> {
    let id = TypeId::of::<T>();
    if let Some(c) = COMPILED.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return c.clone();
    }
    let schema = schema_of::<T>().to_value();
    let validator = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        // The schemas are ours and fixed at compile time: a broken one is a bug caught by tests.
        .unwrap_or_else(|e| panic!("schema of {} does not compile: {e}", std::any::type_name::<T>()));
    let c = Arc::new(Compiled { schema, validator });
    COMPILED.write().unwrap_or_else(|e| e.into_inner()).insert(id, c.clone());
    c
}

/// Validates a JSON value against `T`'s schema and deserialises it.
pub fn from_json<T: DeserializeOwned + JsonSchema + 'static>(value: Value) -> Result<T> {
    if !value.is_object() {
        return Err(Error::InvalidJson);
    }
    let c = compiled::<T>();
    if let Some(err) = c.validator.iter_errors(&value).next() {
        return Err(to_error(&c.schema, &err));
    }
    let mut value = value;
    whole_floats_to_integers(&mut value);
    deserialize(value)
}

/// Whether `value` passes `T`'s schema, the check `from_json` makes before deserialising. An
/// object it accepts must deserialise too; the fuzz targets hold `from_json` to that.
pub fn accepts<T: JsonSchema + 'static>(value: &Value) -> bool {
    compiled::<T>().validator.is_valid(value)
}

/// JSON Schema counts `72.0` as an integer, serde's integer types do not. The schema has already
/// accepted the value at this point, so whole floats become integers and an integer field takes
/// everything its schema allows. (No input field is a non-integer number.)
fn whole_floats_to_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(whole_floats_to_integers),
        _ => {}
    }
}

/// Validates a JSON object whose integer and boolean fields may also come as strings (`"20"`,
/// `"true"`), as they do in query strings and from some MCP clients. A string is read as the
/// type its property declares; anything else is left for the schema to judge.
pub fn from_loose_json<T: DeserializeOwned + JsonSchema + 'static>(
    mut object: Map<String, Value>,
) -> Result<T> {
    let c = compiled::<T>();
    if let Some(props) = c.schema.get("properties").and_then(Value::as_object) {
        for (key, value) in object.iter_mut() {
            if let (Value::String(raw), Some(prop)) = (&*value, props.get(key)) {
                *value = coerce(prop, raw);
            }
        }
    }
    from_json(Value::Object(object))
}

/// Validates query pairs against `T`'s schema. Each value is read as the type its parameter
/// declares (integer, boolean, string); parameters `T` does not know are ignored.
pub fn from_query<T: DeserializeOwned + JsonSchema + 'static>(pairs: Vec<(String, String)>) -> Result<T> {
    let c = compiled::<T>();
    let props = c.schema.get("properties").and_then(Value::as_object);
    let mut object = Map::new();
    for (key, raw) in pairs {
        let Some(prop) = props.and_then(|p| p.get(&key)) else {
            continue;
        };
        if object.contains_key(&key) {
            return Err(Error::validation(key, Rule::Pattern));
        }
        let value = coerce(prop, &raw);
        object.insert(key, value);
    }
    from_json(Value::Object(object))
}

fn coerce(prop: &Value, raw: &str) -> Value {
    let declares = |t: &str| match prop.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|v| v == t),
        _ => false,
    };
    if declares("integer") {
        if let Ok(n) = raw.parse::<i64>() {
            return Value::from(n);
        }
        // An integer past i64 is still a number, so it is told the range, as in a JSON body.
        let digits = raw.strip_prefix('-').unwrap_or(raw);
        if !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && let Ok(n) = raw.parse::<f64>()
        {
            return Value::from(n);
        }
    } else if declares("boolean") {
        match raw {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
    }
    Value::String(raw.to_owned())
}

fn deserialize<T: DeserializeOwned>(value: Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        tracing::warn!(error = %e, "input passed its schema but did not deserialise");
        Error::validation(if field == "." { "body".into() } else { field }, Rule::Pattern)
    })
}

fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// The error to report for a failed `anyOf`/`oneOf`: the one from the branch the value was
/// meant for. A branch whose only complaint is the value's type at the alternative's own path
/// (the `null` of an optional field, say) was not meant; if exactly one branch is left, its
/// first error names the offending value by its full path (`contact_policy.weekly_cap`).
fn meant_branch<'e>(
    at: &str,
    branches: &'e [Vec<ValidationError<'static>>],
) -> Option<&'e ValidationError<'static>> {
    let only_type_mismatch = |errors: &[ValidationError<'_>]| {
        errors.iter().all(|e| {
            matches!(e.kind(), ValidationErrorKind::Type { .. })
                && dotted(&e.instance_path().to_string()) == at
        })
    };
    let mut meant = branches.iter().filter(|errors| !errors.is_empty() && !only_type_mismatch(errors));
    match (meant.next(), meant.next()) {
        (Some(errors), None) => errors.first(),
        _ => None,
    }
}

/// The rule the type names for the failed keyword at `schema_path`, if it names one.
fn declared_rule<'s>(schema: &'s Value, schema_path: &str) -> Option<&'s str> {
    let keyword = schema_path.rsplit('/').next()?;
    keyword_parent(schema, schema_path)?.get(declared::KEYWORD)?.get(keyword)?.as_str()
}

fn to_error(schema: &Value, err: &ValidationError<'_>) -> Error {
    let path = dotted(&err.instance_path().to_string());
    let field = |p: &str| if p.is_empty() { "body".to_string() } else { p.to_string() };
    let rule = match (declared_rule(schema, &err.schema_path().to_string()), err.kind()) {
        (Some(declared::TOO_MANY_OFFERINGS), _) => return Error::TooManyOfferings,
        (Some(declared::MUST_ACCEPT_RULES), _) => Rule::MustAcceptRules,
        (Some(declared::ENDPOINT_PORT), _) => Rule::EndpointPort,
        // "One of the two descriptions": the field named is the one the rule asks for.
        (Some(declared::DESCRIPTION_NEEDED), ValidationErrorKind::Required { property }) => {
            return Error::validation(property.as_str().unwrap_or_default(), Rule::DescriptionNeeded);
        }
        (_, ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }) => {
            match meant_branch(&path, context) {
                Some(inner) => return to_error(schema, inner),
                None => Rule::Pattern,
            }
        }
        (_, ValidationErrorKind::Required { property }) => {
            let name = property.as_str().unwrap_or_default();
            let full = if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
            return Error::validation(full, Rule::Required);
        }
        (_, ValidationErrorKind::Type { .. }) if err.instance().is_null() => Rule::NotNull,
        (_, ValidationErrorKind::Type { kind }) => Rule::Type(expected_type(kind)),
        (_, ValidationErrorKind::MaxLength { limit }) => Rule::MaxLength(*limit),
        (_, ValidationErrorKind::MinLength { limit }) => Rule::MinLength(*limit),
        (_, ValidationErrorKind::MaxItems { limit }) => Rule::MaxItems(*limit),
        (_, ValidationErrorKind::Minimum { .. } | ValidationErrorKind::Maximum { .. }) => {
            let node = keyword_parent(schema, &err.schema_path().to_string());
            let bound = |k: &str| node.and_then(|n| n.get(k)).and_then(Value::as_i64);
            Rule::Range { min: bound("minimum"), max: bound("maximum") }
        }
        (_, ValidationErrorKind::Enum { options }) => Rule::OneOf(
            options
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
        ),
        (_, ValidationErrorKind::Pattern { pattern }) => pattern_rule(pattern, err.instance()),
        (_, ValidationErrorKind::Format { format }) => match format.as_str() {
            "email" => Rule::Email,
            "uri" => Rule::HttpUrl,
            "date" => Rule::Date,
            _ => Rule::Pattern,
        },
        // Named by the first item that repeats an earlier one (`endpoints.1`), as a duplicate id is.
        (_, ValidationErrorKind::UniqueItems) => {
            let items = err.instance().as_array().map(Vec::as_slice).unwrap_or_default();
            let repeated = (1..items.len()).find(|&i| items[..i].contains(&items[i]));
            let at = repeated.map_or_else(|| path.clone(), |i| format!("{path}.{i}"));
            return Error::validation(field(&at), Rule::DuplicateId);
        }
        _ => Rule::Pattern,
    };
    Error::validation(field(&path), rule)
}

fn pattern_rule(pattern: &str, instance: &Value) -> Rule {
    match pattern {
        patterns::HANDLE => Rule::Handle,
        patterns::PLAIN | patterns::NON_BLANK | patterns::ONE_LINE | patterns::HTTP_URL
            if instance.as_str().is_some_and(|s| s.chars().any(is_refused_control)) =>
        {
            Rule::ControlCharacter
        }
        patterns::PLAIN => Rule::Pattern,
        patterns::NON_BLANK => Rule::NonBlank,
        patterns::ONE_LINE => {
            let multi_line =
                instance.as_str().is_some_and(|s| s.contains(['\n', '\r', '\u{2028}', '\u{2029}']));
            if multi_line { Rule::OneLine } else { Rule::NonBlank }
        }
        patterns::LANGUAGE => Rule::LanguageCode,
        patterns::HTTP_URL => Rule::HttpUrl,
        patterns::DATE => Rule::Date,
        _ => Rule::Pattern,
    }
}

/// What `patterns::CONTROL` names, for telling the client which rule its text broke.
fn is_refused_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

fn expected_type(kind: &TypeKind) -> &'static str {
    let name = match kind {
        TypeKind::Single(t) => t.to_string(),
        TypeKind::Multiple(set) => {
            set.iter().map(|t| t.to_string()).find(|t| t != "null").unwrap_or_default()
        }
    };
    match name.as_str() {
        "string" => "string",
        "integer" => "integer",
        "boolean" => "boolean",
        "array" => "array",
        "object" => "object",
        "number" => "number",
        _ => "other",
    }
}

/// The schema object holding the keyword at `schema_path`, following `$ref`s into `$defs`, so a
/// range error can state both of its bounds.
fn keyword_parent<'a>(root: &'a Value, schema_path: &str) -> Option<&'a Value> {
    let segments: Vec<&str> = schema_path.trim_start_matches('/').split('/').collect();
    let (_, parents) = segments.split_last()?;
    let mut node = root;
    for seg in parents {
        if *seg == "$ref" {
            let target = node.get("$ref")?.as_str()?.strip_prefix('#')?;
            node = root.pointer(target)?;
        } else {
            let key = seg.replace("~1", "/").replace("~0", "~");
            node = match node {
                Value::Object(m) => m.get(&key)?,
                Value::Array(a) => a.get(key.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
    }
    Some(node)
}

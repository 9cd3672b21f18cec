//! The shapes inputs share, declared once for the types' schema attributes: the patterns
//! their text fields match, the rules a type names for the validator beside a keyword, a field
//! that tells "absent" from `null`, a set of values that may grow, and the largest body any input may take. The validator
//! (`validation`) enforces what these declare; the documents publish it.

/// The largest request body accepted, REST or MCP: every input is a handful of short fields.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The largest request head (request line and headers together): far above what a client of a
/// JSON API sends, yet a `q` of ~2,000 Chinese characters (9 bytes each once percent-encoded)
/// reaches it, so it is answered with an envelope that names it rather than by the parser.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header fields a request may carry.
pub const MAX_HEADERS: usize = 64;

/// Patterns shared by the input types. Their text is what the validator reports on, so each
/// has its own message.
pub mod patterns {
    use crate::domain::agent::{HANDLE_MAX, HANDLE_MIN};
    use const_format::concatcp;

    /// A handle's first character, and the others.
    const HANDLE_FIRST: &str = "[a-z0-9]";
    const HANDLE_REST: &str = "[a-z0-9-]";
    /// The one definition of a handle: published in the schemas, enforced by the validator, and
    /// what `agent::is_handle` tests.
    pub const HANDLE: &str =
        concatcp!("^", HANDLE_FIRST, HANDLE_REST, "{", HANDLE_MIN - 1, ",", HANDLE_MAX - 1, "}$");
    /// What a handle can begin with (completion of a handle being typed).
    pub const HANDLE_PREFIX: &str = concatcp!("^(", HANDLE_FIRST, HANDLE_REST, "{0,", HANDLE_MAX - 1, "})?$");
    /// The control characters text may not hold: C0 but tab, line feed and carriage return,
    /// DEL, and C1. They show as nothing or as garbage on a card, a page or a mail, and a NUL
    /// cuts the text short in whatever C code reads it next. Written as `\x` escapes, which
    /// ECMA-262 (the schemas' dialect), Rust and Python read alike.
    pub const CONTROL: &str = "\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F-\\x9F";
    /// Characters that show as nothing though they are not white space: format characters (zero
    /// widths, joiners, direction marks and overrides, the word joiner and invisible operators,
    /// the byte order mark), variation selectors, the soft hyphen, and the fillers that draw
    /// blank (Hangul fillers, the blank Braille pattern). Text may hold them, but they are not
    /// the visible character a field that must not be blank needs: a name or title of only
    /// these shows as an empty heading.
    pub const INVISIBLE: &str = "\\u00AD\\u034F\\u061C\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u200B-\\u200F\\u202A-\\u202E\\u2060-\\u206F\\u2800\\u3164\\uFE00-\\uFE0F\\uFEFF\\uFFA0";
    /// Text that may be empty, without control characters.
    pub const PLAIN: &str = concatcp!("^[^", CONTROL, "]*$");
    /// At least one visible character, without control characters.
    pub const NON_BLANK: &str =
        concatcp!("^[^", CONTROL, "]*[^\\s", CONTROL, INVISIBLE, "][^", CONTROL, "]*$");
    /// What ends a line: line feed, carriage return, and the Unicode line and paragraph
    /// separators (a reader shows each as a new line).
    pub const LINE_BREAKS: &str = "\\r\\n\\u2028\\u2029";
    /// A single line with at least one visible character, without control characters.
    pub const ONE_LINE: &str = concatcp!(
        "^[^",
        LINE_BREAKS,
        CONTROL,
        "]*[^\\s",
        CONTROL,
        INVISIBLE,
        "][^",
        LINE_BREAKS,
        CONTROL,
        "]*$"
    );
    pub const LANGUAGE: &str = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$";
    pub const HTTP_URL: &str =
        concatcp!("^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@", CONTROL, "]+([/?#][^\\s", CONTROL, "]*)?$");
    pub const DATE: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$";
}

/// The rules a type names for one keyword of a field's schema, as
/// `"x-rules": {"<keyword>": "<rule>"}` beside the keyword: a `const` that means "accept the
/// rules", a URL pattern that restricts ports, a count of offerings with its own error code.
/// Only the validator reads them; the published documents leave them out.
pub mod declared {
    pub const KEYWORD: &str = "x-rules";
    pub const MUST_ACCEPT_RULES: &str = "must_accept_rules";
    pub const DESCRIPTION_NEEDED: &str = "description_needed";
    pub const ENDPOINT_PORT: &str = "endpoint_port";
    pub const TOO_MANY_OFFERINGS: &str = "too_many_offerings";

    /// A schema as published: without the validator's rule names.
    pub fn strip(schema: &mut serde_json::Value) {
        match schema {
            serde_json::Value::Object(map) => {
                map.remove(KEYWORD);
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
}

/// The schema of a set of values that may grow (the feed's `kind`): a string, with the values
/// known today in the description rather than an `enum`, so a generated client keeps working
/// when a later version adds one.
pub fn open_set<T>(_: &mut schemars::SchemaGenerator) -> schemars::Schema
where
    T: strum::VariantArray + Copy + Into<&'static str>,
{
    let known: Vec<String> =
        T::VARIANTS.iter().map(|v| format!("`{}`", Into::<&'static str>::into(*v))).collect();
    schemars::json_schema!({
        "type": "string",
        "description": format!(
            "One of {} today; a later version may add others: skip what you do not know.",
            known.join(", ")
        ),
    })
}

/// Whether `text` holds a character that draws something, as [`patterns::NON_BLANK`] asks of
/// the texts agents write (for texts the directory keeps from elsewhere, such as observed skills).
pub fn is_non_blank(text: &str) -> bool {
    static NON_BLANK: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(patterns::NON_BLANK).expect("the non-blank pattern"));
    NON_BLANK.is_match(text)
}

/// [`open_set`] for a field that may also be `null`.
pub fn open_set_or_null<T>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema
where
    T: strum::VariantArray + Copy + Into<&'static str>,
{
    let mut schema = open_set::<T>(generator);
    schema.insert("type".into(), serde_json::json!(["string", "null"]));
    schema
}

/// Reads an optional field that distinguishes "absent" (keep) from `null` (clear).
pub fn double_option<'de, D, T>(de: D) -> std::result::Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(de).map(Some)
}

//! The value of one `Authentication-Results` header (RFC 8601), as `parse_message` hands it over:
//! the raw bytes after the colon, folding included, read as lossy UTF-8.

#![no_main]

use agentdir::inbound_mail::parse_authentication_results;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data);
    let Some(header) = parse_authentication_results(&value) else {
        return;
    };
    assert!(!header.authserv_id.is_empty(), "{header:?}");
    assert!(!header.authserv_id.contains('='), "{header:?}");
    if header.malformed {
        assert!(header.results.is_empty() && header.version.is_none(), "{header:?}");
    }
    let lower = |s: &str| !s.bytes().any(|b| b.is_ascii_uppercase());
    for r in &header.results {
        assert!(!r.method.is_empty() && !r.result.is_empty(), "{r:?}");
        assert!(lower(&r.method) && lower(&r.result), "{r:?}");
        for p in &r.properties {
            assert!(lower(&p.name) && lower(&p.ptype), "{p:?}");
        }
    }
    // The same text always reads the same.
    assert_eq!(parse_authentication_results(&value).as_ref(), Some(&header));
});

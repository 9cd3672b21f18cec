//! Change-feed cursors (`GET /api/changes?after=`): whatever `Cursor::parse` takes as a cursor of
//! a feed must print back to a cursor that reads the same, and every cursor the server prints
//! must read back as what it printed.

#![no_main]

use agentdir::domain::changes::{CURSOR_MAX, CURSOR_SEQ_DIGITS, Cursor};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The text read as a cursor of the feed its own epoch names, when it names one.
    let named = text.split_once('_').and_then(|(epoch, _)| u64::from_str_radix(epoch, 36).ok());
    if let Some(epoch) = named
        && let Ok(cursor) = Cursor::parse(&text, epoch)
    {
        round_trip(Cursor::issued(cursor.epoch, cursor.seq, cursor.horizon));
    }
    // Any cursor the server can issue: any epoch, a seq of at most the published pattern's
    // digits (a database's seq, counted from 1, stays far below 36^12).
    // The horizon a cursor carries is one of the same database's seqs.
    if let Some(bytes) = data.get(..24) {
        let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        let seqs = 36u64.pow(CURSOR_SEQ_DIGITS as u32);
        let (epoch, seq, horizon) =
            (u64_of(&bytes[..8]), u64_of(&bytes[8..16]) % seqs, u64_of(&bytes[16..]) % seqs);
        round_trip(Cursor::issued(epoch, seq, horizon));
    }
});

fn round_trip(cursor: Cursor) {
    let printed = cursor.to_string();
    assert!(printed.len() <= CURSOR_MAX as usize, "{printed}");
    assert_eq!(Cursor::parse(&printed, cursor.epoch), Ok(cursor), "{printed}");
}

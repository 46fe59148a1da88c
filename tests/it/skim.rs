//! The lean read's skim (`json::skim::root_members`) against simd-json: a
//! line the skim is sure of is one simd-json's tape parse accepts, with
//! the same first member of each key; a line simd-json refuses is one the
//! skim is not sure of. On generated JSON lines, broken at random places.

use ctxasm::json::LineParser;
use ctxasm::json::skim::{Member, root_members_nested};
use ctxasm::json::tape::TapeValue;
use proptest::prelude::*;

const KEYS: [&str; 4] = ["type", "uuid", "sessionId", "a"];
/// The members read of the object at `a`.
const NESTED: [&str; 2] = ["type", "uuid"];

/// The skim's member against the tape's value: the same string, or the
/// same value parsed from the text the skim gives.
fn same(skim: &Member<'_>, tape: Option<TapeValue<'_, '_>>) -> bool {
    match (skim, tape) {
        (Member::Absent, None) => true,
        (Member::Str(s), Some(v)) => v.as_str() == Some(*s),
        (Member::Other(text), Some(v)) => {
            let bump = bumpalo::Bump::new();
            let parsed = LineParser::new().parse(&bump, text).expect("the skim's text of a value parses");
            v.as_str().is_none() && v.equals(&parsed)
        }
        _ => false,
    }
}

/// Checks one line; returns whether the skim was sure of it.
fn agree(line: &[u8]) -> bool {
    let Some((found, inner)) = root_members_nested(line, &KEYS, (3, &NESTED)) else { return false };
    let text = String::from_utf8_lossy(line);
    let ok = LineParser::new().with_tape(line, |root| {
        assert!(root.is_object(), "{text:?}");
        for (k, m) in KEYS.iter().zip(&found) {
            assert!(same(m, root.get(k)), "{k}: {m:?} in {text:?}");
        }
        let a = root.get("a").filter(TapeValue::is_object);
        for (k, m) in NESTED.iter().zip(&inner) {
            assert!(same(m, a.and_then(|a| a.get(k))), "a.{k}: {m:?} in {text:?}");
        }
    });
    assert!(ok.is_some(), "skim sure, simd-json refuses: {text:?}");
    true
}

/// JSON text of a value up to `depth` deep, with spaces, escapes, numbers
/// and literals of every form the skim reads or leaves.
fn value(depth: u32) -> BoxedStrategy<String> {
    let string = prop::collection::vec(
        prop_oneof![
            Just("x".to_string()),
            Just("type".to_string()),
            Just("é€😀".to_string()),
            Just("\\n".to_string()),
            Just("\\\"".to_string()),
            Just("\\\\".to_string()),
            Just("\\/".to_string()),
            Just("\\u00e9".to_string()),
            Just("\\u0000".to_string()),
            Just("\\uD83D\\uDE00".to_string()),
            Just("\\ud800".to_string()),
            Just("\\x".to_string()),
            Just("a".repeat(40)),
        ],
        0..4,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()));
    let number = prop_oneof![
        Just("0"),
        Just("-0"),
        Just("7"),
        Just("-12"),
        Just("1.5"),
        Just("-0.25e+3"),
        Just("1E2"),
        Just("1e-99"),
        Just("123456789012345678"),
        Just("1234567890123456789"),
        Just("18446744073709551616"),
        Just("1e400"),
        Just("0.12345678901234567"),
        Just("01"),
        Just("1."),
    ]
    .prop_map(str::to_string);
    let scalar = prop_oneof![
        string.clone(),
        number,
        Just("true".to_string()),
        Just("false".to_string()),
        Just("null".to_string())
    ];
    if depth == 0 {
        return scalar.boxed();
    }
    let key = prop_oneof![
        Just("\"type\"".to_string()),
        Just("\"uuid\"".to_string()),
        Just("\"sessionId\"".to_string()),
        Just("\"a\"".to_string()),
        Just("\"ty\\u0070e\"".to_string()),
        string,
    ];
    let sp = prop_oneof![Just(""), Just(""), Just(" "), Just("  ")];
    let inner = value(depth - 1);
    prop_oneof![
        2 => scalar,
        1 => prop::collection::vec((sp.clone(), inner.clone()), 0..4)
            .prop_map(|items| format!("[{}]", items.into_iter().map(|(s, v)| format!("{s}{v}{s}")).collect::<Vec<_>>().join(","))),
        2 => prop::collection::vec((sp, key, inner), 0..5).prop_map(|members| {
            let body: Vec<String> = members.into_iter().map(|(s, k, v)| format!("{s}{k}{s}:{s}{v}")).collect();
            format!("{{{}}}", body.join(","))
        }),
    ]
    .boxed()
}

/// A root object line, sometimes broken: a byte replaced, inserted or cut.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let object = prop::collection::vec(
        (
            prop_oneof![Just("\"type\""), Just("\"uuid\""), Just("\"sessionId\""), Just("\"a\""), Just("\"z\"")],
            value(3),
        ),
        0..6,
    )
    .prop_map(|members| {
        let body: Vec<String> = members.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!("{{{}}}", body.join(",")).into_bytes()
    });
    let interesting: &[u8] = b"\"\\{}[],: u0e-.+\t\r\x1f\xff\xc3tfn9";
    (object, prop::option::of((any::<prop::sample::Index>(), 0..3u8, prop::sample::select(interesting.to_vec()))))
        .prop_map(|(mut text, change)| {
            if let Some((at, how, byte)) = change
                && !text.is_empty()
            {
                let i = at.index(text.len());
                match how {
                    0 => text[i] = byte,
                    1 => text.insert(i, byte),
                    _ => text.truncate(i),
                }
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_skim_is_sure_only_of_what_simd_json_accepts(text in line()) {
        agree(&text);
    }
}

/// The lines of the fixtures' transcripts: every one the skim is sure of
/// agrees with simd-json, and it is sure of most.
#[test]
fn the_skim_agrees_with_simd_json_on_the_fixture_transcripts() {
    let mut files = Vec::new();
    for root in ["corpora", "tests/fixtures"] {
        for e in walkdir::WalkDir::new(root).into_iter().filter_map(Result::ok) {
            if e.path().extension().is_some_and(|x| x == "jsonl") {
                files.push(e.into_path());
            }
        }
    }
    let (mut lines, mut sure) = (0, 0);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            lines += 1;
            sure += usize::from(agree(line));
        }
    }
    assert!(lines > 1000, "{lines} lines in {} files", files.len());
    assert!(sure * 10 > lines * 9, "sure of {sure} of {lines} lines");
}

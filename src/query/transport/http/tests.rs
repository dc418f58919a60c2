use super::*;
use crate::query::transport::expected_checksum as expected;
use hyper::StatusCode;

/// `body` read as it arrives in pieces of `piece` bytes.
fn read_in(
    sql: &str,
    status: u16,
    body: &str,
    checksums: bool,
    piece: usize,
) -> Result<Outcome, QueryError> {
    let status = StatusCode::from_u16(status).unwrap();
    let mut r = ExecReader::new(checksums, None);
    r.head(status, &HeaderMap::new());
    for c in body.as_bytes().chunks(piece) {
        r.chunk(c).unwrap();
    }
    outcome("db.http", sql, status, r)
}

/// `body` read whole, and in pieces of every size up to 17 bytes: the same outcome
/// wherever the reads from the socket cut the JSON.
fn read(sql: &str, status: u16, body: &str, checksums: bool) -> Result<Outcome, QueryError> {
    let whole = read_in(sql, status, body, checksums, body.len().max(1));
    for piece in 1..=17 {
        assert_eq!(
            read_in(sql, status, body, checksums, piece),
            whole,
            "{body} in pieces of {piece}"
        );
    }
    whole
}

fn run(status: u16, body: &str) -> Result<Outcome, QueryError> {
    read("SELECT x FROM nope", status, body, false)
}

proptest::proptest! {
    /// Whatever a server sends, in whatever pieces, reading it ends in an outcome.
    #[test]
    fn any_bytes_give_an_outcome_not_a_panic(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        piece in 1usize..40,
        checksums in proptest::prelude::any::<bool>(),
    ) {
        let status = StatusCode::OK;
        let mut r = ExecReader::new(checksums, None);
        r.head(status, &HeaderMap::new());
        for c in body.chunks(piece) {
            r.chunk(c).unwrap();
        }
        let _ = outcome("db.http", "SELECT 1", status, r);
    }

    /// Answers that are nearly right: a valid one cut or with one byte changed.
    #[test]
    fn damaged_answers_give_an_outcome_not_a_panic(
        at in 0usize..200,
        byte in proptest::prelude::any::<u8>(),
        cut in proptest::prelude::any::<bool>(),
        piece in 1usize..20,
    ) {
        let good = br#"{"query":"q","columns":[{"name":"s","type":"VARCHAR"},{"name":"n","type":"LONG"}],"dataset":[["a\"b",1],[null,2],["\u00e9",3]],"count":3}"#;
        let mut body = good.to_vec();
        let at = at % body.len();
        if cut { body.truncate(at) } else { body[at] = byte }
        for checksums in [false, true] {
            let mut r = ExecReader::new(checksums, None);
            r.head(StatusCode::OK, &HeaderMap::new());
            for c in body.chunks(piece) {
                r.chunk(c).unwrap();
            }
            let _ = outcome("db.http", "SELECT 1", StatusCode::OK, r);
        }
    }
}

#[test]
fn rows_are_the_dataset() {
    let ok = r#"{"query":"q","columns":[{"name":"x","type":"LONG"}],
                     "dataset":[[1],[2],[3]],"count":3}"#;
    assert_eq!(
        run(200, ok),
        Ok(Outcome {
            rows: 3,
            checksum: None,
            affected: None,
        })
    );
    assert_eq!(
        run(200, r#"{"columns":[],"dataset":[]}"#),
        Ok(Outcome {
            rows: 0,
            checksum: None,
            affected: None,
        })
    );
    assert_eq!(
        run(200, r#"{"ddl":"OK"}"#),
        Ok(Outcome {
            rows: 0,
            checksum: None,
            affected: None,
        })
    );
    let e = run(200, r#"{"dataset":[[1]],"count":2}"#).unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus);
    assert!(e.message.contains("count"), "{}", e.message);
}

/// QuestDB counts the rows an UPDATE changed in `updated`; an INSERT may say nothing.
#[test]
fn a_dml_answer_carries_the_rows_it_changed() {
    assert_eq!(
        run(200, r#"{"dml":"OK","updated":3}"#),
        Ok(Outcome {
            rows: 0,
            checksum: None,
            affected: Some(3),
        })
    );
    assert_eq!(
        run(200, r#"{"dml":"OK","updated":0}"#).map(|o| o.affected),
        Ok(Some(0))
    );
    assert_eq!(run(200, r#"{"dml":"OK"}"#).map(|o| o.affected), Ok(None));
    let e = run(200, r#"{"dml":"OK","updated":"x"}"#).unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus);
}

#[test]
fn errors_carry_the_status_and_the_servers_text() {
    let e = run(
        400,
        r#"{"query":"SELECT x FROM nope","error":"table does not exist [table=nope]","position":14}"#,
    )
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus);
    assert_eq!(e.code.as_deref(), Some("400"));
    assert!(!e.broken);
    assert!(e.message.contains("table does not exist"), "{}", e.message);
    assert!(
        e.message.contains("at position 14: `nope`"),
        "{}",
        e.message
    );

    let e = run(503, "overloaded, try later\n").unwrap_err();
    assert_eq!(e.code.as_deref(), Some("503"));
    assert!(e.message.contains("overloaded, try later"), "{}", e.message);

    let e = run(200, r#"{"dataset":[[1],[2"#).unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus);
    assert!(e.message.contains("ends before"), "{}", e.message);

    let e = run(200, "<html>hello</html>").unwrap_err();
    assert!(e.message.contains("not the expected JSON"), "{}", e.message);

    let e = run(200, r#"{"something":"else"}"#).unwrap_err();
    assert!(e.message.contains("no `dataset`"), "{}", e.message);
}

fn sums(body: &str) -> Result<Outcome, QueryError> {
    read("SELECT x FROM t", 200, body, true)
}

#[test]
fn checksums_read_values_by_column_type() {
    let body = r#"{"query":"q","columns":[
              {"name":"host","type":"SYMBOL"},{"name":"n","type":"LONG"},
              {"name":"usage","type":"DOUBLE"},{"name":"f","type":"FLOAT"},
              {"name":"ts","type":"TIMESTAMP"},{"name":"d","type":"DATE"},
              {"name":"ok","type":"BOOLEAN"},{"name":"s","type":"DECIMAL(20,2)"}],
            "dataset":[
              ["host_1",42,1.5,1.1,"2016-01-01T00:00:10.500000Z","2016-01-01T00:00:00.000Z",
               true,"12.50"],
              [null,null,null,null,null,null,null,null],
              ["h\u00e9",-1,5,2,"2016-01-01T00:00:00.000000Z","2016-01-02T00:00:00.000Z",
               false,9223372036854775807]],
            "count":3}"#;
    let t0 = 1_451_606_400_000_000;
    let want = expected(&[
        &|h| {
            h.push_text("host_1");
            h.push_i64(42);
            h.push_f64(1.5);
            h.push_f32(1.1);
            h.push_timestamp_us(t0 + 10_500_000);
            h.push_timestamp_us(t0);
            h.push_bool(true);
            h.push_f64(12.5);
        },
        &|h| (0..8).for_each(|_| h.push_null()),
        &|h| {
            h.push_text("hé");
            h.push_i64(-1);
            h.push_i64(5);
            h.push_i64(2);
            h.push_timestamp_us(t0);
            h.push_timestamp_us(t0 + 86_400_000_000);
            h.push_i64(0);
            h.push_i64(i64::MAX);
        },
    ]);
    assert_eq!(
        sums(body),
        Ok(Outcome {
            rows: 3,
            checksum: Some(want),
            affected: None,
        })
    );
    // Without checksums, none.
    assert_eq!(
        run(200, body),
        Ok(Outcome {
            rows: 3,
            checksum: None,
            affected: None,
        })
    );
    // The same rows in another order, with the columns after the dataset.
    let late = r#"{"dataset":[
              ["h\u00e9",-1,5.0,2.0,"2016-01-01T00:00:00Z","2016-01-02T00:00:00.000Z",
               false,9223372036854775807],
              [null,null,null,null,null,null,null,null],
              ["host_1",42,1.5,1.1,"2016-01-01T00:00:10.5Z","2016-01-01T00:00:00.000Z",true,12.5]],
            "columns":[
              {"name":"host","type":"SYMBOL"},{"name":"n","type":"LONG"},
              {"name":"usage","type":"DOUBLE"},{"name":"f","type":"FLOAT"},
              {"name":"ts","type":"TIMESTAMP"},{"name":"d","type":"DATE"},
              {"name":"ok","type":"BOOLEAN"},{"name":"s","type":"DECIMAL"}]}"#;
    assert_eq!(sums(late).map(|o| o.checksum), Ok(Some(want)));
    // One value off: another checksum.
    let off = body.replace("[\"host_1\",42,", "[\"host_1\",43,");
    assert_ne!(sums(&off).map(|o| o.checksum), Ok(Some(want)));
    // Numbers in timestamp columns: microseconds (TIMESTAMP), nanoseconds, milliseconds.
    let numbers = r#"{"columns":[{"name":"a","type":"TIMESTAMP"},
              {"name":"b","type":"TIMESTAMP_NS"},{"name":"c","type":"date"}],
            "dataset":[[1451606400000000,1451606400000000999,1451606400000]]}"#;
    assert_eq!(
        sums(numbers).map(|o| o.checksum),
        Ok(Some(expected(&[
            &|h| (0..3).for_each(|_| h.push_timestamp_us(t0))
        ])))
    );
    // No rows, and statements: checksum 0.
    assert_eq!(
        sums(r#"{"columns":[{"name":"x","type":"LONG"}],"dataset":[],"count":0}"#),
        Ok(Outcome {
            rows: 0,
            checksum: Some(0),
            affected: None,
        })
    );
    assert_eq!(
        sums(r#"{"ddl":"OK"}"#),
        Ok(Outcome {
            rows: 0,
            checksum: Some(0),
            affected: None,
        })
    );
}

#[test]
fn values_that_cannot_be_read_are_client_errors() {
    let cols = r#""columns":[{"name":"n","type":"LONG"},{"name":"ts","type":"TIMESTAMP"}]"#;
    for (dataset, says) in [
        (r#"[[1]]"#, "1 value(s) but the answer has 2"),
        (
            r#"[[1,"2016-01-01T00:00:00Z",3]]"#,
            "3 value(s) but the answer has 2",
        ),
        (r#"[[1,"yesterday"]]"#, "column `ts` (TIMESTAMP)"),
        (r#"[["one","2016-01-01T00:00:00Z"]]"#, "column `n` (LONG)"),
        (r#"[[[1],"2016-01-01T00:00:00Z"]]"#, "JSON array"),
        (r#"[{"n":1}]"#, "not a JSON array"),
    ] {
        for body in [
            format!("{{{cols},\"dataset\":{dataset}}}"),
            format!("{{\"dataset\":{dataset},{cols}}}"),
        ] {
            let e = sums(&body).unwrap_err();
            assert_eq!(e.class, QueryErrorClass::Client, "{body}: {e}");
            assert!(e.message.contains("checksum"), "{body}: {e}");
            assert!(e.message.contains(says), "{body}: {e}");
            assert!(!e.broken);
        }
    }
    let e = sums(r#"{"dataset":[[1]]}"#).unwrap_err();
    assert!(e.message.contains("no `columns`"), "{e}");
    // Errors of the server are still the server's.
    let e = read(
        "SELECT x FROM nope",
        400,
        r#"{"error":"table does not exist","position":14}"#,
        true,
    )
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus);
    assert!(e.message.contains("table does not exist"), "{e}");
    // A null count is no count.
    assert_eq!(
        run(200, r#"{"dataset":[[1]],"count":null}"#).map(|o| o.rows),
        Ok(1)
    );
    let e = run(200, r#"{"dataset":[[1]]} trailing"#).unwrap_err();
    assert!(e.message.contains("not the expected JSON"), "{e}");
}

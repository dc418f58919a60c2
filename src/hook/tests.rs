use std::collections::BTreeSet;
use std::time::Duration;

use hyper::Method;
use rhai::Dynamic;

use super::*;
use crate::value::Text;

fn spec(worker: u64, workers: u64) -> WorkerSpec {
    WorkerSpec {
        seed: 42,
        hook: "pull".to_string(),
        worker,
        workers,
        params: vec![
            ("table".to_string(), Value::Str(Text::lit("orders"))),
            ("keys".to_string(), Value::Int(5)),
            ("ratio".to_string(), Value::Float(0.25)),
            ("on".to_string(), Value::Bool(true)),
            ("window".to_string(), Value::Duration(1_500_000_000)),
            ("rate".to_string(), Value::Rate(5000.0)),
            (
                "hosts".to_string(),
                Value::List(vec![Value::Str(Text::lit("a")), Value::Int(2)]),
            ),
            (
                "opts".to_string(),
                Value::Map(vec![("k".to_string(), Value::Symbol("qwp".to_string()))]),
            ),
        ],
    }
}

fn script(src: &str) -> Script {
    Script::compile("t.rhai", src).unwrap_or_else(|e| panic!("{e}"))
}

fn worker(src: &str) -> HookWorker {
    script(src)
        .worker(spec(0, 1))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn http(w: &mut HookWorker) -> HttpRequest {
    match w.request("request", 0, Duration::ZERO) {
        Ok(Built::Http(h)) => h,
        other => panic!("{other:?}"),
    }
}

/// The error of request #0, which must fail.
fn request_error(src: &str) -> String {
    match worker(src).request("request", 0, Duration::ZERO) {
        Err(e) => e.message,
        Ok(b) => panic!("expected an error, built {b:?}"),
    }
}

/// `f(ctx)` evaluated as for request `index`: the same re-keying as `request`.
fn eval_at(w: &mut HookWorker, index: u64) -> Result<Dynamic, HookError> {
    w.begin(index, Duration::ZERO);
    let ctx = w.ctx();
    w.call("f", 1, MAX_CALL_TIME, (ctx,))
}

/// `expr` evaluated for requests 0..n (a fresh RNG each).
fn draws(expr: &str, n: u64) -> Vec<Dynamic> {
    let mut w = worker(&format!("fn f(ctx) {{ {expr} }}"));
    (0..n)
        .map(|i| eval_at(&mut w, i).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn draw_error(expr: &str) -> String {
    let mut w = worker(&format!("fn f(ctx) {{ {expr} }}"));
    match eval_at(&mut w, 0) {
        Err(e) => e.message,
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

#[test]
fn http_request_defaults() {
    let mut w = worker(r#"fn request(ctx) { #{ path: "/query?k=1" } }"#);
    let h = http(&mut w);
    assert_eq!(h.method, Method::GET);
    assert_eq!(h.path, "/query?k=1");
    assert!(h.headers.is_empty());
    assert!(h.body.is_empty());
    // A bare string is a GET path.
    let mut w = worker(r#"fn request(ctx) { "/status" }"#);
    let h = http(&mut w);
    assert_eq!((h.method, h.path.as_str()), (Method::GET, "/status"));
}

#[test]
fn headers_that_change_between_calls_are_parsed_again() {
    // The worker keeps the headers it parsed last: a call whose headers differ (a value, a
    // name, one more, a number) must not be sent with the previous call's.
    let mut w = worker(
        r#"fn request(ctx) {
            let h = switch ctx.index % 5 {
                0 => #{ "X-A": "1" },
                1 => #{ "X-A": "2" },
                2 => #{ "X-B": "2" },
                3 => #{ "X-B": "2", "X-C": "3" },
                _ => #{ "X-B": 4 },
            };
            #{ path: "/", headers: h }
        }"#,
    );
    let want = [
        vec![("x-a", "1")],
        vec![("x-a", "2")],
        vec![("x-b", "2")],
        vec![("x-b", "2"), ("x-c", "3")],
        vec![("x-b", "4")],
    ];
    for round in 0..3u64 {
        for (i, want) in want.iter().enumerate() {
            let index = round * 5 + i as u64;
            let h = match w.request("request", index, Duration::ZERO) {
                Ok(Built::Http(h)) => h,
                other => panic!("{other:?}"),
            };
            let got: Vec<(&str, &str)> = h
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
                .collect();
            assert_eq!(&got, want, "request {index}");
        }
    }
    // The same headers twice in a row: the same parse, shared.
    let mut w = worker(r#"fn request(ctx) { #{ path: "/", headers: #{ "X-A": "1" } } }"#);
    let (a, b) = (http(&mut w), http(&mut w));
    assert!(Arc::ptr_eq(&a.headers, &b.headers));
    assert_eq!(b.headers["x-a"], "1");
}

#[test]
fn http_request_full() {
    let mut w = worker(
        r#"fn request(ctx) {
            #{
                method: "post",
                path: "/query",
                headers: #{ "Content-Type": "application/vnd.ksql.v1+json", "X-Try": 3, "X-Ratio": 0.5 },
                body: `{"ksql": "SELECT * FROM t WHERE k = '${ctx.rng.int(0, 99999)}';"}`,
            }
        }"#,
    );
    let h = http(&mut w);
    assert_eq!(h.method, Method::POST);
    assert_eq!(h.headers["content-type"], "application/vnd.ksql.v1+json");
    assert_eq!(h.headers["x-try"], "3");
    assert_eq!(h.headers["x-ratio"], "0.5");
    let body = std::str::from_utf8(&h.body).unwrap();
    assert!(
        body.starts_with(r#"{"ksql": "SELECT * FROM t WHERE k = '"#),
        "{body}"
    );
    // Any token is a method.
    let mut w = worker(r#"fn request(ctx) { #{ method: "purge", path: "/" } }"#);
    assert_eq!(http(&mut w).method.as_str(), "PURGE");
}

#[test]
fn http_bodies() {
    let mut w = worker(
        r#"fn request(ctx) { #{ path: "/", body: #{ b: [1, 2.5, true, (), "q\"\n\u0001"], a: #{} } } }"#,
    );
    let h = http(&mut w);
    assert_eq!(
        std::str::from_utf8(&h.body).unwrap(),
        r#"{"a":{},"b":[1,2.5,true,null,"q\"\n\u0001"]}"#
    );
    assert_eq!(h.headers["content-type"], "application/json");
    // An explicit content type stays.
    let mut w = worker(
        r#"fn request(ctx) { #{ path: "/", headers: #{"content-type": "text/x"}, body: [1] } }"#,
    );
    let h = http(&mut w);
    assert_eq!(&h.body[..], b"[1]");
    assert_eq!(h.headers["content-type"], "text/x");
    let mut w = worker(r#"fn request(ctx) { let b = blob(3, 65); #{ path: "/", body: b } }"#);
    assert_eq!(&http(&mut w).body[..], b"AAA");
    let mut w = worker(r#"fn request(ctx) { #{ path: "/", body: () } }"#);
    assert!(http(&mut w).body.is_empty());
}

#[test]
fn sql_request() {
    let mut w = worker(
        r#"fn request(ctx) { #{ sql: "SELECT $1, $2, $3, $4, $5", binds: [7, 2.5, true, "x", ()] } }"#,
    );
    match w.request("request", 0, Duration::ZERO).unwrap() {
        Built::Sql { sql, binds } => {
            assert_eq!(sql, "SELECT $1, $2, $3, $4, $5");
            assert_eq!(
                binds,
                vec![
                    BindValue::Int(7),
                    BindValue::Float(2.5),
                    BindValue::Bool(true),
                    BindValue::Text("x".into()),
                    BindValue::Null
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    let mut w = worker(r#"fn request(ctx) { #{ sql: "SELECT 1" } }"#);
    match w.request("request", 0, Duration::ZERO).unwrap() {
        Built::Sql { binds, .. } => assert!(binds.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn request_errors_say_what_was_expected() {
    let cases = [
        (
            "42",
            "hook `t.rhai`, request(): request() must return a map #{method, path, headers, body} or #{sql, binds}; it returned an integer",
        ),
        ("#{ method: \"GET\" }", "request() returned a map without `path`"),
        ("#{ path: 3 }", "returned `path` as an integer; it must be a string starting with `/`"),
        ("#{ path: \"query\" }", "the path \"query\"; it must start with `/`"),
        ("\"query\"", "the path \"query\"; it must start with `/`"),
        ("#{ path: \"/a b\" }", "is not a valid URL path"),
        ("#{ path: \"/\", method: \"G T\" }", "the invalid HTTP method \"G T\""),
        ("#{ path: \"/\", method: 1 }", "returned `method` as an integer"),
        ("#{ path: \"/\", headers: #{ \"a b\": \"x\" } }", "the invalid header name \"a b\""),
        ("#{ path: \"/\", headers: #{ \"x-a\": \"1\\n2\" } }", "header `x-a` with a value that is not a valid header value"),
        ("#{ path: \"/\", headers: #{ \"x-a\": [1] } }", "header `x-a` as an array"),
        ("#{ path: \"/\", headers: [1] }", "returned `headers` as an array; it must be a map"),
        ("#{ path: \"/\", body: 1 }", "returned `body` as an integer"),
        ("#{ path: \"/\", body: #{ x: 1.0 / 0.0 } }", "`body` holds the number inf, which has no JSON form"),
        ("#{ path: \"/\", body: [ctx] }", "`body` holds the ctx object, which has no JSON form"),
        ("#{ path: \"/\", header: #{} }", "returned the key `header`; an HTTP request map has"),
        ("#{ sql: 1 }", "returned `sql` as an integer; it must be a string"),
        ("#{ sql: \"x\", binds: 1 }", "returned `binds` as an integer; it must be an array"),
        ("#{ sql: \"x\", binds: [1, #{}] }", "returned binds[1] as a map; a bind is"),
        ("#{ sql: \"x\", path: \"/\" }", "a SQL map with the key `path`"),
    ];
    for (ret, want) in cases {
        let got = request_error(&format!("fn request(ctx) {{ {ret} }}"));
        assert!(got.contains(want), "{ret}: {got}");
        assert!(got.starts_with("hook `t.rhai`, request(): "), "{got}");
    }
}

#[test]
fn missing_function() {
    let mut w = worker("fn request(ctx) { \"/\" }");
    let e = w.request("other", 0, Duration::ZERO).unwrap_err();
    assert_eq!(
        e.message,
        "hook `t.rhai`, other(): the script defines no function `other` with 1 parameter"
    );
    assert!(!w.has_response());
    assert_eq!(
        w.response(&resp(200, b"")).unwrap(),
        Verdict::Ok,
        "no response() accepts"
    );
}

#[test]
fn ctx_fields_and_params() {
    let s = script(
        r#"fn f(ctx) {
            let p = ctx.params;
            [ctx.worker, ctx.workers, ctx.index, ctx.offset_us, ctx.offset,
             p.table, p.keys, p.ratio, p.on, p.window, p.rate, p.hosts, p.opts.k, type_of(ctx), type_of(ctx.rng)]
        }"#,
    );
    let mut w = s.worker(spec(3, 8)).unwrap();
    w.begin(17, Duration::from_micros(2_500_000));
    let ctx = w.ctx();
    let got = w.call("f", 1, MAX_CALL_TIME, (ctx,)).unwrap();
    assert_eq!(
        got.to_string(),
        r#"[3, 8, 17, 2500000, 2.5, "orders", 5, 0.25, true, 1500000000, "5000/s", ["a", 2], "qwp", "Ctx", "Rng"]"#
    );
    // A script cannot change the params later calls see.
    let mut w = worker(
        r#"fn f(ctx) { let p = ctx.params; p.keys = 9; ctx.params.keys += 1; ctx.params.keys }"#,
    );
    assert_eq!(eval_at(&mut w, 0).unwrap().as_int().unwrap(), 5);
    assert_eq!(eval_at(&mut w, 1).unwrap().as_int().unwrap(), 5);
}

#[test]
fn same_seed_hook_and_index_give_the_same_request_whatever_the_worker() {
    let src = r#"fn request(ctx) {
        #{ path: `/k/${ctx.rng.int(0, 1000000)}/${ctx.rng.float()}/${ctx.rng.uuid()}/${ctx.rng.zipf(100, 1.1)}` }
    }"#;
    let s = script(src);
    let mut a = s.worker(spec(0, 1)).unwrap();
    let mut b = s.worker(spec(5, 8)).unwrap();
    let forward: Vec<String> = (0..50)
        .map(|i| match a.request("request", i, Duration::ZERO).unwrap() {
            Built::Http(h) => h.path,
            _ => unreachable!(),
        })
        .collect();
    // Worker b sends them in another order, after other requests.
    let _ = b.request("request", 1000, Duration::ZERO).unwrap();
    for i in (0..50).rev() {
        match b.request("request", i, Duration::from_secs(1)).unwrap() {
            Built::Http(h) => assert_eq!(h.path, forward[i as usize], "index {i}"),
            _ => unreachable!(),
        }
    }
    let distinct: BTreeSet<&String> = forward.iter().collect();
    assert_eq!(
        distinct.len(),
        forward.len(),
        "each index draws differently"
    );
    // Another seed or another hook name draws differently.
    let mut other_seed = spec(0, 1);
    other_seed.seed = 43;
    let mut other_hook = spec(0, 1);
    other_hook.hook = "push".to_string();
    for sp in [other_seed, other_hook] {
        let mut w = s.worker(sp).unwrap();
        match w.request("request", 0, Duration::ZERO).unwrap() {
            Built::Http(h) => assert_ne!(h.path, forward[0]),
            _ => unreachable!(),
        }
    }
}

#[test]
fn init_draws_per_worker_and_its_return_value_is_the_state() {
    let s = script(
        r#"
        fn init(ctx) { #{ n: 0, first: ctx.rng.int(0, 1000000000), w: ctx.worker } }
        fn request(ctx) { ctx.state.n += 1; `/${ctx.state.w}/${ctx.state.first}/${ctx.state.n}` }
        "#,
    );
    let path = |w: &mut HookWorker, i| match w.request("request", i, Duration::ZERO).unwrap() {
        Built::Http(h) => h.path,
        _ => unreachable!(),
    };
    let mut a = s.worker(spec(0, 2)).unwrap();
    let mut b = s.worker(spec(1, 2)).unwrap();
    let a1 = path(&mut a, 0);
    let a2 = path(&mut a, 1);
    let a3 = path(&mut a, 2);
    let b1 = path(&mut b, 3);
    assert!(
        a1.ends_with("/1") && a2.ends_with("/2") && a3.ends_with("/3"),
        "{a1} {a2} {a3}"
    );
    assert!(b1.starts_with("/1/") && b1.ends_with("/1"), "{b1}");
    let first = |p: &str| p.split('/').nth(2).unwrap().to_string();
    assert_ne!(first(&a1), first(&b1), "workers' init draws differ");
    // The same worker of another run draws the same at init.
    let mut a_again = s.worker(spec(0, 5)).unwrap();
    assert_eq!(first(&path(&mut a_again, 9)), first(&a1));
    // Without init the state is ().
    let mut w = worker(r#"fn f(ctx) { type_of(ctx.state) }"#);
    assert_eq!(eval_at(&mut w, 0).unwrap().to_string(), "()");
}

#[test]
fn state_kept_in_an_array() {
    let mut w = worker(
        r#"
        fn init(ctx) { #{ seen: [] } }
        fn f(ctx) { ctx.state.seen.push(ctx.index); ctx.state.seen[ctx.state.seen.len() - 1] = -1; ctx.state.seen }
        "#,
    );
    assert_eq!(eval_at(&mut w, 7).unwrap().to_string(), "[-1]");
    assert_eq!(eval_at(&mut w, 8).unwrap().to_string(), "[-1, -1]");
    // A local copy is a copy: `let s = ctx.state` does not share.
    let mut w = worker(
        r#"
        fn init(ctx) { #{ n: 0 } }
        fn f(ctx) { let s = ctx.state; s.n += 1; ctx.state.n }
        "#,
    );
    assert_eq!(eval_at(&mut w, 0).unwrap().as_int().unwrap(), 0);
}

#[test]
fn state_can_be_replaced_whole() {
    let mut w = worker(
        r#"
        fn f(ctx) {
            if ctx.index == 0 { ctx.state = 1; } else { ctx.state = ctx.state * 10 + ctx.index; }
            ctx.state
        }
        "#,
    );
    assert_eq!(eval_at(&mut w, 0).unwrap().as_int().unwrap(), 1);
    assert_eq!(eval_at(&mut w, 2).unwrap().as_int().unwrap(), 12);
    assert_eq!(eval_at(&mut w, 3).unwrap().as_int().unwrap(), 123);
    // A modified copy, assigned back, replaces the state.
    let mut w = worker(
        r#"
        fn init(ctx) { #{ n: 1, tags: ["a"] } }
        fn f(ctx) {
            let s = ctx.state;
            s.n += 1;
            ctx.state = s;
            ctx.state.tags.push("b");
            ctx.state.tags[0] = "z";
            `${ctx.state.n} ${ctx.state.tags}`
        }
        "#,
    );
    assert_eq!(eval_at(&mut w, 0).unwrap().to_string(), r#"2 ["z", "b"]"#);
    assert_eq!(
        eval_at(&mut w, 0).unwrap().to_string(),
        r#"3 ["z", "b", "b"]"#
    );
}

#[test]
fn rng_int_covers_its_inclusive_bounds() {
    let seen: BTreeSet<i64> = draws("ctx.rng.int(1, 3)", 300)
        .iter()
        .map(|d| d.as_int().unwrap())
        .collect();
    assert_eq!(seen, BTreeSet::from([1, 2, 3]));
    assert!(draws("ctx.rng.int(5, 5)", 5)
        .iter()
        .all(|d| d.as_int().unwrap() == 5));
    let neg: BTreeSet<i64> = draws("ctx.rng.int(-2, -1)", 100)
        .iter()
        .map(|d| d.as_int().unwrap())
        .collect();
    assert_eq!(neg, BTreeSet::from([-2, -1]));
    // The whole range does not overflow.
    let _ = draws(
        "ctx.rng.int(-9223372036854775807 - 1, 9223372036854775807)",
        10,
    );
    assert!(draw_error("ctx.rng.int(3, 1)").contains("rng.int(3, 1): lo is greater than hi"));
}

#[test]
fn rng_floats_bools_normals() {
    for d in draws("ctx.rng.float()", 200) {
        assert!((0.0..1.0).contains(&d.as_float().unwrap()));
    }
    for d in draws("ctx.rng.float(2, 3.5)", 200) {
        assert!((2.0..3.5).contains(&d.as_float().unwrap()));
    }
    assert!(draws("ctx.rng.bool(0)", 100)
        .iter()
        .all(|d| !d.as_bool().unwrap()));
    assert!(draws("ctx.rng.bool(1.0)", 100)
        .iter()
        .all(|d| d.as_bool().unwrap()));
    let trues = draws("ctx.rng.bool()", 1000)
        .iter()
        .filter(|d| d.as_bool().unwrap())
        .count();
    assert!((400..600).contains(&trues), "{trues}");
    let n = draws("ctx.rng.normal(10, 2)", 2000);
    let mean = n.iter().map(|d| d.as_float().unwrap()).sum::<f64>() / 2000.0;
    assert!((mean - 10.0).abs() < 0.3, "{mean}");
    assert!(draw_error("ctx.rng.float(3, 1)").contains("lo <= hi"));
    assert!(draw_error("ctx.rng.bool(2)").contains("p must be in [0, 1]"));
    assert!(draw_error("ctx.rng.normal(0, -1)").contains("stddev >= 0"));
    assert!(draw_error(r#"ctx.rng.float("a", 1)"#)
        .contains("rng.float: lo must be a number, not a string"));
}

#[test]
fn rng_pick_and_weighted() {
    let seen: BTreeSet<String> = draws(r#"ctx.rng.pick(["a", "b", "c"])"#, 200)
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(seen.len(), 3);
    let seen: BTreeSet<String> = draws(r#"ctx.rng.weighted(["a", "b", "c"], [1, 0, 3.0])"#, 500)
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(seen, BTreeSet::from(["a".to_string(), "c".to_string()]));
    assert!(
        draws(r#"ctx.rng.weighted(["a", "b", "c"], [0, 2, 0])"#, 100)
            .iter()
            .all(|d| d.to_string() == "b")
    );
    assert!(draw_error("ctx.rng.pick([])").contains("rng.pick: the array is empty"));
    assert!(draw_error("ctx.rng.weighted([1, 2], [1])").contains("2 items but 1 weights"));
    assert!(draw_error("ctx.rng.weighted([1, 2], [0, 0])").contains("the weights are all 0"));
    assert!(draw_error("ctx.rng.weighted([1, 2], [1, -1])").contains("weights[1] is -1"));
    assert!(draw_error("ctx.rng.weighted([], [])").contains("empty"));
    assert!(draw_error(r#"ctx.rng.weighted([1], ["x"])"#).contains("weights[0] must be a number"));
}

#[test]
fn rng_zipf_and_uuid() {
    let ranks: Vec<i64> = draws("ctx.rng.zipf(10, 1.2)", 2000)
        .iter()
        .map(|d| d.as_int().unwrap())
        .collect();
    assert!(ranks.iter().all(|r| (1..=10).contains(r)));
    let ones = ranks.iter().filter(|&&r| r == 1).count();
    let tens = ranks.iter().filter(|&&r| r == 10).count();
    assert!(ones > 4 * tens, "{ones} {tens}");
    // Alternating parameters rebuild the cached sampler.
    for d in draws(
        "[ctx.rng.zipf(3, 1), ctx.rng.zipf(1000, 2), ctx.rng.zipf(3, 1)]",
        50,
    ) {
        let a = d.into_array().unwrap();
        assert!((1..=3).contains(&a[0].as_int().unwrap()));
        assert!((1..=1000).contains(&a[1].as_int().unwrap()));
        assert!((1..=3).contains(&a[2].as_int().unwrap()));
    }
    assert!(draw_error("ctx.rng.zipf(0, 1)").contains("n must be at least 1"));
    assert!(draw_error("ctx.rng.zipf(5, 0)").contains("s must be a number above 0"));

    let ids: Vec<String> = draws("ctx.rng.uuid()", 300)
        .iter()
        .map(|d| d.to_string())
        .collect();
    let mut variants = BTreeSet::new();
    for id in &ids {
        let b = id.as_bytes();
        assert_eq!(b.len(), 36, "{id}");
        for (i, &c) in b.iter().enumerate() {
            if [8, 13, 18, 23].contains(&i) {
                assert_eq!(c, b'-', "{id}");
            } else {
                assert!(c.is_ascii_digit() || (b'a'..=b'f').contains(&c), "{id}");
            }
        }
        assert_eq!(b[14], b'4', "version 4: {id}");
        assert!(b"89ab".contains(&b[19]), "variant: {id}");
        variants.insert(b[19]);
    }
    assert_eq!(variants.len(), 4);
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
    assert_eq!(
        crate::gen::uuid_v4(0, 0),
        "00000000-0000-4000-8000-000000000000"
    );
    assert_eq!(
        crate::gen::uuid_v4(u64::MAX, u64::MAX),
        "ffffffff-ffff-4fff-bfff-ffffffffffff"
    );
    assert_eq!(
        crate::gen::uuid_v4(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210),
        "01234567-89ab-4def-bedc-ba9876543210"
    );
}

#[test]
fn the_rng_of_request_i_is_the_documented_site() {
    // docs/scripting.md: request i draws from Rng::new(seed, fnv1a64("hook:<name>:request"), 0, i);
    // init of worker w from Rng::new(seed, fnv1a64("hook:<name>:init"), 0, w).
    use crate::gen::rng::Rng;
    use crate::gen::route::fnv1a64;
    let stream = fnv1a64(b"hook:pull:request");
    for (i, d) in draws("[ctx.rng.uuid(), ctx.rng.int(10, 19)]", 20)
        .into_iter()
        .enumerate()
    {
        let mut r = Rng::new(42, stream, 0, i as u64);
        let a = r.next_u64();
        let want = crate::gen::uuid_v4(a, r.next_u64());
        let n = 10 + r.below(10) as i64;
        assert_eq!(d.to_string(), format!("[\"{want}\", {n}]"));
    }
    let s = script("fn init(ctx) { ctx.rng.float() } fn f(ctx) { ctx.state }");
    let mut w = s.worker(spec(3, 4)).unwrap();
    let want = Rng::new(42, fnv1a64(b"hook:pull:init"), 0, 3).f64();
    assert_eq!(eval_at(&mut w, 0).unwrap().as_float().unwrap(), want);
}

#[test]
fn the_ksql_pull_workload_hook_runs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/ksql-pull.rhai");
    let src = std::fs::read_to_string(path).unwrap();
    let s = Script::compile("ksql-pull.rhai", &src).unwrap_or_else(|e| panic!("{e}"));
    let mut sp = spec(0, 1);
    sp.params.push(("orders".to_string(), Value::Int(1000)));
    let mut w = s.worker(sp).unwrap();
    match w.request("request", 7, Duration::from_millis(3)).unwrap() {
        Built::Http(h) => {
            assert_eq!((h.method, h.path.as_str()), (Method::POST, "/query"));
            let body: serde_json::Value = serde_json::from_slice(&h.body).unwrap();
            assert!(body["ksql"].as_str().unwrap().contains("WHERE ORDERID = "));
        }
        other => panic!("{other:?}"),
    }
    let ok =
        br#"[{"header":{"queryId":"q","schema":"`ORDERID` INTEGER"}},{"row":{"columns":[1]}}]"#;
    assert_eq!(w.response(&resp(200, ok)).unwrap(), Verdict::Ok);
    let bad = br#"[{"header":{}},{"errorMessage":{"message":"boom"}}]"#;
    assert!(matches!(
        w.response(&resp(200, bad)).unwrap(),
        Verdict::Error(_)
    ));
}

#[test]
fn counters_add_up() {
    let mut w = worker(
        r#"
        fn request(ctx) { ctx.count("requests"); ctx.count("keys", 5); "/" }
        fn response(ctx, resp) { ctx.count("status_" + resp.status); }
        "#,
    );
    for i in 0..3 {
        w.request("request", i, Duration::ZERO).unwrap();
        w.response(&resp(200 + i as u16 % 2, b"")).unwrap();
    }
    let c = w.counters();
    assert_eq!(
        c.into_iter().collect::<Vec<_>>(),
        vec![
            ("keys".to_string(), 15),
            ("requests".to_string(), 3),
            ("status_200".to_string(), 2),
            ("status_201".to_string(), 1),
        ]
    );
}

fn resp(status: u16, body: &[u8]) -> ResponseView<'_> {
    ResponseView {
        status,
        headers: None,
        body,
        rows: 0,
        latency: Duration::from_micros(1234),
    }
}

#[test]
fn response_verdicts() {
    let cases: [(&str, Result<Verdict, &str>); 10] = [
        ("()", Ok(Verdict::Ok)),
        ("true", Ok(Verdict::Ok)),
        ("false", Ok(Verdict::Error(convert::REJECTED.into()))),
        ("\"no rows\"", Ok(Verdict::Error("no rows".into()))),
        ("#{ ok: true, error: \"ignored\" }", Ok(Verdict::Ok)),
        ("#{ ok: false, error: \"bad key\" }", Ok(Verdict::Error("bad key".into()))),
        ("#{ ok: false }", Ok(Verdict::Error(convert::REJECTED.into()))),
        ("42", Err("hook `t.rhai`, response(): response() must return (), true, false, an error message or #{ok, error}; it returned an integer")),
        ("#{ error: \"x\" }", Err("it returned a map without `ok`")),
        ("#{ ok: 1 }", Err("returned `ok` as an integer")),
    ];
    for (ret, want) in cases {
        let mut w = worker(&format!(
            "fn request(ctx) {{ \"/\" }} fn response(ctx, resp) {{ {ret} }}"
        ));
        assert!(w.has_response());
        w.request("request", 0, Duration::ZERO).unwrap();
        match (w.response(&resp(200, b"")), want) {
            (Ok(v), Ok(want)) => assert_eq!(v, want, "{ret}"),
            (Err(e), Err(want)) => assert!(e.message.contains(want), "{ret}: {e}"),
            (got, want) => panic!("{ret}: {got:?} vs {want:?}"),
        }
    }
}

#[test]
fn response_sees_the_response_and_continues_the_rng() {
    let mut w = worker(
        r#"
        fn request(ctx) { ctx.state; `/${ctx.rng.int(0, 1000000000)}` }
        fn response(ctx, resp) {
            `${resp.status}|${resp.body}|${resp.headers["x-a"]}|${resp.headers["content-type"]}|${resp.rows}|${resp.latency_us}|${ctx.index}|${ctx.rng.int(0, 1000000000)}`
        }
        fn both(ctx) { `${ctx.rng.int(0, 1000000000)}|${ctx.rng.int(0, 1000000000)}` }
        "#,
    );
    let first = match w.request("request", 4, Duration::ZERO).unwrap() {
        Built::Http(h) => h.path[1..].to_string(),
        _ => unreachable!(),
    };
    let mut headers = HeaderMap::new();
    headers.append("X-A", "1".parse().unwrap());
    headers.append("x-a", "2".parse().unwrap());
    headers.insert("content-type", "text/plain".parse().unwrap());
    let view = ResponseView {
        status: 404,
        headers: Some(&headers),
        body: b"nope\xff",
        rows: 3,
        latency: Duration::from_micros(1500),
    };
    let Verdict::Error(got) = w.response(&view).unwrap() else {
        panic!()
    };
    let parts: Vec<&str> = got.split('|').collect();
    assert_eq!(
        &parts[..7],
        &[
            "404",
            "nope\u{fffd}",
            "1, 2",
            "text/plain",
            "3",
            "1500",
            "4"
        ]
    );
    w.begin(4, Duration::ZERO);
    let ctx = w.ctx();
    let both = w
        .call("both", 1, MAX_CALL_TIME, (ctx,))
        .unwrap()
        .to_string();
    assert_eq!(both, format!("{first}|{}", parts[7]));
    // Without headers, `resp.headers` is absent.
    let mut w = worker(r#"fn request(ctx) { "/" } fn response(ctx, resp) { "headers" in resp }"#);
    w.request("request", 0, Duration::ZERO).unwrap();
    assert_eq!(
        w.response(&resp(200, b"")).unwrap(),
        Verdict::Error(convert::REJECTED.into())
    );
}

#[test]
fn sandbox_stops_an_endless_loop() {
    let got = request_error("fn request(ctx) {\n    let x = 0;\n    loop { x += 1; }\n}");
    // Rhai reports no position for a broken limit.
    assert_eq!(
        got,
        "hook `t.rhai`, request(): too many operations (limit 1,000,000 per call)"
    );
}

#[test]
fn sandbox_limits_strings_arrays_maps() {
    let got = request_error(r#"fn request(ctx) { let s = "x"; loop { s += s; } }"#);
    assert!(
        got.contains("request(): a string grew too long (limit 8 MiB)"),
        "{got}"
    );
    let got = request_error("fn request(ctx) { let a = []; loop { a.push([1, 2, 3]); } }");
    assert!(
        got.contains("an array or BLOB grew too large (limit 1,000,000 elements)")
            || got.contains("too many operations")
            || got.contains("the call took too long"),
        "{got}"
    );
    let got = request_error("fn request(ctx) { let a = []; a.pad(2000000, 0); }");
    assert!(
        got.contains("an array or BLOB grew too large (limit 1,000,000 elements)"),
        "{got}"
    );
    let got = request_error(
        "fn request(ctx) { let m = #{}; for i in 0..100001 { m[`${i}`] = i; } m.len() }",
    );
    // A debug build on a busy machine may reach the wall-clock limit first: either stops it.
    assert!(
        got.contains("a map grew too large (limit 100,000 entries)")
            || got.contains("the call took too long"),
        "{got}"
    );
}

#[test]
fn sandbox_limits_recursion() {
    let got = request_error("fn down(n) { down(n + 1) }\nfn request(ctx) { down(0) }");
    assert!(
        got.contains("request(): too many nested function calls (limit 64)"),
        "{got}"
    );
}

#[test]
fn sandbox_limits_wall_clock_time() {
    // Each push re-measures the array: quadratic time within the operations limit.
    let t = std::time::Instant::now();
    let got = request_error("fn request(ctx) { let a = []; for i in 0..300000 { a.push(i); } }");
    assert_eq!(
        got,
        "hook `t.rhai`, request(): the call took too long (limit 1 s of wall-clock time)"
    );
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // The deadline ends with the call.
    let mut w = worker(r#"fn request(ctx) { "/" }"#);
    assert!(w.request("request", 0, Duration::ZERO).is_ok());
    assert!(BOUNDS.with(std::cell::Cell::get).is_none());
}

#[test]
fn sandbox_refuses_import_eval_and_sleep() {
    let e = Script::compile("t.rhai", "import \"x\" as y;\nfn request(ctx) { \"/\" }")
        .err()
        .expect("import must not compile");
    assert!(e.starts_with("t.rhai:1:1: "), "{e}");
    assert!(e.contains("import"), "{e}");
    let e = Script::compile("t.rhai", "fn request(ctx) {\n  eval(\"1\")\n}")
        .err()
        .expect("eval must not compile");
    assert!(e.starts_with("t.rhai:2:3: "), "{e}");
    assert!(e.contains("eval"), "{e}");
    let got = request_error("fn request(ctx) { sleep(1); \"/\" }");
    assert!(got.contains("sleep() is not available in hooks"), "{got}");
    let got = request_error("fn request(ctx) { timestamp(); \"/\" }");
    assert!(got.contains("Function not found: timestamp"), "{got}");
}

#[test]
fn compile_errors_carry_line_and_column() {
    let e = Script::compile("pull.rhai", "fn request(ctx) {\n  let x = ;\n}")
        .err()
        .unwrap();
    assert!(e.starts_with("pull.rhai:2:"), "{e}");
    // Undeclared variables are caught when compiling.
    let e = Script::compile("pull.rhai", "fn request(ctx) {\n  cxt.index\n}")
        .err()
        .unwrap();
    assert!(e.starts_with("pull.rhai:2:3: "), "{e}");
    assert!(e.contains("cxt"), "{e}");
}

#[test]
fn script_errors_name_file_function_and_position() {
    let got = request_error("fn request(ctx) {\n  throw \"boom\";\n}");
    assert_eq!(got, "hook `t.rhai`, request(): boom at line 2, col 3");
    let got =
        request_error("fn helper(ctx) {\n  ctx.rng.int(2, 1)\n}\nfn request(ctx) { helper(ctx) }");
    assert!(
        got.starts_with("hook `t.rhai`, request(): rng.int(2, 1): lo is greater than hi at line 2"),
        "{got}"
    );
    assert!(got.ends_with("(in helper())"), "{got}");
    let e = script("fn init(ctx) { [1][5] }\nfn request(ctx) { \"/\" }")
        .worker(spec(0, 1))
        .err()
        .unwrap();
    assert!(
        e.message
            .starts_with("hook `t.rhai`, init(): Array index 5 out of bounds"),
        "{e}"
    );
}

#[test]
fn print_and_debug_go_to_stderr() {
    let mut w = worker(r#"fn request(ctx) { print("hi"); debug(ctx.index); "/" }"#);
    w.request("request", 0, Duration::ZERO).unwrap();
}

#[test]
fn has_reports_functions() {
    let s = script("fn init(ctx) {} fn request(ctx) { \"/\" } fn helper(a, b) {}");
    assert!(s.has("init") && s.has("request") && s.has("helper"));
    assert!(!s.has("response"));
}

#[test]
fn workers_move_between_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<HookWorker>();
    send_sync::<Script>();
    let mut w = worker(r#"fn request(ctx) { "/" }"#);
    std::thread::spawn(move || w.request("request", 0, Duration::ZERO).map(|_| ()))
        .join()
        .unwrap()
        .unwrap();
}

/// `request()` of `src` on a thread with tokio's default 2 MiB stack.
fn on_small_stack(src: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut w = script(&src).worker(spec(0, 1)).unwrap();
            w.request("request", 0, Duration::ZERO)
                .map(|_| ())
                .map_err(|e| e.message)
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn sandbox_limits_native_stack() {
    // 63 call levels of deeply nested expressions overflow a 2 MiB stack unless stopped.
    for nests in [10, 11] {
        let mut e = String::from("f(n - 1)");
        for _ in 0..nests {
            e = format!("1 + ({e})");
        }
        let src = format!(
            "fn f(n) {{ if n <= 0 {{ 0 }} else {{ {e} }} }}\nfn request(ctx) {{ f(62); \"/\" }}"
        );
        assert_eq!(
            on_small_stack(src),
            Err("hook `t.rhai`, request(): the script nests too deeply (limit 1024 KiB of native stack per call)".to_string())
        );
    }
    // Through closures and native functions.
    let got = on_small_stack(
        "fn f(n) { if n <= 0 { 0 } else { [n].map(|x| 1 + (1 + (1 + (1 + f(x - 1)))))[0] } }\n\
         fn request(ctx) { f(62); \"/\" }"
            .to_string(),
    );
    assert!(got.is_err(), "{got:?}");
    // Plain recursion 60 deep is fine.
    assert_eq!(
        on_small_stack(
            "fn f(n) { if n <= 0 { 0 } else { 1 + f(n - 1) } }\nfn request(ctx) { f(60); \"/\" }"
                .to_string()
        ),
        Ok(())
    );
}
#[test]
fn the_examples_of_docs_scripting_md_compile() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scripting.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut current, line.trim_end()) {
            (None, "```rhai") => current = Some((n + 1, String::new())),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some((_, code)), l) => {
                code.push_str(l);
                code.push('\n');
            }
            _ => {}
        }
    }
    assert!(blocks.len() >= 5, "{} rhai blocks", blocks.len());
    for (line, code) in blocks {
        let s = Script::compile(&format!("docs/scripting.md:{line}"), &code)
            .unwrap_or_else(|e| panic!("{e}"));
        // Every block that defines request() builds a request.
        if s.has("request") {
            let mut sp = spec(0, 1);
            sp.params.push(("orders".to_string(), Value::Int(1000)));
            let mut w = s.worker(sp).unwrap();
            w.request("request", 0, Duration::ZERO)
                .unwrap_or_else(|e| panic!("block at line {line}: {e}"));
        }
    }
}

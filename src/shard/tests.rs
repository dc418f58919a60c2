//! The barriers over loopback: shards join and pass together, figures add up, a refusal
//! reaches everyone, and a shard missing, dead or running another plan fails the others with
//! its name, within the timeout.

use std::time::{Duration, Instant};

use super::*;

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn addr(port: u16) -> Address {
    Address {
        host: Some("127.0.0.1".into()),
        port,
        ..Address::default()
    }
}

fn figures(sent: u64) -> Option<Figures> {
    Some(Figures {
        sent,
        acked: Some(sent),
        ok: None,
        dropped: 0,
    })
}

async fn join_all(n: u64, plan: &[&str], timeout: Duration) -> Vec<Result<Barrier, String>> {
    let port = free_port();
    let mut tasks = Vec::new();
    for i in 0..n {
        let p = plan[i as usize % plan.len()].to_string();
        tasks.push(tokio::spawn(async move {
            let spec = Spec { index: i, count: n };
            Barrier::join(spec, &addr(port), &p, timeout, Arc::default()).await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn shards_pass_barriers_together_and_add_their_figures() {
    let all = join_all(3, &["p"], Duration::from_secs(10)).await;
    let mut barriers: Vec<Barrier> = all.into_iter().map(Result::unwrap).collect();
    for seq in 1..=3u64 {
        let mut tasks = Vec::new();
        for (i, mut b) in barriers.drain(..).enumerate() {
            tasks.push(tokio::spawn(async move {
                // The shards arrive at different times; they leave together.
                tokio::time::sleep(Duration::from_millis(20 * i as u64)).await;
                let failure = (seq == 2 && i == 1).then(|| "no table".to_string());
                let r = b
                    .pass(
                        seq,
                        "p",
                        Arrival {
                            failure,
                            figures: figures(10 * (i as u64 + 1)),
                        },
                    )
                    .await;
                (b, r, Instant::now())
            }));
        }
        let mut left = Vec::new();
        for t in tasks {
            let (b, r, at) = t.await.unwrap();
            let r = r.unwrap();
            assert_eq!(r.totals.as_ref().unwrap().sent, 60);
            assert_eq!(r.totals.as_ref().unwrap().acked, Some(60));
            if seq == 2 {
                assert_eq!(r.refusals.len(), 1);
                assert_eq!(r.refusals[0].shard, 1);
                assert_eq!(r.refusals[0].failure, "no table");
            } else {
                assert!(r.refusals.is_empty());
            }
            // The skew of the barrier before comes with every release after the first.
            if seq > 1 {
                let s = r.skew.expect("the skew of the last barrier");
                assert!(s.spread_ms < 50.0, "{s:?}");
            }
            left.push(at);
            barriers.push(b);
        }
        let spread = left
            .iter()
            .max()
            .unwrap()
            .duration_since(*left.iter().min().unwrap());
        assert!(spread < Duration::from_millis(30), "{spread:?}");
    }
}

#[tokio::test]
async fn a_shard_that_never_joins_is_named_within_the_timeout() {
    let port = free_port();
    let t0 = Instant::now();
    let lead = tokio::spawn(async move {
        Barrier::join(
            Spec { index: 0, count: 3 },
            &addr(port),
            "p",
            Duration::from_millis(800),
            Arc::default(),
        )
        .await
    });
    let one = tokio::spawn(async move {
        Barrier::join(
            Spec { index: 1, count: 3 },
            &addr(port),
            "p",
            Duration::from_secs(5),
            Arc::default(),
        )
        .await
    });
    let e = lead.await.unwrap().err().unwrap();
    assert!(e.contains("shard 2 of 3 did not join within"), "{e}");
    let e = one.await.unwrap().err().unwrap();
    assert!(
        e.contains("shard 0 ended the run") && e.contains("shard 2"),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_member_that_cannot_reach_shard_0_gives_up_within_the_timeout() {
    let port = free_port();
    let t0 = Instant::now();
    let e = Barrier::join(
        Spec { index: 1, count: 2 },
        &addr(port),
        "p",
        Duration::from_millis(700),
        Arc::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(e.contains("could not reach shard 0 at 127.0.0.1"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    let e = Barrier::join(
        Spec { index: 1, count: 2 },
        &Address {
            host: None,
            port,
            ..Address::default()
        },
        "p",
        Duration::from_secs(1),
        Arc::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(e.contains("--barrier HOST:PORT"), "{e}");
}

#[tokio::test]
async fn another_plan_is_refused_naming_the_shard() {
    let all = join_all(2, &["sha256:aaaa", "sha256:bbbb"], Duration::from_secs(5)).await;
    let e = all[0].as_ref().err().unwrap();
    assert!(e.contains("shard 1") && e.contains("another plan"), "{e}");
    let e = all[1].as_ref().err().unwrap();
    assert!(e.contains("another plan"), "{e}");
}

#[tokio::test]
async fn a_shard_that_dies_fails_the_next_barrier_on_the_others_naming_it() {
    let all = join_all(3, &["p"], Duration::from_secs(5)).await;
    let mut bs: Vec<Barrier> = all.into_iter().map(Result::unwrap).collect();
    let two = bs.pop().unwrap();
    drop(two); // shard 2's process dies: its connection closes
    let mut one = bs.pop().unwrap();
    let mut zero = bs.pop().unwrap();
    let t1 = tokio::spawn(async move { one.pass(1, "cell 1 q: end", Arrival::default()).await });
    let e = zero
        .pass(1, "cell 1 q: end", Arrival::default())
        .await
        .unwrap_err();
    assert!(e.contains("shard 2 closed its connection"), "{e}");
    let e = t1.await.unwrap().unwrap_err();
    assert!(e.contains("shard 2 closed its connection"), "{e}");
    // Every later barrier fails the same way.
    let e2 = zero.pass(2, "x", Arrival::default()).await.unwrap_err();
    assert!(e2.contains("shard 2"), "{e2}");
}

#[tokio::test]
async fn a_late_shard_is_named_and_shard_0_dying_is_seen_at_once() {
    let all = join_all(3, &["p"], Duration::from_millis(500)).await;
    let mut bs: Vec<Barrier> = all.into_iter().map(Result::unwrap).collect();
    let _two = bs.pop().unwrap(); // alive, but never arrives
    let mut one = bs.pop().unwrap();
    let mut zero = bs.pop().unwrap();
    let t1 = tokio::spawn(async move { one.pass(1, "cell 1 q: start", Arrival::default()).await });
    let t0 = Instant::now();
    let e = zero
        .pass(1, "cell 1 q: start", Arrival::default())
        .await
        .unwrap_err();
    assert!(e.contains("shard 2 did not reach `cell 1 q: start`"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(t1
        .await
        .unwrap()
        .unwrap_err()
        .contains("shard 2 did not reach"));

    let all = join_all(2, &["p"], Duration::from_secs(30)).await;
    let mut bs: Vec<Barrier> = all.into_iter().map(Result::unwrap).collect();
    let mut one = bs.pop().unwrap();
    drop(bs); // shard 0 dies
    let t0 = Instant::now();
    let e = one
        .pass(1, "cell 1 q: end", Arrival::default())
        .await
        .unwrap_err();
    assert!(e.contains("shard 0 closed the barrier connection"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_shard_that_leaves_is_named_with_its_reason() {
    let all = join_all(2, &["p"], Duration::from_secs(5)).await;
    let mut bs: Vec<Barrier> = all.into_iter().map(Result::unwrap).collect();
    let mut one = bs.pop().unwrap();
    let mut zero = bs.pop().unwrap();
    one.leave("SIGTERM").await;
    let e = zero
        .pass(1, "cell 2 q: start", Arrival::default())
        .await
        .unwrap_err();
    assert!(
        e.contains("shard 1 left the run") && e.contains("SIGTERM"),
        "{e}"
    );
}

#[test]
fn lists_and_identities_read_well() {
    assert_eq!(shard_list(&[2]), "shard 2");
    assert_eq!(shard_list(&[1, 3, 4]), "shards 1, 3 and 4");
    let id = identity(b"{}");
    assert!(
        id.starts_with("sha256:44136fa355b3678a1146ad16f7e8649e"),
        "{id}"
    );
    assert_eq!(fmt_secs(Duration::from_secs(120)), "120 s");
}

const TOKEN: &str = "barrier-token-0123456789";

fn guarded(port: u16, token: Option<&str>) -> Address {
    Address {
        access: Access {
            token: token.map(|t| serde_json::from_value(serde_json::json!(t)).unwrap()),
            tls: None,
        },
        ..addr(port)
    }
}

/// A stranger's hello, with the run's plan and index but `token`: what shard 0 answers.
async fn stranger(port: u16, token: Option<&str>) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut sock = loop {
        match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            Ok(s) => break s,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let mut hello = serde_json::json!({
        "t": "hello", "shard": 1, "count": 2, "plan": "p",
        "version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(t) = token {
        hello["token"] = t.into();
    }
    sock.write_all(format!("{hello}\n").as_bytes())
        .await
        .unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(sock)
        .read_line(&mut line)
        .await
        .unwrap();
    line
}

#[tokio::test]
async fn strangers_without_the_token_are_refused_and_the_run_goes_on() {
    let port = free_port();
    let lead = tokio::spawn(async move {
        let a = guarded(port, Some(TOKEN));
        let spec = Spec { index: 0, count: 2 };
        Barrier::join(spec, &a, "p", Duration::from_secs(10), Arc::default()).await
    });
    let none = stranger(port, None).await;
    assert!(
        none.contains(r#""t":"refuse""#) && none.contains("needs a token"),
        "{none}"
    );
    let wrong = stranger(port, Some("barrier-token-9876543210")).await;
    assert!(wrong.contains("wrong barrier token"), "{wrong}");
    assert!(!wrong.contains(TOKEN));
    // A shard without the token is refused with a reason it can print.
    let spec = Spec { index: 1, count: 2 };
    let e = Barrier::join(
        spec,
        &guarded(port, None),
        "p",
        Duration::from_secs(10),
        Arc::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(
        e.contains("refused this shard") && e.contains("WLRUN_BARRIER_TOKEN"),
        "{e}"
    );
    let one = Barrier::join(
        spec,
        &guarded(port, Some(TOKEN)),
        "p",
        Duration::from_secs(10),
        Arc::default(),
    )
    .await;
    let mut zero = lead.await.unwrap().unwrap();
    let mut one = one.unwrap();
    let t1 = tokio::spawn(async move { one.pass(1, "x", Arrival::default()).await });
    zero.pass(1, "x", Arrival::default()).await.unwrap();
    t1.await.unwrap().unwrap();
}

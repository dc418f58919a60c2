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

/// Forwards one connection both ways until `frozen`, then holds both sockets open and
/// forwards nothing: a partition, where neither end sees its connection close.
async fn partition_proxy(to: u16, frozen: Arc<std::sync::atomic::AtomicBool>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (a, _) = l.accept().await.unwrap();
        let b = loop {
            match tokio::net::TcpStream::connect(("127.0.0.1", to)).await {
                Ok(b) => break b,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        let (ar, aw) = a.into_split();
        let (br, bw) = b.into_split();
        let pipe = |mut r: tokio::net::tcp::OwnedReadHalf,
                    mut w: tokio::net::tcp::OwnedWriteHalf,
                    frozen: Arc<std::sync::atomic::AtomicBool>| async move {
            let mut buf = [0u8; 4096];
            loop {
                let n = r.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                if frozen.load(std::sync::atomic::Ordering::SeqCst) {
                    // Keep both sockets, say nothing, for longer than any test waits.
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    drop((r, w));
                    return;
                }
                if w.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        };
        let f = frozen.clone();
        let up = tokio::spawn(pipe(ar, bw, f));
        let down = tokio::spawn(pipe(br, aw, frozen));
        let _ = (up.await, down.await);
    });
    port
}

async fn rang(alarm: &Alarm, within: Duration) -> Option<String> {
    let t0 = Instant::now();
    while t0.elapsed() < within {
        if let Some(r) = alarm.rang() {
            return Some(r);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test]
async fn a_silent_peer_is_seen_mid_phase_from_missing_heartbeats_on_both_sides() {
    let timeout = Duration::from_secs(2);
    let pulse = Pulse::of(timeout);
    assert_eq!(pulse.silence, timeout);
    assert_eq!(pulse.every, Duration::from_millis(200));
    let lead_port = free_port();
    let frozen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let proxy = partition_proxy(lead_port, frozen.clone()).await;
    let alarm0 = Arc::new(Alarm::new(Arc::default()));
    let alarm1 = Arc::new(Alarm::new(Arc::default()));
    let a0 = alarm0.clone();
    let zero = tokio::spawn(async move {
        let spec = Spec { index: 0, count: 2 };
        Barrier::join(spec, &addr(lead_port), "p", timeout, a0).await
    });
    let spec = Spec { index: 1, count: 2 };
    let one = Barrier::join(spec, &addr(proxy), "p", timeout, alarm1.clone()).await;
    let (mut zero, mut one) = (zero.await.unwrap().unwrap(), one.unwrap());
    let t1 = tokio::spawn(async move {
        let r = one.pass(1, "cell 1 q: start", Arrival::default()).await;
        (one, r)
    });
    zero.pass(1, "cell 1 q: start", Arrival::default())
        .await
        .unwrap();
    let (mut one, r) = t1.await.unwrap();
    r.unwrap();
    alarm0.arm("cell 1 q");
    alarm1.arm("cell 1 q");
    // Heartbeats alone keep a quiet phase alive past the silence limit.
    tokio::time::sleep(timeout + Duration::from_millis(500)).await;
    assert_eq!((alarm0.rang(), alarm1.rang()), (None, None));

    frozen.store(true, std::sync::atomic::Ordering::SeqCst);
    let t0 = Instant::now();
    let r0 = rang(&alarm0, Duration::from_secs(10))
        .await
        .expect("shard 0 saw nothing");
    let r1 = rang(&alarm1, Duration::from_secs(10))
        .await
        .expect("shard 1 saw nothing");
    let took = t0.elapsed();
    assert!(took < timeout + Duration::from_secs(2), "{took:?}");
    assert!(
        r0.contains("during `cell 1 q`, shard 1 went silent")
            && r0.contains("not even a heartbeat"),
        "{r0}"
    );
    assert!(
        r1.contains(&format!("shard 0 at 127.0.0.1:{proxy} went silent")),
        "{r1}"
    );
    // Both end barriers fail at once, naming the other.
    let t1 = tokio::spawn(async move { one.pass(2, "cell 1 q: end", Arrival::default()).await });
    let e0 = zero
        .pass(2, "cell 1 q: end", Arrival::default())
        .await
        .unwrap_err();
    let e1 = t1.await.unwrap().unwrap_err();
    assert!(
        e0.contains("shard 1 went silent before `cell 1 q: end`"),
        "{e0}"
    );
    assert!(
        e1.contains("shard 0 at") && e1.contains("went silent"),
        "{e1}"
    );
    assert!(t0.elapsed() < timeout + Duration::from_secs(3));
}

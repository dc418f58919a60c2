//! The `ctx` object a script sees and its `rng` handle: registered custom types, so that a call
//! costs one small allocation for `ctx` rather than a map built per request.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rhai::{Array, Dynamic, Engine, EvalAltResult, ImmutableString, Map, Position, FLOAT, INT};

use crate::gen::rng::{Rng, Zipf};

/// What a worker's `ctx` values share: fixed at worker start except the state, the RNG and the
/// counters.
pub(super) struct Shared {
    pub worker: INT,
    pub workers: INT,
    /// `ctx.params`: cloned into the script on access, so a script cannot change the params
    /// later calls see.
    pub params: Map,
    /// `ctx.state`: a shared value, so a change to its contents persists across calls.
    pub state: Dynamic,
    /// The address of the value inside `state`'s lock: how the `state` setter tells a change
    /// made through `ctx.state.x = ...` (which hands it that very value) from `ctx.state = v`.
    pub state_addr: usize,
    pub rng: Mutex<RngState>,
    pub counters: Mutex<HashMap<ImmutableString, i64>>,
}

impl Shared {
    pub fn rng(&self) -> MutexGuard<'_, RngState> {
        // A panic while the lock was held cannot leave the RNG half-updated in a way that
        // matters: it is re-keyed before every request.
        self.rng.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn counters(&self) -> MutexGuard<'_, HashMap<ImmutableString, i64>> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(super) struct RngState {
    pub rng: Rng,
    /// The sampler of the last `zipf(n, s)`: building one costs a few logarithms.
    pub zipf: Option<(INT, u64, Zipf)>,
}

/// `ctx`: the worker's shared part plus this call's request index and offset.
#[derive(Clone)]
pub(super) struct Ctx {
    pub shared: Arc<Shared>,
    pub index: u64,
    pub offset_ns: u64,
}

/// `ctx.rng`: a handle on the worker's RNG.
#[derive(Clone)]
pub(super) struct RngHandle(Arc<Shared>);

type Res<T> = Result<T, Box<EvalAltResult>>;

fn fail<T>(msg: impl Into<String>) -> Res<T> {
    Err(Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(msg.into()),
        Position::NONE,
    )))
}

/// An integer or a float as a float, for the parameters that take either.
fn number(what: &str, d: &Dynamic) -> Res<FLOAT> {
    if let Ok(v) = d.as_float() {
        Ok(v)
    } else if let Ok(v) = d.as_int() {
        Ok(v as FLOAT)
    } else {
        fail(format!(
            "{what} must be a number, not {}",
            super::convert::kind(d)
        ))
    }
}

fn to_int(v: u64) -> INT {
    INT::try_from(v).unwrap_or(INT::MAX)
}

/// Registers `Ctx` and `Rng` with their properties and methods.
pub(super) fn register(e: &mut Engine) {
    e.register_type_with_name::<Ctx>("Ctx")
        .register_get("worker", |c: &mut Ctx| c.shared.worker)
        .register_get("workers", |c: &mut Ctx| c.shared.workers)
        .register_get("index", |c: &mut Ctx| to_int(c.index))
        .register_get("offset_us", |c: &mut Ctx| to_int(c.offset_ns / 1_000))
        .register_get("offset", |c: &mut Ctx| c.offset_ns as FLOAT / 1e9)
        .register_get("params", |c: &mut Ctx| c.shared.params.clone())
        .register_get("state", |c: &mut Ctx| c.shared.state.clone())
        .register_get("rng", |c: &mut Ctx| RngHandle(c.shared.clone()))
        // Rhai feeds a property back through its setter after a method call on it; without
        // one it builds an error message on every `ctx.rng.int(...)` (about 2 us) to find out.
        .register_set("rng", |_: &mut Ctx, _: RngHandle| {})
        .register_fn("count", |c: &mut Ctx, name: ImmutableString| {
            count(c, name, 1);
        })
        .register_fn("count", |c: &mut Ctx, name: ImmutableString, n: INT| {
            count(c, name, n);
        })
        .register_fn("to_string", |_: &mut Ctx| "Ctx".to_string())
        .register_fn("to_debug", |_: &mut Ctx| "Ctx".to_string());

    // The `state` setter, raw so that it does not take the value it is handed. After
    // `ctx.state.n += 1` Rhai calls it with the state's own value, still locked: nothing to do.
    // `ctx.state = v` hands it a new value, stored in the shared cell.
    e.register_raw_fn(
        "set$state",
        [TypeId::of::<Ctx>(), TypeId::of::<Dynamic>()],
        |_, args| {
            let Some(shared) = args[0].read_lock::<Ctx>().map(|c| c.shared.clone()) else {
                return Ok(());
            };
            if std::ptr::from_ref::<Dynamic>(args[1]) as usize == shared.state_addr {
                return Ok(());
            }
            let value = args[1].take().flatten();
            let mut cell = shared.state.clone();
            let Some(mut s) = cell.write_lock::<Dynamic>() else {
                return fail("ctx.state is in use and cannot be replaced here");
            };
            *s = value;
            Ok(())
        },
    );

    e.register_type_with_name::<RngHandle>("Rng")
        .register_fn("int", |r: &mut RngHandle, lo: INT, hi: INT| -> Res<INT> {
            if lo > hi {
                return fail(format!("rng.int({lo}, {hi}): lo is greater than hi"));
            }
            let mut s = r.0.rng();
            // The width of [lo, hi] minus one fits in u64; the full range needs no reduction.
            let span = hi.wrapping_sub(lo) as u64;
            Ok(match span.checked_add(1) {
                Some(n) => lo.wrapping_add(s.rng.below(n) as INT),
                None => s.rng.next_u64() as INT,
            })
        })
        .register_fn("float", |r: &mut RngHandle| r.0.rng().rng.f64())
        .register_fn(
            "float",
            |r: &mut RngHandle, lo: Dynamic, hi: Dynamic| -> Res<FLOAT> {
                let (lo, hi) = (number("rng.float: lo", &lo)?, number("rng.float: hi", &hi)?);
                if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                    return fail(format!(
                        "rng.float({lo}, {hi}): the bounds must be finite, lo <= hi"
                    ));
                }
                Ok(r.0.rng().rng.range_f64(lo, hi))
            },
        )
        .register_fn("bool", |r: &mut RngHandle| r.0.rng().rng.f64() < 0.5)
        .register_fn("bool", |r: &mut RngHandle, p: Dynamic| -> Res<bool> {
            let p = number("rng.bool: p", &p)?;
            if !(0.0..=1.0).contains(&p) {
                return fail(format!("rng.bool({p}): p must be in [0, 1]"));
            }
            Ok(r.0.rng().rng.f64() < p)
        })
        .register_fn("pick", |r: &mut RngHandle, items: Array| -> Res<Dynamic> {
            if items.is_empty() {
                return fail("rng.pick: the array is empty");
            }
            let i = r.0.rng().rng.below(items.len() as u64) as usize;
            Ok(items.into_iter().nth(i).unwrap_or(Dynamic::UNIT))
        })
        .register_fn(
            "weighted",
            |r: &mut RngHandle, items: Array, weights: Array| -> Res<Dynamic> {
                weighted(&r.0, items, &weights)
            },
        )
        .register_fn(
            "zipf",
            |r: &mut RngHandle, n: INT, s: Dynamic| -> Res<INT> {
                let s = number("rng.zipf: s", &s)?;
                if n < 1 {
                    return fail(format!("rng.zipf({n}, {s}): n must be at least 1"));
                }
                if !(s.is_finite() && s > 0.0) {
                    return fail(format!("rng.zipf({n}, {s}): s must be a number above 0"));
                }
                let mut st = r.0.rng();
                let st = &mut *st;
                let fresh =
                    !matches!(&st.zipf, Some((cn, cs, _)) if *cn == n && *cs == s.to_bits());
                if fresh {
                    st.zipf = Some((n, s.to_bits(), Zipf::new(n as u64, s)));
                }
                let z = &st.zipf.as_ref().expect("just set").2;
                Ok(z.sample(&mut st.rng) as INT)
            },
        )
        .register_fn(
            "normal",
            |r: &mut RngHandle, mean: Dynamic, stddev: Dynamic| -> Res<FLOAT> {
                let mean = number("rng.normal: mean", &mean)?;
                let sd = number("rng.normal: stddev", &stddev)?;
                if !(mean.is_finite() && sd.is_finite() && sd >= 0.0) {
                    return fail(format!(
                        "rng.normal({mean}, {sd}): mean must be finite and stddev >= 0"
                    ));
                }
                Ok(mean + sd * r.0.rng().rng.std_normal())
            },
        )
        .register_fn("uuid", |r: &mut RngHandle| {
            let mut s = r.0.rng();
            let a = s.rng.next_u64();
            crate::gen::uuid_v4(a, s.rng.next_u64())
        })
        .register_fn("to_string", |_: &mut RngHandle| "Rng".to_string())
        .register_fn("to_debug", |_: &mut RngHandle| "Rng".to_string());
}

fn count(c: &mut Ctx, name: ImmutableString, n: INT) {
    let mut counters = c.shared.counters();
    match counters.get_mut(&name) {
        Some(v) => *v = v.saturating_add(n),
        None => {
            counters.insert(name, n);
        }
    }
}

fn weighted(shared: &Shared, items: Array, weights: &Array) -> Res<Dynamic> {
    if items.len() != weights.len() {
        return fail(format!(
            "rng.weighted: {} items but {} weights",
            items.len(),
            weights.len()
        ));
    }
    if items.is_empty() {
        return fail("rng.weighted: the arrays are empty");
    }
    let mut total = 0.0;
    for (i, w) in weights.iter().enumerate() {
        let w = number(&format!("rng.weighted: weights[{i}]"), w)?;
        if !(w.is_finite() && w >= 0.0) {
            return fail(format!(
                "rng.weighted: weights[{i}] is {w}; weights must be finite and >= 0"
            ));
        }
        total += w;
    }
    if !(total > 0.0 && total.is_finite()) {
        return fail("rng.weighted: the weights are all 0");
    }
    let u = shared.rng().rng.f64() * total;
    let mut acc = 0.0;
    let mut last = 0;
    for (i, w) in weights.iter().enumerate() {
        let w = number("", w)?;
        if w > 0.0 {
            acc += w;
            last = i;
            if u < acc {
                return Ok(items.into_iter().nth(i).unwrap_or(Dynamic::UNIT));
            }
        }
    }
    // Rounding left u at the total: the last item that has weight.
    Ok(items.into_iter().nth(last).unwrap_or(Dynamic::UNIT))
}

/* The golden of the editor grammar (editors/test/sample.scopes): one of each construct of the
   language, kept valid (tests/editor_grammar.rs checks it with wlrun). */
import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = 2016-01-01T00:00:00Z)

workload sample {
  seed 7
  description "every construct, once: \"quoted\" \\ \$ ${hosts} hosts"
}

param hosts: int = 4
param table = "readings_${hosts}"   // a keyword is a name where a name stands
param mix = { "Accept": "application/json", "X-Seed": "${hosts}" }

target pg_local {
  dialect postgres
  pg "postgres://wlrun:${env("PGPASSWORD", "wlrun")}@127.0.0.1:5432/wlrun" {
    timeout 10s
    insert copy
  }
  http "http://127.0.0.1:9000" as web { headers mix }
  null as sink
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

matrix {
  workers in [1, 2] when hosts >= 2 and not hosts == 3
  exclude workers == 2 or hosts < 1
}

schema readings {
  table table
  timestamp ts: timestamp(us) = every 1m30s from 2016-01-01T00:00:00.5+01:00 for 1h
  series host: varchar = format("host_%d", n) for n in 0..hosts
  tag region: symbol = pick(["eu", "us"]) per series
  field usage: double = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100) null 1%
}

ingest load {
  into pg_local via [pg]
  rows readings limit 10_000
  batch 512 rows
  workers workers
  setup recreate
  teardown keep
  verify visible within 30s
  rate 5_000/s
  replay when workers == 2 budget 64MiB
  link 14.7gbit
}

query busiest {
  label "busiest ${hosts}"
  sql "SELECT host, max(usage) AS \"top\" FROM readings
       WHERE host = $1 AND host <> 'none' AND ts >= $2 -- ${table}
       GROUP BY host"
  let w = window(2016-01-01T00:00:00Z, 2016-01-01T01:00:00Z, 10min)
  bind $1 = sample(readings.host, 1)
  bind $2 = w.start
  route by $1
  expect rows >= 0
}

run reads {
  against pg_local via [pg]
  queries busiest weight 2.5
  workers 2
  duration 2s
  warmup 0.5e3ms
  rate 60/min poisson
  require rows(readings) > 0
  expect error_rate < 0.1%
  expect p99 <= 2 * 50ms - 10ms / 2
  stop after 10 errors
}

run health {
  against pg_local.web
  request GET "/health"
  count 3
  expect status [200, 204]
  expect body json object
}

run ramp {
  against pg_local via pg
  queries busiest
  stage 1s rate 10/s to 20/h workers 2 warmup 100ms
}

concurrent mixed {
  phases load, reads,
  until load
}

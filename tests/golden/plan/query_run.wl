// A query run with lets, binds, a sampled series, a window, weights, an open-loop rate and
// thresholds.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 5, start = start, end = start + 2h)

workload queries_demo { seed 99 }

param start = 2016-01-01T00:00:00Z

target pg {
  dialect postgres
  pg "postgres://postgres@127.0.0.1:5432/bench" { statements prepared  timeout 2s }
}

query hosts_window {
  label "max usage_user, 2 hosts, 10m window"
  sql "SELECT hostname, max(usage_user) FROM cpu
       WHERE hostname IN $1 AND timestamp >= $2 AND timestamp < $3 GROUP BY hostname"
  let w = window(start, start + 2h, 10m)
  bind $1 = sample(tsbs.cpu.hostname, 2)
  bind $2 = w.start
  bind $3 = w.end
  expect p99 < 50ms
}

query threshold {
  sql "SELECT count(*) FROM cpu WHERE usage_user > $1 AND usage_system < $2"
  let lo = uniform(0, 50)
  bind $1 = lo
  bind $2 = lo + 50
  route by $1
}

run mixed {
  against pg.pg
  queries hosts_window weight 3, threshold weight 1
  workers 4
  duration 30s
  warmup 5s
  rate 200/s poisson
  require rows(tsbs.cpu) > 0
  expect error_rate < 1%
  expect p99 <= 100ms
}

// Staged runs: a request run that steps and ramps its rate and changes its connections, and a
// closed-loop query run whose stages change only the workers.
workload staged { seed 3 }

target svc {
  http "http://127.0.0.1:8080"
  pg "postgres://postgres@127.0.0.1:5432/bench"
}

query one { sql "SELECT 1" }

run ramp {
  against svc.http
  request GET "/"
  workers 8
  warmup 2s
  stage 10s rate 100/s
  stage 20s rate 100/s to 1_000/s
  stage 30s rate 1_000/s workers 32 warmup 5s
  stage 10s workers 4
  expect p99 < 50ms
}

run steps {
  against svc.pg
  queries one
  stage 5s workers 1
  stage 5s workers 4 warmup 1s
}

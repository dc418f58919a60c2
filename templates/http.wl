// A starter benchmark for an HTTP service, written by `wlrun init --kind http`.
//
//   wlrun check http.wl     check it: nothing is sent
//   wlrun plan  http.wl     see what it will do
//   wlrun http.wl           run it; `--out runs/first` also keeps report.json, .csv, .html
//
// It sends `GET /` to the service as fast as 4 connections go for 5 seconds, after a warm-up,
// and judges the answers (status, body) and their latency against thresholds. The service is at
// http://127.0.0.1:8080 unless HTTP_HOST and HTTP_PORT say otherwise. Every block is described
// in docs/language.md.
//
// An HTTP service loads its data its own way, so there is no `schema` or `ingest` here. To
// build each request from generated values (a random id, a JSON body), write a Rhai hook and
// run it with `request HOOK.FUNCTION` (docs/scripting.md).

// The seed fixes the run's random choices (a `poisson` schedule, a hook's `ctx.rng`).
workload http_starter {
  seed 42
  description "GET / over 4 connections for 5 seconds"
}

// Params are named values that `--param NAME=VALUE` overrides: `--param connections=16` sends
// more at once, `--param p99_limit=20ms` promises a tighter latency.
param connections = 4
param p99_limit   = 500ms

// The system under test and its endpoints. The `${...}` parts of the URL are filled in when
// the run starts. `https://` speaks TLS (docs/tls.md).
target service {
  http "http://${env("HTTP_HOST", "127.0.0.1")}:${env("HTTP_PORT", 8080)}" {
    headers { "Accept": "application/json" }   // sent with every request
    timeout 5s                                 // an answer later than this is an error
  }
}

// The measured run: each connection sends its next request as soon as the last one is answered
// (closed loop), as wrk does, so the figures say how fast the service answers. `rate 200/s`
// would make it open loop instead: requests due on a schedule, latency counted from when each
// was due, so a slow service cannot hide its queue.
run home {
  against service.http
  request GET "/"
  connections connections
  warmup 1s                    // sent first, not measured
  duration 5s
  // What counts as an answer: a 2xx status. Any other status, a refused connection or a
  // timeout is an error, never throughput. `expect body json` or `expect body contains "..."`
  // also checks every body.
  expect status 200..300
  // Thresholds: a run that misses one fails (exit 1) and says which.
  expect error_rate < 1%
  expect p99 < p99_limit
}

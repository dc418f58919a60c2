// Runs that stop at their first errors: `stop after N errors` on a query run and a request run,
// and an open-loop floor of its own (`expect achieved_rate`).
workload fail_fast { seed 5 }

target db { sqlite "f.db" }
target api { http "http://127.0.0.1:8080" }

query one { sql "SELECT 1" label "probe" }

run probe {
  against db.sqlite
  queries one
  count 100
  stop after 1 error
}

run post {
  against api.http
  request GET "/"
  duration 10s
  rate 500/s
  stop after 100 errors
  expect achieved_rate > 80%
}

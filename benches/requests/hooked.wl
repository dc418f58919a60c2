// wlrun with a hook: pull.rhai builds every request (the equivalent of pull.lua). The bench
// fills in @PORT@, @CONNECTIONS@ and @SECONDS@.
workload b { seed 7 }

target nginx {
  http "http://127.0.0.1:@PORT@" {
    headers { "Accept": "application/vnd.ksql.v1+json", "Content-Type": "application/vnd.ksql.v1+json" }
  }
}

hook pull from "pull.rhai" (request)

run hooked {
  against nginx.http
  request pull.request
  connections @CONNECTIONS@
  duration @SECONDS@s
  expect status 200
}

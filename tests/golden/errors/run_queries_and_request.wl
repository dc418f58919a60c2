target api { http "http://127.0.0.1:8088" }
hook pull from "support/hooks.rhai" (request)
query q { sql "SELECT 1" }
run r {
  against api.http
  queries q
  request pull.request
  count 100
}

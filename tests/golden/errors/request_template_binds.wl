// A template's binds are checked as a query's: every `$N` bound, every bind used, no `$0`;
// and `bind` belongs to a fixed request, not to a hook's or a query run.
target svc { http "http://127.0.0.1:8080" }
target db { sqlite "bench.db" }
hook pull from "support/hooks.rhai" (request)
query one { sql "SELECT 1" }

run templated {
  against svc.http
  request POST "/q/$2/$0" body "{\"k\":$1,\"h\":\"$3\"}"
  bind $1 = uniform(0, 9)
  bind $4 = 1
  count 10
}

run hooked {
  against svc.http
  request pull.request
  bind $1 = uniform(0, 9)
  count 10
}

run queried {
  against db.sqlite
  queries one
  let k = 1
  count 10
}

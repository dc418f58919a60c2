target api { http "http://127.0.0.1:8088" }
hook h from "support/no-such-hook.rhai" (request)
run r {
  against api.http
  request h.request
  count 10
}

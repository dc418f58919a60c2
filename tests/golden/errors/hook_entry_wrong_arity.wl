target api { http "http://127.0.0.1:8088" }
hook h from "support/hooks.rhai" (init, request, helper)
run r {
  against api.http
  request h.helper
  count 10
}

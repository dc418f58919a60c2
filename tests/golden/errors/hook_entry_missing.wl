target api { http "http://127.0.0.1:8088" }
hook h from "hook_entry_missing.rhai" (request, response)
run r {
  against api.http
  request h.request
  count 10
}

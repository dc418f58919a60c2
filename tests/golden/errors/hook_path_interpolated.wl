target api { http "http://127.0.0.1:8088" }
param name = "pull"
hook h from "support/${name}.rhai" (request)
run r {
  against api.http
  request h.request
  count 10
}

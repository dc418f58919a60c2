target api { http "http://127.0.0.1:8080" }
run r {
  against api.http
  request GET "/v1/${env("WLRUN_GOLDEN_TENANT")}/query"
  count 1
}

// `up to` below `from`: no step could run.
target svc { http "http://127.0.0.1:8088" }

run a {
  against svc.http
  request GET "/"
  find max rate from 1_000/s up to 500/s where p99 < 20ms
}

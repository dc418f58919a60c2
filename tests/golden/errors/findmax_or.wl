// An SLA is terms joined by `and`: every one must hold.
target svc { http "http://127.0.0.1:8088" }

run a {
  against svc.http
  request GET "/"
  find max rate from 100/s where p99 < 20ms or p90 < 5ms
}

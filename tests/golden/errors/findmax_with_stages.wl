// A search sets each step's rate and length: stages are refused beside it.
target svc { http "http://127.0.0.1:8088" }

run pull {
  against svc.http
  request GET "/"
  stage 10s rate 100/s
  find max rate from 100/s where p99 < 20ms
}

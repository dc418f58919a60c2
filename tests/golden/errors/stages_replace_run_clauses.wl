// Stages set a run's span and load: its own `duration`, `count`, `rate` and `repeat` are
// refused beside them, each where it is written.
target svc { http "http://127.0.0.1:8080" }

run both {
  against svc.http
  request GET "/"
  duration 10s
  rate 100/s
  repeat 2
  stage 10s rate 100/s
}

run counted {
  against svc.http
  request GET "/"
  count 1000
  stage 10s
}

// `duration` ends an ingest phase: sending stops after it, whatever rows are left.
ingest soak {
  into questdb via ilp_http
  rows tsbs.cpu
  duration 10m
}
ingest param_duration {
  into questdb via qwp
  rows tsbs.cpu
  duration soak_time
  workers 4
}

// `probe visible`: the visibility lag, probed while sending.
ingest probed {
  into questdb via ilp_http
  rows tsbs.cpu
  rate 10_000/s
  probe visible every 100ms
}
ingest probed_via {
  into questdb via ilp_http
  rows tsbs.cpu
  probe visible every interval via questdb.pg within 2m
}

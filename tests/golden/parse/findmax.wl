// `find max rate` with every option, in another order than the grammar lists them.
run r {
  find max rate from 100/s up to 10_000/s where p99 < 20ms and error_rate < 0.1% resolution 2% growth 1.5 samples 5_000
}

// On an ingest: rows per second, terms on the visibility lag, and its steps' warm-up.
ingest i {
  probe visible every 100ms
  warmup 2s
  find max rate from 10_000/s where lag_max < 1s samples 50
}

// A phase that runs only in some cells.
ingest load when part == ingest and hosts < 1_000_000 {
  into questdb via protocol
  rows tsbs.cpu
}
run reads when part == queries { against questdb.pg  queries tsbsq.* }
